"""The account page's CSV export (streamed, filtered, formula-safe, exact amounts) and its balance chart (drawn
from the balance snapshots and the transactions, with its data table)."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import BalanceSnapshot, TransactionStatus
from accounts.selectors import balance_history
from accounts.transactions_csv import COLUMNS, KEYS, amount_cell, text_cell
from tests.accounts.test_account_pages import TransactionFactory, booked_rows
from tests.bank_factories import BankAccountFactory, BankConnectionFactory


@pytest.fixture
def account(alice):
    return BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Brukskonto")


def _csv(response) -> list[dict[str, str]]:
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="transactions-')
    body = b"".join(response.streaming_content).decode("utf-8")
    assert body.startswith("\ufeff")
    header, *lines = csv.reader(io.StringIO(body[1:]))
    assert header == [str(label) for _key, label in COLUMNS]
    return [dict(zip(KEYS, line, strict=True)) for line in lines]


# --- CSV ------------------------------------------------------------------------------------------------------


def test_export_has_the_filtered_rows_only(alice_client, account):
    TransactionFactory(account=account, booking_date=date(2026, 3, 1), counterparty_name="Rema 1000")
    kept = TransactionFactory(account=account, booking_date=date(2026, 3, 5), counterparty_name="Husleie AS")
    TransactionFactory(account=account, booking_date=date(2026, 3, 6), counterparty_name="Rema 1000")
    TransactionFactory(account=BankAccountFactory(connection=account.connection), counterparty_name="Husleie AS")

    rows = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv", {"q": "husleie"}))

    assert [r["counterparty_name"] for r in rows] == [kept.counterparty_name]
    assert rows[0]["booking_date"] == "2026-03-05" and rows[0]["status"] == "Booked"


def test_export_of_everything_lists_pending_then_booked_newest_first(alice_client, account):
    TransactionFactory(account=account, booking_date=date(2026, 1, 1), counterparty_name="Old")
    TransactionFactory(account=account, booking_date=date(2026, 2, 1), counterparty_name="New")
    TransactionFactory(account=account, status=TransactionStatus.PENDING, booking_date=None, counterparty_name="P")

    rows = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv"))

    assert [r["counterparty_name"] for r in rows] == ["P", "New", "Old"]
    assert rows[0]["booking_date"] == "" and rows[0]["status"] == "Pending"


def test_export_gives_the_banks_reference_not_its_opaque_id(alice_client, account):
    TransactionFactory(account=account, transaction_id="enc!!c2VjcmV0", raw={"entryReference": "REF-2026-0042"})
    TransactionFactory(account=account, transaction_id="enc!!b3RoZXI=", raw={})

    body = b"".join(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv").streaming_content).decode()
    rows = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv"))

    assert "enc!!" not in body
    assert sorted(r["bank_reference"] for r in rows) == ["", "REF-2026-0042"]


def test_export_headers_and_status_are_in_the_users_language(alice_client, account):
    TransactionFactory(account=account, status=TransactionStatus.PENDING, booking_date=None)
    alice_client.cookies["django_language"] = "nb"

    body = b"".join(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv").streaming_content).decode()
    header, line = csv.reader(io.StringIO(body[1:]))

    assert header[:3] == ["Status", "Bokføringsdato", "Rentedato"]
    assert not any("_" in cell for cell in header)
    assert line[0] == "Ventende"


def test_export_ignores_the_pager(alice_client, account):
    booked_rows(account, 120)
    rows = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv", {"after": "2026-01-01.1"}))
    assert len(rows) == 120


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        (Decimal("-1234.50000"), "NOK", "-1234.50"),
        (Decimal("0.12345"), "NOK", "0.12345"),  # every digit the bank sent, never rounded
        (Decimal("1500"), "JPY", "1500"),
        (Decimal("10.10000"), "KWD", "10.100"),
        # 15 significant digits: what SQLite keeps exactly (PostgreSQL keeps the column's 23).
        (Decimal("-9876543210.12345"), "NOK", "-9876543210.12345"),
    ],
)
def test_export_amounts_are_exact(alice_client, account, amount, currency, expected):
    TransactionFactory(account=account, amount=amount, currency=currency)

    (row,) = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv"))

    assert row["amount"] == expected and row["currency"] == currency
    assert Decimal(row["amount"]) == amount


@pytest.mark.parametrize(
    "text", ['=HYPERLINK("http://evil.example")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\r=1", "\uff1dcmd"]
)
def test_export_never_starts_a_text_cell_with_a_formula(alice_client, account, text):
    TransactionFactory(account=account, counterparty_name=text, remittance=text, kid=text, end_to_end_id=text)

    (row,) = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv"))

    for column in ("counterparty_name", "remittance_information", "kid", "end_to_end_id"):
        assert row[column] == "'" + text


def test_export_keeps_ordinary_text_and_quotes_separators(alice_client, account):
    TransactionFactory(account=account, counterparty_name='Bakeri "Brød", Oslo', remittance="Linje 1\nLinje 2")
    (row,) = _csv(alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv"))
    assert (
        row["counterparty_name"] == 'Bakeri "Brød", Oslo' and row["remittance_information"] == "Linje 1\nLinje 2"
    )


def test_text_and_amount_cells():
    assert text_cell(None) == "" and text_cell("Kiwi") == "Kiwi" and text_cell("-") == "'-"
    assert amount_cell(Decimal("-5.00000"), "NOK") == "-5.00"
    assert amount_cell(Decimal("5.5"), "XXX?") == "5.50"  # an unknown currency: two places


def test_export_with_a_wrong_filter_is_refused_with_the_reason(alice_client, account):
    response = alice_client.get(
        f"/bank/accounts/{account.pk}/transactions.csv", {"date_from": "2026-03-05", "date_to": "2026-03-01"}
    )
    assert response.status_code == 400 and "The end date is before the start date." in response.content.decode()


def test_the_download_link_carries_the_filters(alice_client, account):
    html = alice_client.get(
        f"/bank/accounts/{account.pk}/", {"q": "rema", "after": "2026-01-01.4"}
    ).content.decode()
    link = re.search(r'href="(/bank/accounts/\d+/transactions\.csv[^"]*)"', html).group(1)
    assert "q=rema" in link and "after=" not in link


def test_export_streams_the_rows_in_chunks(alice_client, account, django_assert_max_num_queries):
    """The rows are read in chunks while the response is written (a handful of queries, not one per row)."""
    booked_rows(account, 5000, per_day=50)
    response = alice_client.get(f"/bank/accounts/{account.pk}/transactions.csv")
    with django_assert_max_num_queries(5):
        body = b"".join(response.streaming_content)
    assert body.count(b"\n") == 5001


# --- the balance chart ------------------------------------------------------------------------------------------


def _snapshot(account, balance_type: str, amount: str, at: datetime, reference: date | None = None):
    return BalanceSnapshot.objects.create(
        account=account,
        balance_type=balance_type,
        amount=Decimal(amount),
        currency="NOK",
        fetched_at=at,
        reference_date=reference,
    )


def _at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=timezone.get_current_timezone())


def test_balance_history_runs_back_from_the_latest_booked_balance_through_the_transactions(account):
    today = date(2026, 3, 10)
    account.transactions_refreshed_at = _at(today)
    account.save()
    _snapshot(account, "interimBooked", "900.00", _at(date(2026, 3, 5)))
    _snapshot(account, "interimBooked", "1000.00", _at(today, 9))
    _snapshot(account, "interimAvailable", "5000.00", _at(today, 9))  # not a booked balance: not the anchor
    for day, amount in [(10, "-50.25"), (9, "200.00"), (9, "-100.00"), (6, "-0.01")]:
        TransactionFactory(account=account, booking_date=date(2026, 3, day), amount=Decimal(amount))
    TransactionFactory(account=account, booking_date=date(2026, 3, 8), amount=Decimal("-999"), currency="EUR")
    TransactionFactory(account=account, status=TransactionStatus.PENDING, booking_date=date(2026, 3, 8))

    history = balance_history(account=account, days=7, today=today)

    assert history.balance_type == "interimBooked" and history.currency == "NOK"
    assert history.days == [date(2026, 3, d) for d in range(4, 11)]
    # 10th: 1000.00 (as reported); 9th: 1000 + 50.25; 8th and 7th: minus the 9th's +100; 5th: minus 6th's -0.01.
    assert history.computed == [
        Decimal(v) for v in ["950.26", "950.26", "950.25", "950.25", "950.25", "1050.25", "1000.00"]
    ]
    assert history.reported == [None, Decimal("900.00"), None, None, None, None, Decimal("1000.00")]


def test_balance_history_without_transactions_read_shows_only_the_banks_figures(account):
    today = date(2026, 3, 10)
    _snapshot(account, "closingBooked", "10.5", _at(today), reference=date(2026, 3, 9))

    history = balance_history(account=account, days=3, today=today)

    assert not history.has_computed and history.reported == [None, None, Decimal("10.50")]


def test_balance_history_from_a_closing_balance_of_an_earlier_day(account):
    today = date(2026, 3, 10)
    account.transactions_refreshed_at = _at(today)
    account.save()
    _snapshot(account, "closingBooked", "100.00", _at(today), reference=date(2026, 3, 8))
    TransactionFactory(account=account, booking_date=date(2026, 3, 9), amount=Decimal("25.00"))
    TransactionFactory(account=account, booking_date=date(2026, 3, 8), amount=Decimal("-10.00"))

    history = balance_history(account=account, days=4, today=today)

    assert history.computed == [Decimal("110.00"), Decimal("100.00"), Decimal("125.00"), Decimal("125.00")]


def test_no_balance_in_the_window_means_no_chart(alice_client, account):
    _snapshot(account, "interimBooked", "1.00", timezone.now() - timedelta(days=200))
    assert balance_history(account=account) is None
    html = alice_client.get(f"/bank/accounts/{account.pk}/").content.decode()
    assert "No balance has been read in the last 90 days." in html and 'class="chart"' not in html


def test_the_account_page_has_the_chart_its_data_and_a_table(alice_client, account):
    now = timezone.now()
    account.transactions_refreshed_at = now
    account.balances_refreshed_at = now
    account.save()
    _snapshot(account, "interimBooked", "1234.5", now)
    TransactionFactory(account=account, booking_date=timezone.localdate(), amount=Decimal("-34.50"))

    html = alice_client.get(f"/bank/accounts/{account.pk}/").content.decode()

    assert (
        '<div class="chart" id="balance-chart" data-chart-kind="line" data-chart-source="balance-chart-data"'
        in html
    )
    data = json.loads(
        re.search(r'<script id="balance-chart-data" type="application/json">(.*?)</script>', html).group(1)
    )
    assert data["unit"] == "NOK" and len(data["labels"]) == 90
    computed, reported = data["series"]
    assert computed["values"][-2:] == ["1269.00", "1234.50"]  # yesterday: before today's -34.50
    assert reported["values"][-1] == "1234.50" and reported["values"][0] is None
    assert '<script src="/static/js/charts.js" defer></script>' in html
    table = re.search(r'<details class="chart-table">(.*?)</details>', html, re.S).group(1)
    assert "1,234.50 NOK" in table and "1,269.00 NOK" in table
    assert "style=" not in html.split("<main", 1)[1]  # CSP: no inline styles
