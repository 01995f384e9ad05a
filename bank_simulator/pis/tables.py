"""The bank's payment tables: currency and country lists, codes, ISO 4217 minor units and its fixed rates.

Lists are exactly those of docs/bank-interface.md, spec 2.1, 2.5 and 2.6, read from ``bank_spec``. Minor units come
from the ``iso4217`` package; for the listed codes that ISO 4217 no longer (or never) defined,
``MINOR_UNITS_NOT_IN_ISO`` states what the simulator uses and why. ``NOK_PER_UNIT`` is the simulator's own fixed
rates table (NOK for one unit), used for the 100 000 NOK regulatory threshold, currency conversion and fees. The
figures are plausible middle rates, not market data, and never change while the simulator runs, so tests and demos
get the same answer every time."""

from __future__ import annotations

import functools
from decimal import ROUND_HALF_UP, Decimal

import iso4217

import bank_spec

# The bank's lists (spec 2.1, 2.5, 2.6) are bank_spec's, the one module the sandbox bank, the portal and the tests
# read; here they are sets, for the checks.
CROSS_BORDER = bank_spec.CROSS_BORDER
DOMESTIC = bank_spec.DOMESTIC
PRODUCTS = bank_spec.PRODUCTS
CURRENCIES: frozenset[str] = bank_spec.CURRENCY_SET
COUNTRIES: frozenset[str] = bank_spec.COUNTRY_SET
# purposeCode: the bank's subset of the ISO 20022 external purpose codes
PURPOSE_CODES: frozenset[str] = frozenset(bank_spec.PURPOSE_CODES)
# regulatoryReportingCode: the tax authority's codes for payment type (docs/bank-interface.md, reference 7)
REGULATORY_CODES: frozenset[str] = frozenset(bank_spec.REGULATORY_CODES)
REGULATORY_THRESHOLD_NOK = Decimal("100000")
# Creditor accounts (Norwegian account numbers) of billers that collect by KID: a domestic payment to one of them
# without a KID is 400 KID_MISSING (the sandbox's stand-in for the bank's register of KID agreements).
KID_CREDITOR_ACCOUNTS: dict[str, str] = {"15030000002": "Fjordkraft AS (sandbox)"}

# Contract precision of amounts (spec 2.2): 18 digits, of which at most 5 after the decimal point.
PRECISION = 18
SCALE = 5

# Listed codes the iso4217 package does not define (withdrawn from ISO 4217, or never in it), with the minor
# units ISO 4217 gave them while they were current, or those of the currency they are tied to.
MINOR_UNITS_NOT_IN_ISO: dict[str, int] = {
    "ANG": 2,  # Netherlands Antillean guilder, replaced by XCG in 2025; had 2
    "BGN": 2,  # Bulgarian lev, replaced by EUR in 2026; had 2
    "BYR": 0,  # Belarusian ruble before 2016 (replaced by BYN); had 0
    "CUC": 2,  # Cuban convertible peso, withdrawn 2021; had 2
    "GGP": 2,  # Guernsey pound: not ISO 4217, at par with GBP (2)
    "HRK": 2,  # Croatian kuna, replaced by EUR in 2023; had 2
    "IMP": 2,  # Manx pound: not ISO 4217, at par with GBP (2)
    "JEP": 2,  # Jersey pound: not ISO 4217, at par with GBP (2)
    "MRO": 2,  # Mauritanian ouguiya before 2018 (replaced by MRU); ISO listed 2
    "SLL": 2,  # Sierra Leonean leone before 2022 (replaced by SLE); had 2
    "SPL": 2,  # Seborga luigino: not ISO 4217; 2 like the US dollar it is quoted against
    "STD": 2,  # Sao Tome dobra before 2018 (replaced by STN); had 2
    "TVD": 2,  # Tuvaluan dollar: not ISO 4217, at par with AUD (2)
    "VEF": 2,  # Venezuelan bolivar fuerte before 2018 (replaced by VES); had 2
    "ZWD": 2,  # Zimbabwe dollar before 2009; had 2
}


@functools.lru_cache(maxsize=256)
def minor_units(currency: str) -> int:
    """Fraction digits an amount in ``currency`` may have: ISO 4217 minor units, else the table above.

    ISO 4217 states no minor unit for XDR ("N.A."); its amounts are limited by the contract scale only.
    """
    if currency in MINOR_UNITS_NOT_IN_ISO:
        return MINOR_UNITS_NOT_IN_ISO[currency]
    exponent = iso4217.Currency(currency).exponent
    return SCALE if exponent is None else int(exponent)


