"""CSV cells that spreadsheet programs cannot turn into formulas, and the streaming plumbing of CSV downloads.

The one place for the rule (OWASP "CSV injection"): a text cell starting with a character that makes a
spreadsheet evaluate it (= + - @, tab, carriage return, line feed, and their full-width forms) gets a leading
apostrophe. Amounts the portal writes itself are exact decimals (a dot, no grouping, the currency's minor units
at least and more only when the value has more; never rounded, never through float): their minus sign stays a
minus sign. Used by the admin's export, the transactions export and the payments export.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal

from django.utils import timezone, translation

from core.money import minor_units

#: A spreadsheet runs a cell starting with one of these as a formula, full-width forms included.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: Spreadsheet programs read the file as UTF-8 when it starts with a byte-order mark.
BOM = "\ufeff"


def text_cell(value: object) -> str:
    """A cell a spreadsheet shows as text, whatever the value holds (None is empty)."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def amount_cell(amount: Decimal | None, currency: str) -> str:
    """``-1234.5`` NOK -> ``-1234.50``; ``0.12345`` -> ``0.12345``; exact; None is empty."""
    if amount is None:
        return ""
    try:
        places = minor_units(currency)
    except KeyError:
        places = 2
    exponent = amount.normalize().as_tuple().exponent
    places = max(places, -exponent if isinstance(exponent, int) else 0)
    return f"{amount:.{places}f}"


def time_cell(moment: datetime | None) -> str:
    """A moment in local time (TIME_ZONE, Europe/Oslo) to the second, with its offset:
    ``2026-03-05T10:15:02+01:00``; None is empty."""
    if moment is None:
        return ""
    return timezone.localtime(moment).replace(microsecond=0).isoformat()


class Echo:
    """The file-like object csv.writer needs: hands each written line back instead of storing it."""

    def write(self, value: str) -> str:
        return value


def stream(rows: Iterable[list[str]], *, bom: bool = True) -> Iterator[str]:
    """The CSV text, one row at a time (for a StreamingHttpResponse), starting with the byte-order mark."""
    writer = csv.writer(Echo())
    if bom:
        yield BOM
    for row in rows:
        yield writer.writerow(row)


def stream_in_language(rows: Iterable[list[str]], language: str | None, *, bom: bool = True) -> Iterator[str]:
    """``stream`` with ``language`` active while each row is made: a streamed response's rows are made after the
    view returned, when the request's language may no longer be the active one."""
    iterator = iter(stream(rows, bom=bom))
    while True:
        with translation.override(language):
            try:
                chunk = next(iterator)
            except StopIteration:
                return
        yield chunk
