"""The currency list of the payment form: the currencies people use first, then the other current ISO 4217 codes
by code, each with its name in the user's language; the codes ISO 4217 no longer (or never) lists are not
offered, and every code offered is one the bank accepts (bank_spec, shared with the sandbox bank)."""

from __future__ import annotations

import pytest
from babel.numbers import get_currency_name
from django.utils import translation

import bank_spec
from bank_simulator.pis import tables
from payments.forms import CrossBorderPaymentForm
from payments.forms_fields import currency_choices, is_current_iso_currency, offered_currencies
from payments.spec import CURRENCIES
from tests.payments.conftest import TODAY
from tests.payments.test_forms import typed

WITHDRAWN = "ANG BGN BYR CUC GGP HRK IMP JEP MRO SLL SPL STD TVD VEF ZWD".split()


def groups() -> list[tuple[str, list[str]]]:
    return [(str(label), [code for code, _name in options]) for label, options in currency_choices()]


def test_the_most_used_come_first_in_this_order_then_the_rest_by_code():
    (first_label, first), (other_label, other) = groups()
    assert first == ["NOK", "EUR", "USD", "SEK", "DKK", "GBP"]
    assert (first_label, other_label) == ("Most used", "Other currencies")
    assert other == sorted(other) and other[:3] == ["AED", "AFN", "ALL"]
    assert not set(first) & set(other)


def test_withdrawn_and_unofficial_codes_are_not_offered():
    offered = offered_currencies()
    assert not set(WITHDRAWN) & set(offered)
    assert all(is_current_iso_currency(code) for code in offered)
    assert {"BYR", "HRK", "VEF", "ZWD"}.isdisjoint(offered)
    # Nothing the bank accepts and ISO lists today is lost.
    assert sorted(offered) == sorted(code for code in CURRENCIES if code not in WITHDRAWN)
    assert len(offered) == len(set(offered))


def test_every_code_offered_is_one_the_bank_and_the_sandbox_bank_accept():
    assert set(offered_currencies()) <= bank_spec.CURRENCY_SET
    assert tables.CURRENCIES == bank_spec.CURRENCY_SET  # the sandbox bank reads the same list


@pytest.mark.parametrize("language", ["en", "nb"])
def test_every_currency_offered_has_a_name_in_the_users_language(language):
    with translation.override(language):
        options = [option for _label, group in currency_choices() for option in group]
    for code, label in options:
        assert label.startswith(f"{code} - ") and len(label) > len(f"{code} - "), label
    if language == "nb":
        assert dict(options)["SEK"] == f"SEK - {get_currency_name('SEK', locale='nb')}"


@pytest.mark.django_db
def test_the_form_offers_them_grouped_and_refuses_a_withdrawn_code_typed_in():
    form = CrossBorderPaymentForm(today=TODAY)
    html = str(form["currency"])
    at = [html.index(f'value="{code}"') for code in ("NOK", "GBP", "AED", "ZAR")]
    assert at == sorted(at)
    assert '<optgroup label="Most used">' in html and 'value="HRK"' not in html
    assert not form.fields["currency"].valid_value("XYZ")
    with translation.override("nb"):
        labels = flat(CrossBorderPaymentForm(today=TODAY).fields["currency"].choices)
        assert labels["EUR"] == "EUR - euro" and labels["NOK"] == "NOK - norske kroner"


@pytest.mark.django_db
def test_a_draft_in_a_withdrawn_currency_keeps_it_when_edited():
    form = typed(currency="HRK", creditor_account_currency="")
    html = str(form["currency"])
    assert 'value="HRK" selected' in html and "Withdrawn codes" in html
    assert form.fields["currency"].valid_value("HRK")
    assert "HRK" not in flat(CrossBorderPaymentForm(today=TODAY).fields["currency"].choices)


def flat(choices) -> dict[str, str]:
    return {code: label for _group, options in choices for code, label in options}
