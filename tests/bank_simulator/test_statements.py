"""The statements behind a transactions page: what the listing asks of the database, and how it reads the index."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bank_simulator.models import Account, BookingStatus
from bank_simulator.selectors import transaction_listing
from tests.bank_simulator.conftest import accounts_of

LISTING_STATUSES = ["both", "all", BookingStatus.BOOKED, BookingStatus.PENDING]


def _statements_of(bank, href: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = bank.get(href)
    assert response.status_code == 200, response.content
    return [q["sql"] for q in captured.captured_queries]


def test_a_transactions_page_counts_nothing_and_reads_its_items_in_one_statement(private_bank):
    """The next link comes from one item read past the page, not from a COUNT; pending and booked items come
    from one statement. Unattended (no PSU-IP-Address), as the portal's refresh asks."""
    account = accounts_of(private_bank)["Brukskonto"]
    private_bank.psu_ip = None
    href = f"{account['_links']['self']['href']}/transactions?bookingStatus=both&limit=3"
    statements = _statements_of(private_bank, href)
    listings = [s for s in statements if s.startswith("SELECT") and 'FROM "bank_simulator_transaction"' in s]
    assert not [s for s in listings if "COUNT(" in s.upper()]
    # The settling check (are pending items due?) and the page itself.
    assert len(listings) == 2, listings
    assert sum('"bank_simulator_transaction"."transaction_id"' in s for s in listings) == 1
    page = private_bank.get(href).json()["transactions"]  # the unattended allowance has room for a second read
    assert len(page["pending"]) + len(page["booked"]) == 3 and "next" in page["_links"]


@pytest.mark.parametrize("booking_status", LISTING_STATUSES)
@pytest.mark.parametrize("dated", [False, True])
def test_the_listing_reads_tx_listing_idx_in_its_own_order(private_bank, booking_status, dated):
    """Pending before booked, each newest first, is the index's order: the statement filters no status for
    both and all, orders by the index's columns, and on SQLite its plan searches the index with no sort."""
    accounts_of(private_bank)
    account = Account.objects.get(name="Brukskonto")
    today = dt.datetime.now(dt.UTC).date()
    dates = {"date_from": today - dt.timedelta(days=60), "date_to": today} if dated else {}
    listing = transaction_listing(account=account, booking_status=booking_status, **dates)
    sql = str(listing.query)
    assert "IN (" not in sql
    assert ('"booking_status" =' in sql) == (booking_status in {BookingStatus.BOOKED, BookingStatus.PENDING})
    order = sql.split("ORDER BY", 1)[1]
    assert [part.split(".")[-1].strip() for part in order.split(",")] == [
        '"booking_status" DESC',
        '"booking_date" DESC',
        '"sequence" DESC',
        '"id" DESC',
    ]
    rows = list(listing)
    assert rows == sorted(rows, key=lambda t: (t.booking_status, t.booking_date, t.sequence, t.id), reverse=True)
    if connection.vendor == "sqlite":
        plan = listing.explain()
        assert "tx_listing_idx" in plan, plan
        assert "TEMP B-TREE" not in plan.upper(), plan
