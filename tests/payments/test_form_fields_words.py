"""Small things of the payment form and the connect form (issue 31): the amount gets the decimal keyboard, an
account number without a digit is said to be no account number (not blamed on the missing BIC), and the connect
form's radio groups are fieldsets with their question as the legend."""

from __future__ import annotations

import re

import pytest

from payments.forms import CrossBorderPaymentForm, DomesticPaymentForm
from payments.validators import normalise_bban
from tests.payments.conftest import TODAY
from tests.payments.test_forms import typed

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("form_class", [CrossBorderPaymentForm, DomesticPaymentForm])
def test_the_amount_asks_for_the_decimal_keyboard(form_class):
    html = str(form_class(today=TODAY)["amount"])
    assert 'inputmode="decimal"' in html and 'type="text"' in html


def test_a_word_as_the_account_number_is_said_to_be_no_account_number():
    form = typed(creditor_account="hello", creditor_agent="")

    assert not form.is_valid()
    assert [error.code for error in form.errors.as_data()["creditor_account"]] == ["bban_invalid"]
    assert "not a valid account number" in form.errors["creditor_account"][0]
    assert "creditor_agent" not in form.errors  # the BIC is not blamed


def test_a_foreign_account_number_with_digits_still_needs_its_bic():
    form = typed(creditor_account="12345678", creditor_agent="")
    assert not form.is_valid() and "creditor_account" not in form.errors and "creditor_agent" in form.errors
    assert normalise_bban("AB12 345") == "AB12345"


def test_the_connect_forms_radio_groups_are_fieldsets_with_a_legend(alice_client):
    html = alice_client.get("/bank/connect/").content.decode()

    fieldsets = re.findall(r"<fieldset[^>]*>\s*<legend>([^<]*)", html)
    assert fieldsets == ["Whose accounts?", "What for?"]
    assert 'label for=""' not in html
    help_id = re.search(r'<fieldset[^>]*aria-describedby="([^"]+)"', html).group(1)
    assert f'id="{help_id}"' in html
    assert html.count('type="radio"') == 4


def test_an_unanswered_radio_group_says_so_in_its_fieldset(alice_client):
    html = alice_client.post("/bank/connect/", {"access": "accounts"}).content.decode()
    fieldset = re.search(r"<fieldset[^>]*field-invalid[^>]*>.*?</fieldset>", html, re.S).group(0)
    assert "<legend>Whose accounts?" in fieldset and 'class="field-error"' in fieldset
    assert re.search(r'aria-describedby="[^"]*id_context_error', fieldset)
