"""Amounts: Decimal only, with the number of fraction digits of the currency's ISO 4217 minor unit."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from iso4217 import Currency

# Codes in the bank's currency list (spec 2.5) that ISO 4217 does not define, and the minor units we use for
# them. GGP, IMP, JEP are pound sterling local issues (2 like GBP); TVD is the Tuvalu dollar (2 like AUD);
# SPL (Seborga luigino) has no official subdivision: 2 as in the bank's sandbox examples. Withdrawn ISO codes
# (BYR 0, MRO 2, STD 2, VEF 2, ZWD 2, HRK 2, CUC 2, SLL 2, ANG 2, and BGN 2, withdrawn when Bulgaria adopted the
# euro on 2026-01-01) keep their last published minor units. XDR (the IMF's special drawing right) is listed by ISO
# with minor unit "N.A."; we use 2, the CLDR default (babel.numbers.get_currency_precision("XDR") == 2).
NON_ISO_MINOR_UNITS = {
    "GGP": 2,
    "IMP": 2,
    "JEP": 2,
    "TVD": 2,
    "SPL": 2,
    "BYR": 0,
    "MRO": 2,
    "STD": 2,
    "VEF": 2,
    "ZWD": 2,
    "HRK": 2,
    "CUC": 2,
    "SLL": 2,
    "ANG": 2,
    "BGN": 2,
    "XDR": 2,
}


def minor_units(currency: str) -> int:
    """ISO 4217 minor units of ``currency``; raises KeyError for a code neither ISO nor our table knows."""
    code = currency.upper()
    try:
        exponent = Currency(code).exponent
    except ValueError:
        exponent = None
    if exponent is None:
        return NON_ISO_MINOR_UNITS[code]
    return exponent


#: Between groups of three digits where the admin and the models' names show an amount: a space that never breaks.
GROUP_SEPARATOR = "\u00a0"


def amount_plain(amount: Decimal, currency: str, *, grouped: bool = True) -> str:
    """``150000.00000`` NOK -> ``150 000.00 NOK`` (``grouped=False``: ``150000.00 NOK``); ``1500`` JPY ->
    ``1 500 JPY``. The currency's minor units at least, more only when the amount has more non-zero digits:
    never rounds. A point for decimals (the operators' pages are English); an unknown code gets 2 digits."""
    try:
        places = minor_units(currency)
    except KeyError:
        places = 2
    exponent = amount.normalize().as_tuple().exponent if amount.is_finite() else 0
    places = max(places, -exponent if isinstance(exponent, int) else 0)
    text = f"{amount:,.{places}f}" if grouped else f"{amount:.{places}f}"
    return f"{text.replace(',', GROUP_SEPARATOR)} {currency}".strip()


def to_decimal(value: object) -> Decimal:
    if isinstance(value, float):
        raise TypeError("amounts are never floats")
    try:
        return Decimal(str(value))
    except InvalidOperation as exc:
        raise ValueError(f"not a decimal amount: {value!r}") from exc
