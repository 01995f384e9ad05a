"""Seed exchange rates so the portal computes NOK equivalents offline, before the first fetch from Norges Bank.

One business day's rates for every currency of the bank's list (spec 2.5) that Norges Bank quotes today,
with Norges Bank's quotation units (per 100 for several currencies). The figures are plausible middle rates
of late 2026, not Norges Bank's published figures: they are marked ``source="seed"`` and dated
SEED_DATE, and any fetched or staff-entered rate of the same or a later date takes precedence
(payments.selectors.exchange_rate_latest). Not quoted by Norges Bank, so not seeded: BGN (withdrawn 2026),
HRK (withdrawn 2023), RUB (quotation suspended in 2022), BYR (replaced by BYN, which the bank does not list)
and every other currency of the list: a payment in those needs a staff-entered rate, or is treated as
needing regulatory reporting (payments.selectors.regulatory_reporting_requirement).
"""

from datetime import UTC, date, datetime
from decimal import Decimal

from django.db import migrations

SEED_DATE = date(2026, 11, 20)
SEED_FETCHED_AT = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)

# currency: (NOK for `unit` units, unit)
SEED_RATES = {
    "AUD": ("6.5800", 1),
    "BDT": ("8.3000", 100),
    "BRL": ("1.8920", 1),
    "CAD": ("7.2300", 1),
    "CHF": ("12.6000", 1),
    "CNY": ("142.5400", 100),
    "CZK": ("48.1900", 100),
    "DKK": ("157.2300", 100),
    "EUR": ("11.7300", 1),
    "GBP": ("13.3100", 1),
    "HKD": ("130.0800", 100),
    "HUF": ("3.0700", 100),
    "IDR": ("0.0608", 100),
    "ILS": ("3.0950", 1),
    "INR": ("11.4100", 100),
    "ISK": ("8.0300", 100),
    "JPY": ("6.5300", 100),
    "KRW": ("0.6979", 100),
    "MMK": ("0.4819", 100),
    "MXN": ("0.5500", 1),
    "MYR": ("2.4270", 1),
    "NZD": ("5.7700", 1),
    "PHP": ("17.2100", 100),
    "PKR": ("3.6000", 100),
    "PLN": ("2.7650", 1),
    "RON": ("2.3045", 1),
    "SEK": ("106.8000", 100),
    "SGD": ("7.7800", 1),
    "THB": ("31.2300", 100),
    "TRY": ("0.2392", 1),
    "TWD": ("32.6500", 100),
    "USD": ("10.1200", 1),
    "XDR": ("13.7600", 1),
    "ZAR": ("0.5850", 1),
}


def seed(apps, schema_editor):
    ExchangeRate = apps.get_model("payments", "ExchangeRate")
    for currency, (rate, unit) in SEED_RATES.items():
        ExchangeRate.objects.get_or_create(
            currency=currency,
            rate_date=SEED_DATE,
            source="seed",
            defaults={"rate": Decimal(rate), "unit": unit, "fetched_at": SEED_FETCHED_AT},
        )


def unseed(apps, schema_editor):
    ExchangeRate = apps.get_model("payments", "ExchangeRate")
    ExchangeRate.objects.filter(source="seed", rate_date=SEED_DATE, updated_by__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("payments", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
