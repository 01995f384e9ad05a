"""The currency list of the payment form: the currencies people use first, then the rest by code, and the codes
ISO 4217 no longer (or never) lists last, in a group of their own."""

from __future__ import annotations

import pytest
from django.utils import translation

from payments.forms import CrossBorderPaymentForm
from payments.forms_fields import currency_choices, is_current_iso_currency
from payments.spec import CURRENCIES
from tests.payments.conftest import TODAY


def groups() -> list[tuple[str, list[str]]]:
    return [(str(label), [code for code, _name in options]) for label, options in currency_choices()]


def test_the_most_used_come_first_in_this_order():
    (first_label, first), (other_label, other), (last_label, _last) = groups()
    assert first == ["NOK", "EUR", "USD", "SEK", "DKK", "GBP"]
    assert (first_label, other_label) == ("Most used", "Other currencies")
    assert last_label == "Withdrawn or unofficial codes"
    assert other == sorted(other) and other[:3] == ["AED", "AFN", "ALL"]
    assert not set(first) & set(other)


def test_withdrawn_and_unofficial_codes_are_last_and_nothing_is_lost():
    *_, (_label, last) = groups()
    assert last == "ANG BGN BYR CUC GGP HRK IMP JEP MRO SLL SPL STD TVD VEF ZWD".split()
    assert not any(is_current_iso_currency(code) for code in last)
    every = [code for _label, codes in groups() for code in codes]
    assert sorted(every) == sorted(CURRENCIES) and len(every) == len(set(every))


@pytest.mark.django_db
def test_the_form_offers_them_grouped_and_still_accepts_a_withdrawn_code():
    form = CrossBorderPaymentForm(today=TODAY)
    html = str(form["currency"])
    at = [html.index(f'value="{code}"') for code in ("NOK", "GBP", "AED", "HRK")]
    assert at == sorted(at)
    assert '<optgroup label="Most used">' in html
    assert form.fields["currency"].valid_value("HRK") and not form.fields["currency"].valid_value("XYZ")
    with translation.override("nb"):
        labels = flat(CrossBorderPaymentForm(today=TODAY).fields["currency"].choices)
        assert labels["EUR"] == "EUR - euro" and labels["NOK"] == "NOK - norske kroner"


def flat(choices) -> dict[str, str]:
    return {code: label for _group, options in choices for code, label in options}
