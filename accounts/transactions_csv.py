"""An account's transactions as CSV, written row by row while the database is read (a streamed download).

- Text from the bank (names, messages, ids) is data, never a formula: a cell starting with a character that makes a
  spreadsheet evaluate it (= + - @, tab, carriage return, line feed, and their full-width forms) gets a leading
  apostrophe (OWASP "CSV injection").
- Amounts are the stored Decimal written out exactly: a dot, no grouping, the currency's minor units at least and
  more only when the bank sent more; never rounded, never through float. They are numbers the portal writes
  itself, so a minus sign stays a minus sign.
- Dates are ISO 8601; the file starts with a byte-order mark so that spreadsheet programs read it as UTF-8.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from accounts.models import Transaction
from core import csvsafe

HEADER = [
    "status",
    "booking_date",
    "value_date",
    "amount",
    "currency",
    "counterparty_name",
    "counterparty_account",
    "remittance_information",
    "kid",
    "end_to_end_id",
    "transaction_id",
]
BOM = csvsafe.BOM
#: The cells' rules live in one place for every export (core/csvsafe.py).
text_cell = csvsafe.text_cell
amount_cell = csvsafe.amount_cell


def rows(transactions: Iterable[Transaction]) -> Iterator[list[str]]:
    yield HEADER
    for tx in transactions:
        yield [
            tx.status,
            tx.booking_date.isoformat() if tx.booking_date else "",
            tx.value_date.isoformat() if tx.value_date else "",
            amount_cell(tx.amount, tx.currency),
            text_cell(tx.currency),
            text_cell(tx.counterparty_name),
            text_cell(tx.counterparty_account),
            text_cell(tx.remittance),
            text_cell(tx.kid),
            text_cell(tx.end_to_end_id),
            text_cell(tx.transaction_id),
        ]


def stream(transactions: Iterable[Transaction]) -> Iterator[str]:
    """The CSV text, one row at a time, starting with the byte-order mark."""
    return csvsafe.stream(rows(transactions))