# NOK for one unit of each listed currency (the simulator's fixed rates; plausible middle rates, not market
# data). Where a currency is pegged or at par with another, the figure follows it.
NOK_PER_UNIT: dict[str, Decimal] = {
    code: Decimal(rate)
    for code, rate in {
        "AED": "2.7550",
        "AFN": "0.1450",
        "ALL": "0.1120",
        "AMD": "0.02620",
        "ANG": "5.6540",
        "AOA": "0.01110",
        "ARS": "0.00850",
        "AUD": "6.5800",
        "AWG": "5.6540",
        "AZN": "5.9530",
        "BAM": "5.9970",
        "BBD": "5.0600",
        "BDT": "0.08300",
        "BGN": "5.9970",
        "BHD": "26.9100",
        "BIF": "0.003420",
        "BMD": "10.1200",
        "BND": "7.7800",
        "BOB": "1.4650",
        "BRL": "1.8920",
        "BSD": "10.1200",
        "BTN": "0.1141",
        "BWP": "0.7450",
        "BYR": "0.000310",
        "BZD": "5.0600",
        "CAD": "7.2300",
        "CDF": "0.003530",
        "CHF": "12.6000",
        "CLP": "0.01070",
        "CNY": "1.4254",
        "COP": "0.002560",
        "CRC": "0.02010",
        "CUC": "10.1200",
        "CUP": "0.4217",
        "CVE": "0.1064",
        "CZK": "0.4819",
        "DJF": "0.05690",
        "DKK": "1.5723",
        "DOP": "0.1620",
        "DZD": "0.07600",
        "EGP": "0.2080",
        "ERN": "0.6747",
        "ETB": "0.06900",
        "EUR": "11.7300",
        "FJD": "4.4900",
        "FKP": "13.3100",
        "GBP": "13.3100",
        "GEL": "3.7200",
        "GGP": "13.3100",
        "GHS": "0.9200",
        "GIP": "13.3100",
        "GMD": "0.1430",
        "GNF": "0.001170",
        "GTQ": "1.3150",
        "GYD": "0.04840",
        "HKD": "1.3008",
        "HNL": "0.3870",
        "HRK": "1.5568",
        "HTG": "0.07700",
        "HUF": "0.03070",
        "IDR": "0.000608",
        "ILS": "3.0950",
        "IMP": "13.3100",
        "INR": "0.1141",
        "IQD": "0.007720",
        "IRR": "0.000240",
        "ISK": "0.08030",
        "JEP": "13.3100",
        "JMD": "0.06350",
        "JOD": "14.2700",
        "JPY": "0.06530",
        "KES": "0.07830",
        "KGS": "0.1160",
        "KHR": "0.002520",
        "KMF": "0.02380",
        "KPW": "0.01120",
        "KRW": "0.006979",
        "KWD": "32.9500",
        "KYD": "12.1400",
        "KZT": "0.01960",
        "LAK": "0.000465",
        "LBP": "0.000113",
        "LKR": "0.03350",
        "LRD": "0.05500",
        "LSL": "0.5850",
        "LYD": "1.8600",
        "MAD": "1.0900",
        "MDL": "0.5800",
        "MGA": "0.002230",
        "MKD": "0.1905",
        "MMK": "0.004819",
        "MNT": "0.002980",
        "MOP": "1.2630",
        "MRO": "0.02830",
        "MUR": "0.2200",
        "MVR": "0.6560",
        "MWK": "0.005840",
        "MXN": "0.5500",
        "MYR": "2.4270",
        "MZN": "0.1584",
        "NAD": "0.5850",
        "NGN": "0.006900",
        "NIO": "0.2750",
        "NOK": "1",
        "NPR": "0.07130",
        "NZD": "5.7700",
        "OMR": "26.2900",
        "PAB": "10.1200",
        "PEN": "2.7000",
        "PGK": "2.5300",
        "PHP": "0.1721",
        "PKR": "0.03600",
        "PLN": "2.7650",
        "PYG": "0.001290",
        "QAR": "2.7800",
        "RON": "2.3045",
        "RSD": "0.1001",
        "RUB": "0.1260",
        "RWF": "0.006980",
        "SAR": "2.6990",
        "SBD": "1.2000",
        "SCR": "0.7000",
        "SDG": "0.01680",
        "SEK": "1.0680",
        "SGD": "7.7800",
        "SHP": "13.3100",
        "SLL": "0.000450",
        "SOS": "0.01770",
        "SPL": "60.7200",
        "SRD": "0.2700",
        "STD": "0.000470",
        "SVC": "1.1570",
        "SYP": "0.000780",
        "SZL": "0.5850",
        "THB": "0.3123",
        "TJS": "1.0800",
        "TMT": "2.8900",
        "TND": "3.3900",
        "TOP": "4.2700",
        "TRY": "0.2392",
        "TTD": "1.4900",
        "TVD": "6.5800",
        "TWD": "0.3265",
        "TZS": "0.003900",
        "UAH": "0.2430",
        "UGX": "0.002760",
        "USD": "10.1200",
        "UYU": "0.2500",
        "UZS": "0.000800",
        "VEF": "0.000040",
        "VND": "0.000385",
        "VUV": "0.08500",
        "WST": "3.6500",
        "XAF": "0.01788",
        "XCD": "3.7480",
        "XDR": "13.7600",
        "XOF": "0.01788",
        "XPF": "0.09830",
        "YER": "0.04040",
        "ZAR": "0.5850",
        "ZMW": "0.3800",
        "ZWD": "0.000028",
    }.items()
}


def to_nok(amount: Decimal, currency: str) -> Decimal:
    return amount * NOK_PER_UNIT[currency]


def convert(amount: Decimal, *, source: str, target: str) -> Decimal:
    """``amount`` in ``source`` expressed in ``target`` at the fixed rates, unrounded."""
    if source == target:
        return amount
    return amount * NOK_PER_UNIT[source] / NOK_PER_UNIT[target]


def quantize(amount: Decimal, currency: str) -> Decimal:
    """Round half up to the currency's minor units (what the bank books)."""
    return amount.quantize(Decimal(1).scaleb(-min(minor_units(currency), SCALE)), rounding=ROUND_HALF_UP)
