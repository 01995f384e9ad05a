"""Stored rates: the seed, the latest-rate lookup, nok_equivalent, the threshold with its margin, the upsert."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from payments.models import ExchangeRate, ExchangeRateSource
from payments.rates import FetchedRate
from payments.selectors import (
    ExchangeRateUnavailable,
    ReportingReason,
    exchange_rate_latest,
    nok_equivalent,
    regulatory_reporting_requirement,
)
from payments.services.exchange_rates import exchange_rates_store
from payments.spec import CURRENCY_SET
from tests.payments.conftest import TODAY, make_rate

pytestmark = pytest.mark.django_db

# Currencies of the bank's list that Norges Bank quotes (its EXR dataflow, late 2026).
NORGES_BANK_QUOTED = {
    "AUD", "BDT", "BRL", "CAD", "CHF", "CNY", "CZK", "DKK", "EUR", "GBP", "HKD", "HUF", "IDR", "ILS", "INR",
    "ISK", "JPY", "KRW", "MMK", "MXN", "MYR", "NZD", "PHP", "PKR", "PLN", "RON", "SEK", "SGD", "THB", "TRY",
    "TWD", "USD", "XDR", "ZAR",
}  # fmt: skip


def test_the_seed_covers_every_listed_currency_norges_bank_quotes():
    seeded = ExchangeRate.objects.filter(source=ExchangeRateSource.SEED)
    assert set(seeded.values_list("currency", flat=True)) == NORGES_BANK_QUOTED
    assert NORGES_BANK_QUOTED <= CURRENCY_SET
    assert set(seeded.values_list("rate_date", flat=True)) == {date(2026, 11, 20)}
    jpy = seeded.get(currency="JPY")
    assert (jpy.unit, jpy.nok_per_unit < 1) == (100, True)
    # Plausible: every seeded NOK-per-unit figure is within a sane band of the euro's.
    eur = seeded.get(currency="EUR").nok_per_unit
    for rate in seeded:
        assert Decimal("0.0001") < rate.nok_per_unit < eur * 2, rate


def test_one_rate_per_currency_day_and_source():
    make_rate("USD", "10.00")
    with pytest.raises(IntegrityError), transaction.atomic():
        make_rate("USD", "10.50")
    make_rate("USD", "10.50", source=ExchangeRateSource.MANUAL)  # another source may have its own


def test_latest_rate_on_or_before_the_date():
    # KES: not seeded, so only these rows exist.
    make_rate("KES", "0.0780", on=date(2026, 11, 17))
    make_rate("KES", "0.0790", on=date(2026, 11, 19))
    make_rate("KES", "0.0810", on=date(2026, 11, 23))  # after the date asked for
    assert exchange_rate_latest(currency="KES", on_date=date(2026, 11, 21)).rate == Decimal("0.0790")
    assert exchange_rate_latest(currency="KES", on_date=date(2026, 11, 19)).rate == Decimal("0.0790")
    assert exchange_rate_latest(currency="KES", on_date=date(2026, 11, 18)).rate == Decimal("0.0780")
    assert exchange_rate_latest(currency="KES", on_date=date(2026, 11, 16)) is None


def test_on_the_same_day_staff_beats_norges_bank_beats_the_seed():
    day = date(2026, 11, 20)  # the seed's date: the seed has USD 10.12
    assert exchange_rate_latest(currency="USD", on_date=day).source == ExchangeRateSource.SEED
    make_rate("USD", "10.20", on=day)
    assert exchange_rate_latest(currency="USD", on_date=day).rate == Decimal("10.20")
    make_rate("USD", "10.40", on=day, source=ExchangeRateSource.MANUAL)
    assert exchange_rate_latest(currency="USD", on_date=day).rate == Decimal("10.40")


def test_nok_equivalent_uses_the_rate_and_its_unit():
    make_rate("EUR", "11.50")
    make_rate("JPY", "6.50", unit=100)
    eur = nok_equivalent(Decimal("1000.00"), "EUR", on_date=TODAY)
    assert (eur.amount_nok, eur.rate, eur.unit, eur.rate_date) == (Decimal("11500.00"), Decimal("11.50"), 1, TODAY)
    assert nok_equivalent(Decimal("1500000"), "JPY", on_date=TODAY).amount_nok == Decimal("97500.00")
    # Rounded half-up to øre: 0.01 EUR * 11.50 = 0.115 -> 0.12
    assert nok_equivalent(Decimal("0.01"), "EUR", on_date=TODAY).amount_nok == Decimal("0.12")


def test_nok_equivalent_of_nok_is_itself():
    assert nok_equivalent(Decimal("100000"), "NOK", on_date=TODAY).amount_nok == Decimal("100000.00")


def test_nok_equivalent_without_a_rate_says_so():
    with pytest.raises(ExchangeRateUnavailable, match=r"no exchange rate for GHS on or before 2026-11-20"):
        nok_equivalent(Decimal("10"), "GHS", on_date=TODAY)
    with pytest.raises(ExchangeRateUnavailable):  # the seed is dated 2026-11-20: nothing before it
        nok_equivalent(Decimal("10"), "EUR", on_date=date(2026, 11, 19))


def test_nok_equivalent_refuses_floats():
    with pytest.raises(TypeError):
        nok_equivalent(100.0, "NOK", on_date=TODAY)


# --- the threshold ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("amount", "required"),
    [("99999.99", False), ("100000", True), ("100000.00", True), ("250000", True), ("95000", False)],
)
def test_nok_threshold_is_exactly_100000(amount, required):
    decision = regulatory_reporting_requirement(amount=Decimal(amount), currency="NOK", on_date=TODAY)
    assert decision.required is required
    assert decision.applied_threshold_nok == Decimal("100000")


@pytest.mark.parametrize(
    ("eur", "required", "reason"),
    [
        ("8260.86", False, ReportingReason.EQUIVALENT_BELOW),  # 94 999.89 NOK
        ("8260.87", True, ReportingReason.EQUIVALENT_NEAR_OR_ABOVE),  # 95 000.01 NOK: inside the margin
        ("8695.65", True, ReportingReason.EQUIVALENT_NEAR_OR_ABOVE),  # 99 999.98 NOK
        ("9000.00", True, ReportingReason.EQUIVALENT_NEAR_OR_ABOVE),  # 103 500 NOK
    ],
)
def test_other_currencies_use_a_margin_below_the_threshold(eur_rate, eur, required, reason):
    decision = regulatory_reporting_requirement(amount=Decimal(eur), currency="EUR", on_date=TODAY)
    assert (decision.required, decision.reason) == (required, reason)
    assert decision.applied_threshold_nok == Decimal("95000.00")


def test_the_margin_and_threshold_are_settings(settings, eur_rate):
    settings.REGULATORY_MARGIN = Decimal("0.10")
    decision = regulatory_reporting_requirement(amount=Decimal("7900"), currency="EUR", on_date=TODAY)
    assert (decision.required, decision.applied_threshold_nok) == (True, Decimal("90000.00"))  # 90 850 NOK
    settings.REGULATORY_MARGIN = Decimal("0")
    settings.REGULATORY_THRESHOLD_NOK = Decimal("50000")
    assert regulatory_reporting_requirement(
        amount=Decimal("4348"), currency="EUR", on_date=TODAY
    ).required  # 50 002
    assert not regulatory_reporting_requirement(amount=Decimal("4347"), currency="EUR", on_date=TODAY).required
    assert regulatory_reporting_requirement(amount=Decimal("50000"), currency="NOK", on_date=TODAY).required
    assert not regulatory_reporting_requirement(amount=Decimal("49999.99"), currency="NOK", on_date=TODAY).required


def test_without_a_rate_reporting_is_required():
    decision = regulatory_reporting_requirement(amount=Decimal("1"), currency="GHS", on_date=TODAY)
    assert (decision.required, decision.reason, decision.equivalent) == (True, ReportingReason.NO_RATE, None)


def test_with_only_a_stale_rate_reporting_is_required(settings):
    make_rate("USD", "10.00", on=TODAY)
    on = TODAY + timedelta(days=31)
    decision = regulatory_reporting_requirement(amount=Decimal("10"), currency="USD", on_date=on)
    assert (decision.required, decision.reason) == (True, ReportingReason.STALE_RATE)
    settings.EXCHANGE_RATE_MAX_AGE_DAYS = 40
    decision = regulatory_reporting_requirement(amount=Decimal("10"), currency="USD", on_date=on)
    assert (decision.required, decision.reason) == (False, ReportingReason.EQUIVALENT_BELOW)


# --- storing fetched rates ---------------------------------------------------------------------------------------
def fetched(currency, rate, *, on=TODAY, unit=1):
    return FetchedRate(currency=currency, rate_date=on, rate=Decimal(rate), unit=unit)


def test_store_creates_updates_and_leaves_unchanged():
    first = exchange_rates_store(rates=[fetched("USD", "10.10"), fetched("JPY", "6.52", unit=100)])
    assert (first.created, first.updated, first.unchanged) == (2, 0, 0)
    second = exchange_rates_store(rates=[fetched("USD", "10.15"), fetched("JPY", "6.52", unit=100)])
    assert (second.created, second.updated, second.unchanged) == (0, 1, 1)
    usd = ExchangeRate.objects.get(currency="USD", rate_date=TODAY, source=ExchangeRateSource.NORGES_BANK)
    assert usd.rate == Decimal("10.15")
    # The seed row of the same day is a different source and stays.
    assert ExchangeRate.objects.get(
        currency="USD", rate_date=TODAY, source=ExchangeRateSource.SEED
    ).rate == Decimal("10.12")


def test_store_never_overwrites_a_rate_staff_edited(charlie):
    row = make_rate("USD", "10.10")
    row.rate, row.updated_by = Decimal("10.25"), charlie
    row.save()
    summary = exchange_rates_store(rates=[fetched("USD", "10.11")])
    assert summary.kept_staff_edits == [("USD", "2026-11-20")]
    row.refresh_from_db()
    assert row.rate == Decimal("10.25")


def test_a_seed_rate_decides_with_a_larger_margin():
    """The seed rows are plausible figures, not Norges Bank's: they count, with REGULATORY_MARGIN_SEED more."""
    assert exchange_rate_latest(currency="USD", on_date=TODAY).source == ExchangeRateSource.SEED
    decision = regulatory_reporting_requirement(amount=Decimal("1"), currency="USD", on_date=TODAY)
    assert (decision.required, decision.reason) == (False, ReportingReason.EQUIVALENT_BELOW)
    assert decision.equivalent is not None and decision.equivalent.source == ExchangeRateSource.SEED
    assert (decision.margin, decision.applied_threshold_nok) == (Decimal("0.10"), Decimal("90000.00"))
    # 9 000 USD is 91 080 NOK at the seed's 10.12: asked, where a published rate of the day would not ask.
    assert regulatory_reporting_requirement(amount=Decimal("9000"), currency="USD", on_date=TODAY).required
    make_rate("USD", "10.12", on=TODAY)
    assert not regulatory_reporting_requirement(amount=Decimal("9000"), currency="USD", on_date=TODAY).required
    # nok_equivalent leaves the seed out when only published rates count.
    with pytest.raises(ExchangeRateUnavailable):
        nok_equivalent(Decimal("1"), "JPY", on_date=TODAY, published_only=True)


def test_an_older_published_rate_decides_over_a_newer_seed_rate():
    make_rate("USD", "10.00", on=TODAY - timedelta(days=2))
    decision = regulatory_reporting_requirement(amount=Decimal("100"), currency="USD", on_date=TODAY)
    assert (decision.required, decision.reason) == (False, ReportingReason.EQUIVALENT_BELOW)
    assert (decision.equivalent.source, decision.equivalent.amount_nok) == (
        ExchangeRateSource.NORGES_BANK,
        Decimal("1000.00"),
    )
