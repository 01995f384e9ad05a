"""Property-based fuzzing of payments/validators.py: any text or number, however malformed, either passes or
raises Django's ValidationError with a code, never another exception (which would be a 500 in a form); and the
canonical forms the validators return are stable and valid themselves."""

from __future__ import annotations

import string
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.money import minor_units
from payments import validators

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any text: every Unicode category, surrogates included (a browser may send them as lone escapes), long values.
ANY_TEXT = st.text(st.characters(codec=None), max_size=400) | st.text(max_size=5000)
ACCOUNTISH = st.text(alphabet=string.ascii_letters + string.digits + " .-\u00a0\t\u200b/", max_size=60)

TEXT_VALIDATORS = [
    validators.validate_creditor_name,
    validators.validate_street,
    validators.validate_remittance_information,
    validators.validate_regulatory_reporting_information,
    validators.validate_processable_text,
    validators.validate_iban,
    validators.validate_bban,
    validators.validate_bic,
    validators.validate_currency,
    validators.validate_country,
    validators.validate_purpose_code,
    validators.validate_regulatory_reporting_code,
    validators.normalise_account_number,
]


def _passes_or_refuses(function, *args) -> object:
    try:
        return function(*args)
    except ValidationError as error:
        assert all(e.code for e in error.error_list), f"{function.__name__}: a ValidationError without a code"
        for e in error.error_list:
            str(e.message % e.params if e.params else e.message)  # the message renders with its parameters
        return error


@pytest.mark.parametrize("validator", TEXT_VALIDATORS, ids=lambda f: f.__name__)
@FUZZ
@given(value=ANY_TEXT | ACCOUNTISH)
@example(value="\x00")
@example(value="NO93 8601 1117 947\ud800")
@example(value="A" * 1_000_000)
def test_text_validators_only_ever_raise_validation_error(validator, value):
    _passes_or_refuses(validator, value)


@FUZZ
@given(value=ANY_TEXT)
def test_accepted_text_contains_no_unprocessable_character(value):
    if not isinstance(_passes_or_refuses(validators.validate_processable_text, value), ValidationError):
        assert validators.unprocessable_characters(value) == []
        assert all(ord(char) <= 0xFFFF for char in value)  # the Basic Multilingual Plane only


@FUZZ
@given(value=ACCOUNTISH | st.from_regex(r"\A[A-Z]{2}[0-9]{2}[A-Z0-9 ]{8,30}\Z"))
def test_canonical_account_numbers_are_stable(value):
    result = _passes_or_refuses(validators.normalise_account_number, value)
    if isinstance(result, ValidationError):
        return
    kind, compact = result
    assert compact == compact.upper() and " " not in compact
    assert validators.normalise_account_number(compact) == (kind, compact)  # idempotent


@FUZZ
@given(value=st.text(alphabet=string.ascii_letters + string.digits + " \t", max_size=20))
def test_canonical_bics_are_stable(value):
    result = _passes_or_refuses(validators.normalise_bic, value)
    if not isinstance(result, ValidationError):
        assert len(result) in (8, 11) and validators.normalise_bic(result) == result


AMOUNTS = st.decimals(allow_nan=True, allow_infinity=True) | st.decimals(
    min_value=Decimal("-1e30"), max_value=Decimal("1e30"), places=7
)
CURRENCIES = st.sampled_from(["NOK", "EUR", "JPY", "KWD", "USD", "XXX", "", "nok", "EURO"])


@FUZZ
@given(amount=AMOUNTS, currency=CURRENCIES)
@example(amount=Decimal("1E+100000"), currency="EUR")
@example(amount=Decimal("1E-100000"), currency="EUR")
@example(amount=Decimal("-0"), currency="NOK")
@example(amount=Decimal("sNaN"), currency="NOK")
def test_amounts_are_accepted_only_within_the_contract(amount, currency):
    result = _passes_or_refuses(validators.validate_amount, amount, currency)
    if isinstance(result, ValidationError):
        return
    # Accepted: positive, finite, at most 13 integer digits, and no more decimals than the currency has.
    assert amount.is_finite() and amount > 0
    assert amount < Decimal("1e13")
    assert amount == amount.quantize(Decimal(1).scaleb(-minor_units(currency)))


@FUZZ
@given(value=st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=20), st.binary(max_size=10)))
def test_non_decimal_amounts_are_refused_cleanly(value):
    with pytest.raises(ValidationError) as refused:
        validators.validate_amount(value, "NOK")
    assert refused.value.code == "amount_invalid"
