"""Property-based tests of amount validation (spec 2.2 and 8): decimal strings, precision 18 scale 5, and the
ISO 4217 minor units of the currency (with the documented table for listed codes ISO does not define)."""

from __future__ import annotations

import json
from decimal import Decimal

import iso4217
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bank_simulator.pis import tables
from bank_simulator.pis.validation import parse_amount
from tests.bank_simulator.conftest import PRIVATE_1
from tests.bank_simulator.pis.helpers import account, body, identify, initiate, pin_clock

CURRENCIES = sorted(tables.CURRENCIES)
digits = st.text(alphabet="0123456789", min_size=1, max_size=16)


def expected_units(currency: str) -> int:
    if currency in tables.MINOR_UNITS_NOT_IN_ISO:
        return tables.MINOR_UNITS_NOT_IN_ISO[currency]
    exponent = iso4217.Currency(currency).exponent
    return tables.SCALE if exponent is None else exponent


def test_every_listed_currency_has_minor_units_and_a_rate():
    for currency in CURRENCIES:
        assert 0 <= tables.minor_units(currency) <= tables.SCALE
        assert tables.NOK_PER_UNIT[currency] > 0
    assert set(tables.NOK_PER_UNIT) == tables.CURRENCIES
    # The documented table covers exactly the listed codes the iso4217 package does not define.
    undefined = set()
    for currency in CURRENCIES:
        try:
            iso4217.Currency(currency)
        except ValueError:
            undefined.add(currency)
    assert undefined == set(tables.MINOR_UNITS_NOT_IN_ISO)


@given(
    currency=st.sampled_from(CURRENCIES),
    whole=st.integers(min_value=0, max_value=10**15),
    fraction=st.text(alphabet="0123456789", max_size=7),
)
def test_fraction_digits_accepted_exactly_up_to_the_minor_units(currency, whole, fraction):
    raw = f"{whole}.{fraction}" if fraction else str(whole)
    value, reason = parse_amount(raw, currency)
    units = expected_units(currency)
    fits = len(fraction) <= units and len(str(whole)) <= tables.PRECISION - tables.SCALE
    positive = Decimal(raw) > 0
    if fits and positive:
        assert reason is None and value == Decimal(raw)
    else:
        assert value is None and reason


@given(raw=st.one_of(st.text(max_size=12), st.floats(allow_nan=True), st.integers(), st.none()))
def test_anything_but_a_plain_decimal_string_is_refused(raw):
    value, reason = parse_amount(raw, "NOK")
    plain = isinstance(raw, str) and raw.count(".") <= 1 and raw.replace(".", "", 1).isascii()
    plain = plain and raw.replace(".", "", 1).isdigit() and not raw.startswith(".") and not raw.endswith(".")
    if value is not None:
        assert plain and Decimal(raw) > 0
    else:
        assert reason


@given(whole=digits, fraction=st.text(alphabet="0123456789", min_size=0, max_size=6))
def test_contract_precision_18_scale_5(whole, fraction):
    whole = whole.lstrip("0") or "0"
    raw = f"{whole}.{fraction}" if fraction else whole
    value, _reason = parse_amount(raw, None)  # no currency: the contract limits only
    ok = len(whole) <= 13 and len(fraction) <= 5 and Decimal(raw) > 0
    assert (value is not None) == ok


@pytest.fixture
def payer_and_account(bank):
    pin_clock()
    identify(bank, PRIVATE_1)
    return bank, account(PRIVATE_1, "Brukskonto")


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    currency=st.sampled_from(CURRENCIES),
    whole=st.integers(min_value=1, max_value=9999),
    fraction=st.text(alphabet="0123456789", max_size=4),
)
def test_signed_initiations_apply_the_minor_units(payer_and_account, currency, whole, fraction):
    """The same property through real signed requests: 201 or 400 FORMAT_ERROR on instructedAmount.amount."""
    bank, debtor = payer_and_account
    raw = f"{whole}.{fraction}" if fraction else str(whole)
    data = body(
        debtor,
        instructedAmount={"amount": raw, "currency": currency},
        regulatoryReportingCode="29",
        regulatoryReportingInformation="Consulting services",
    )
    response = initiate(bank, data, query="?allowLogicalDuplicate=true")
    if len(fraction) <= expected_units(currency):
        assert response.status_code == 201, (raw, currency, response.content)
    else:
        assert response.status_code == 400
        messages = json.loads(response.content)["tppMessages"]
        assert [(m["code"], m["path"]) for m in messages] == [("FORMAT_ERROR", "instructedAmount.amount")]
