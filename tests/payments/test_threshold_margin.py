"""The regulatory threshold for amounts in other currencies: the newest rate with a margin that grows with its age
(settings REGULATORY_MARGIN, _PER_DAY, _SEED, _MAX and EXCHANGE_RATE_MAX_AGE_DAYS), so that only an amount that
could really reach 100 000 NOK asks for reporting, and a missing or very old rate still always asks."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from payments.models import ExchangeRate, ExchangeRateSource
from payments.selectors import (
    ReportingReason,
    regulatory_margin_for,
    regulatory_reporting_requirement,
    reporting_bases,
)
from tests.payments.conftest import TODAY, make_rate

pytestmark = pytest.mark.django_db

LATER = TODAY + timedelta(days=8)  # the rates below are 8 days old on this day


def decide(amount: str, currency: str = "EUR", on=LATER):
    return regulatory_reporting_requirement(amount=Decimal(amount), currency=currency, on_date=on)


@pytest.mark.parametrize(
    ("age", "source", "margin"),
    [
        (0, ExchangeRateSource.NORGES_BANK, "0.05"),
        (1, ExchangeRateSource.NORGES_BANK, "0.055"),
        (8, ExchangeRateSource.NORGES_BANK, "0.09"),
        (8, ExchangeRateSource.MANUAL, "0.09"),
        (8, ExchangeRateSource.SEED, "0.14"),
        (20, ExchangeRateSource.NORGES_BANK, "0.15"),  # capped
        (30, ExchangeRateSource.NORGES_BANK, "0.15"),
        (31, ExchangeRateSource.NORGES_BANK, None),  # too old to use at all
    ],
)
def test_the_margin_grows_with_the_age_of_the_rate_and_is_capped(age, source, margin):
    got = regulatory_margin_for(rate_date=TODAY, source=source, on_date=TODAY + timedelta(days=age))
    assert got == (Decimal(margin) if margin is not None else None)


def test_ten_euros_with_a_rate_several_days_old_ask_for_nothing():
    make_rate("EUR", "11.50")
    decision = decide("10")
    assert (decision.required, decision.reason) == (False, ReportingReason.EQUIVALENT_BELOW)
    assert (decision.rate_age_days, decision.margin) == (8, Decimal("0.09"))
    assert decision.equivalent.amount_nok == Decimal("115.00") and decision.equivalent.rate_date == TODAY


def test_an_amount_near_the_threshold_with_an_old_rate_asks():
    make_rate("EUR", "11.50")
    # 8 000 EUR is 92 000 NOK: below 95 000 with a rate of the day, but the rate is 8 days old (9 %: 91 000).
    assert not decide("8000", on=TODAY).required
    decision = decide("8000")
    assert (decision.required, decision.reason) == (True, ReportingReason.EQUIVALENT_NEAR_OR_ABOVE)
    assert decision.applied_threshold_nok == Decimal("91000.00")
    assert not decide("7900").required  # 90 850 NOK: could not reach 100 000 even 9 % off


def test_a_very_old_rate_or_none_always_asks():
    make_rate("EUR", "11.50", on=TODAY - timedelta(days=31))
    ExchangeRate.objects.filter(currency="EUR", source=ExchangeRateSource.SEED).delete()
    decision = decide("10", on=TODAY)
    assert (decision.required, decision.reason) == (True, ReportingReason.STALE_RATE)
    decision = decide("10", currency="GHS")  # no rate at all
    assert (decision.required, decision.reason, decision.equivalent) == (True, ReportingReason.NO_RATE, None)


def test_the_seed_alone_decides_with_its_larger_margin_until_it_is_too_old():
    """Under `make run` without a fetch: only the seed (dated TODAY); 10 EUR is plainly below."""
    decision = decide("10")
    assert (decision.required, decision.equivalent.source, decision.margin) == (
        False,
        ExchangeRateSource.SEED,
        Decimal("0.14"),
    )
    assert decide("7400").required  # 86 802 NOK at the seed's 11.73: within 14 %
    assert decide("10", on=TODAY + timedelta(days=31)).reason == ReportingReason.STALE_RATE


def test_the_form_s_basis_per_currency(django_assert_num_queries):
    make_rate("EUR", "11.50")
    make_rate("JPY", "6.50", unit=100)
    with django_assert_num_queries(1):
        bases = reporting_bases(on_date=LATER, currencies=["NOK", "EUR", "JPY", "GHS", "USD"])
    assert bases["NOK"].from_amount == Decimal("100000")
    eur = bases["EUR"]
    assert (eur.rate.rate, eur.age_days, eur.margin, eur.from_amount) == (
        Decimal("11.50"),
        8,
        Decimal("0.09"),
        7914,
    )
    assert decide("7914").required and not decide("7913").required  # the amount said is where it starts
    assert bases["JPY"].from_amount == 1400000  # 91 000 NOK at 6.50 per 100
    assert (bases["GHS"].rate, bases["GHS"].from_amount) == (None, None)  # always asked
    assert bases["USD"].rate.source == ExchangeRateSource.SEED and bases["USD"].margin == Decimal("0.14")
