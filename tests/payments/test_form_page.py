"""The payment form as the page draws it: an error summary on top, each message once, lengths counted not cut."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from django.utils import translation

from tests.payments.test_forms import typed

pytestmark = pytest.mark.django_db

PAGE = Template(
    "{% include 'includes/form_errors.html' %}"
    "{% for field in form %}{% include 'includes/field.html' %}{% endfor %}"
)


@pytest.fixture(autouse=True)
def _english():
    with translation.override("en"):
        yield


def render(form) -> str:
    return PAGE.render(Context({"form": form}))


def summary_of(html: str) -> str:
    match = re.search(r'<div class="error-summary" data-error-summary>.*?</ul>', html, re.S)
    assert match, "no error summary"
    return match.group(0)


def test_a_form_with_errors_starts_with_a_summary_linking_to_each_field():
    form = typed(creditor_name="", amount="abc", creditor_country="")
    assert not form.is_valid()
    html = render(form)
    summary = summary_of(html)
    assert html.index("error-summary") < html.index('class="field')
    assert 'role="alert"' in summary and "There is a problem" in summary
    links = re.findall(r'<a href="#([^"]+)">', summary)
    assert links == ["id_amount", "id_creditor_name", "id_creditor_country"]  # in the order of the page
    for field_id in links:
        assert f'id="{field_id}"' in html  # each link reaches its field
    # The message is beside its field too, described by it, and not an alert of its own.
    assert re.search(r'<p class="field-error" id="id_creditor_name_error">.*Enter the name of the person', html)
    assert re.search(
        r'<input[^>]*aria-describedby="[^"]*id_creditor_name_error[^"]*"[^>]*id="id_creditor_name"', html
    )
    assert html.count('role="alert"') == 1


def test_no_summary_without_errors_and_no_summary_for_an_unbound_form():
    form = typed()
    assert form.is_valid(), form.errors
    assert "error-summary" not in render(form)


def test_the_regulatory_reporting_explanation_is_shown_once():
    form = typed(regulatory_reporting_code="", regulatory_reporting_information="")
    assert not form.is_valid()
    html = render(form)
    explanation = "must be reported to the tax authority"
    assert html.count(explanation) == 2  # once in the summary, once beside the code
    assert form.errors["regulatory_reporting_information"] == [
        "Describe the purpose of the payment for the tax authority."
    ]
    summary = summary_of(html)
    assert summary.count(explanation) == 1
    # Only the information missing: the explanation goes to it.
    form = typed(regulatory_reporting_information="")
    assert explanation in form.errors["regulatory_reporting_information"][0]


def test_limited_text_fields_are_counted_not_cut():
    form = typed(creditor_name="N" * 71)
    html = render(form)
    name_input = re.search(r'<input[^>]*name="creditor_name"[^>]*>', html).group(0)
    assert "maxlength" not in name_input.replace("data-maxlength", "")  # the browser cuts nothing
    assert 'data-maxlength="70"' in name_input
    assert "id_creditor_name_count" in name_input  # the hint is part of the field's description
    assert 'value="' + "N" * 71 + '"' in name_input  # what was typed is kept
    hint = re.search(r'<p class="help character-count" id="id_creditor_name_count"[^>]*>([^<]*)</p>', html)
    assert hint.group(1) == "You can enter up to 70 characters"
    assert 'data-remaining-other="You have %(count)s characters remaining"' in hint.group(0)
    assert 'data-over-one="You have %(count)s character too many"' in hint.group(0)
    # The server refuses it with a clear message beside the field.
    assert form.errors["creditor_name"] == ["Use at most 70 characters (this has 71)."]
    for name, limit in (("remittance_information", 129), ("creditor_street", 70), ("creditor_city", 35)):
        field_input = re.search(rf'<input[^>]*name="{name}"[^>]*>', html).group(0)
        assert f'data-maxlength="{limit}"' in field_input, field_input
    # Account numbers and codes are not free text: no count.
    assert "id_creditor_account_count" not in html


def test_the_count_speaks_bokmaal():
    with translation.override("nb"):
        html = render(typed())
    hint = re.search(r'<p class="help character-count" id="id_creditor_name_count"[^>]*>([^<]*)</p>', html)
    assert hint.group(1) == "Du kan skrive opptil 70 tegn"
    assert 'data-remaining-other="Du har %(count)s tegn igjen"' in hint.group(0)
    assert 'data-over-other="Du har %(count)s tegn for mye"' in hint.group(0)


def test_the_payment_page_starts_its_form_with_the_summary_and_loads_the_scripts(alice_client, alice):
    from tests.bank_factories import BankAccountFactory, BankConnectionFactory

    BankAccountFactory(connection=BankConnectionFactory(user=alice))
    response = alice_client.post("/payments/new/", {"amount": "10", "currency": "NOK", "creditor_name": "N" * 71})

    html = response.content.decode()
    form = html[html.index('<form method="post" novalidate>') :]
    assert form.index('<div class="error-summary" data-error-summary>') < form.index('class="field')
    assert '<a href="#id_creditor_name">Use at most 70 characters (this has 71).</a>' in form
    assert 'value="' + "N" * 71 + '"' in form  # kept as typed, for the user to shorten
    assert "js/error-summary.js" in html and "js/character-count.js" in html
