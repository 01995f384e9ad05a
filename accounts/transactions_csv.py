"""An account's transactions as CSV, written row by row while the database is read (a streamed download).

- Text from the bank (names, messages, ids) is data, never a formula: a cell starting with a character that makes a
  spreadsheet evaluate it (= + - @, tab, carriage return, line feed, and their full-width forms) gets a leading
  apostrophe (OWASP "CSV injection").
- Amounts are the stored Decimal written out exactly: a dot, no grouping, the currency's minor units at least and
  more only when the bank sent more; never rounded, never through float. They are numbers the portal writes
  itself, so a minus sign stays a minus sign.
- Dates are ISO 8601; the file starts with a byte-order mark so that spreadsheet programs read it as UTF-8.
- The headers and the status are words in the user's language (the language active when the download starts,
  kept while the rows are written). The bank's opaque transaction id is left out: the bank's own reference of
  the entry (``entryReference``), which a person can quote to the bank, is given where the bank sent one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.utils import translation
from django.utils.translation import gettext_lazy as _

from accounts.models import Transaction
from core import csvsafe

#: (key, header): the keys name the columns in code and tests, the headers are what people read.
COLUMNS = [
    ("status", _("Status")),
    ("booking_date", _("Booking date")),
    ("value_date", _("Value date")),
    ("amount", _("Amount")),
    ("currency", _("Currency")),
    ("counterparty_name", _("Other party")),
    ("counterparty_account", _("Other party's account")),
    ("remittance_information", _("Message")),
    ("kid", _("KID")),
    ("end_to_end_id", _("End-to-end reference")),
    ("bank_reference", _("The bank's reference")),
]
KEYS = [key for key, _header in COLUMNS]
BOM = csvsafe.BOM
#: The cells' rules live in one place for every export (core/csvsafe.py).
text_cell = csvsafe.text_cell
amount_cell = csvsafe.amount_cell


def header() -> list[str]:
    """The first row, in the active language."""
    return [str(label) for _key, label in COLUMNS]


def bank_reference(tx: Transaction) -> str:
    """The bank's own reference of the entry (``entryReference``), where it sent one."""
    value = tx.raw.get("entryReference") if isinstance(tx.raw, dict) else None
    return value.strip() if isinstance(value, str) else ""


def rows(transactions: Iterable[Transaction]) -> Iterator[list[str]]:
    yield header()
    for tx in transactions:
        yield [
            str(tx.get_status_display()),
            tx.booking_date.isoformat() if tx.booking_date else "",
            tx.value_date.isoformat() if tx.value_date else "",
            amount_cell(tx.amount, tx.currency),
            text_cell(tx.currency),
            text_cell(tx.counterparty_name),
            text_cell(tx.counterparty_account),
            text_cell(tx.remittance),
            text_cell(tx.kid),
            text_cell(tx.end_to_end_id),
            text_cell(bank_reference(tx)),
        ]


def stream(transactions: Iterable[Transaction]) -> Iterator[str]:
    """The CSV text, one row at a time, starting with the byte-order mark, in the language active now (the rows
    are written later, while the response is sent)."""
    return csvsafe.stream_in_language(rows(transactions), translation.get_language())
