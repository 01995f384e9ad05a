"""Transaction sync: every page read, upsert by transactionId, pending replaced by its booked counterpart (by id
or by fingerprint), repeated syncs change nothing, a failed sync keeps the cursor, the window's bounds."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts import refresh, sync
from accounts.models import BankAccount, Transaction, TransactionStatus
from core.bank import bank_client
from tests.bank_factories import BankAccountFactory
from tests.bankfake import booked, pending
from xs2a.models import CardTransaction
from xs2a.psu import PsuContext

PRESENT = PsuContext(ip_address="198.51.100.7")


@pytest.fixture
def account(alice):
    return BankAccountFactory(connection__user=alice)


def _today() -> date:
    return timezone.now().date()


def _refresh(account, presence=PRESENT):
    return refresh.account_refresh(account_id=account.pk, presence=presence)


def test_first_sync_reads_every_page_and_stores_booked_and_pending(fake_bank, account):
    fake_bank.page_size = 2  # the bank's default page, made small
    today = _today()
    fake_bank.booked = [booked(f"B{n}", f"-{n}.50", today - timedelta(days=n), f"Shop {n}") for n in range(1, 6)]
    fake_bank.pending = [pending("P1", "-99.00", today, "Kiwi")]

    outcome = _refresh(account)

    assert outcome.ok, outcome.message
    assert (outcome.transactions_new, outcome.transactions_updated) == (6, 0)
    assert fake_bank.calls(kind="transactions") == 3  # 5 booked at 2 per page: 3 pages, links followed
    assert all("limit" not in r.target for r in fake_bank.received[:2]), "no invented page size: the bank's own"
    assert outcome.calls == 4  # with the balances
    rows = {t.transaction_id: t for t in Transaction.objects.filter(account=account)}
    assert set(rows) == {"B1", "B2", "B3", "B4", "B5", "P1"}  # the pending item repeated on 3 pages: stored once
    assert rows["B3"].amount == Decimal("-3.50") and rows["B3"].status == TransactionStatus.BOOKED
    assert rows["B3"].counterparty_name == "Shop 3" and rows["B3"].counterparty_account == "NO9386011117947"
    assert rows["B3"].booking_date == today - timedelta(days=3) and rows["B3"].currency == "NOK"
    assert rows["B3"].raw["transactionId"] == "B3" and rows["B3"].raw["transactionAmount"]["amount"] == "-3.50"
    assert rows["P1"].status == TransactionStatus.PENDING
    account.refresh_from_db()
    assert account.transactions_synced_to == today and account.transactions_refreshed_at is not None


def test_a_repeated_sync_duplicates_nothing_and_changes_nothing(fake_bank, account):
    today = _today()
    fake_bank.booked = [booked("B1", "-10.00", today), booked("B2", "250.00", today - timedelta(days=1), "Lønn")]
    fake_bank.pending = [pending("P1", "-5.00", today), pending(None, "-7.00", today, "Narvesen")]
    _refresh(account)
    first = list(Transaction.objects.order_by("pk").values_list("pk", "updated_at"))

    again = _refresh(account)

    assert (again.transactions_new, again.transactions_updated) == (0, 0)
    assert list(Transaction.objects.order_by("pk").values_list("pk", "updated_at")) == first
    assert Transaction.objects.count() == 4


def test_pending_is_replaced_by_its_booked_counterpart_with_the_same_id(fake_bank, account):
    today = _today()
    fake_bank.pending = [pending("T1", "-120.00", today, "Elkjøp")]
    _refresh(account)
    row = Transaction.objects.get()

    fake_bank.pending = []
    fake_bank.booked = [booked("T1", "-120.00", today, "Elkjøp")]
    outcome = _refresh(account)

    assert (outcome.transactions_new, outcome.transactions_updated) == (0, 1)
    assert list(Transaction.objects.values_list("pk", "transaction_id", "status")) == [
        (row.pk, "T1", TransactionStatus.BOOKED)
    ]


def test_pending_without_the_same_id_is_replaced_by_fingerprint(fake_bank, account):
    today = _today()
    fake_bank.pending = [
        pending(None, "-89.90", today, "Vinmonopolet  Oslo"),
        pending("TMP-9", "-15.00", today, "Kiosk"),
    ]
    _refresh(account)
    assert Transaction.objects.count() == 2

    fake_bank.pending = []
    # Booked under new ids; same amount, date and text (whitespace and case differ): the same transactions.
    fake_bank.booked = [
        booked("BK-1", "-89.90", today, "VINMONOPOLET OSLO"),
        booked("BK-2", "-15.00", today, "Kiosk"),
    ]
    outcome = _refresh(account)

    assert (outcome.transactions_new, outcome.transactions_updated) == (0, 2)
    assert sorted(Transaction.objects.values_list("transaction_id", "status")) == [
        ("BK-1", TransactionStatus.BOOKED),
        ("BK-2", TransactionStatus.BOOKED),
    ]


def test_a_different_amount_is_not_taken_for_the_pending_item(fake_bank, account):
    today = _today()
    fake_bank.pending = [pending(None, "-89.90", today, "Vinmonopolet")]
    _refresh(account)
    fake_bank.booked = [
        booked("BK-1", "-89.00", today, "Vinmonopolet")
    ]  # another transaction; pending still listed

    outcome = _refresh(account)

    assert outcome.transactions_new == 1
    assert sorted(Transaction.objects.values_list("status", flat=True)) == ["booked", "pending"]


def test_a_pending_item_the_bank_no_longer_lists_is_removed(fake_bank, account):
    today = _today()
    fake_bank.pending = [pending("P1", "-5.00", today), pending("P2", "-6.00", today)]
    _refresh(account)

    fake_bank.pending = [pending("P2", "-6.00", today)]  # P1 was cancelled
    _refresh(account)

    assert list(Transaction.objects.values_list("transaction_id", flat=True)) == ["P2"]


def test_a_failed_page_stores_nothing_and_keeps_the_cursor(fake_bank, account):
    fake_bank.page_size = 2
    today = _today()
    cursor = today - timedelta(days=3)
    BankAccount.objects.filter(pk=account.pk).update(transactions_synced_to=cursor)
    fake_bank.booked = [booked(f"B{n}", "-1.00", today) for n in range(5)]
    fake_bank.fail_on_page = 2

    outcome = _refresh(account)

    assert not outcome.ok and "The bank said: The bank is busy." in outcome.message
    assert not Transaction.objects.exists()
    account.refresh_from_db()
    assert account.transactions_synced_to == cursor and account.transactions_refreshed_at is None
    assert account.balances_refreshed_at is not None  # the balances answer was complete and is kept

    fake_bank.fail_on_page = None
    assert _refresh(account).transactions_new == 5
    account.refresh_from_db()
    assert account.transactions_synced_to == today


def test_incremental_sync_starts_at_the_cursor_less_the_overlap(fake_bank, account):
    today = _today()
    BankAccount.objects.filter(pk=account.pk).update(
        transactions_synced_to=today - timedelta(days=2), transactions_synced_from=today - timedelta(days=500)
    )

    _refresh(account)

    first = fake_bank.received[-1].target
    assert f"dateFrom={(today - timedelta(days=9)).isoformat()}" in first
    assert "limit" not in first and "offset" not in first and "bookingStatus=both" in first


@pytest.mark.parametrize(("present", "days"), [(True, sync.PRESENT_HISTORY_DAYS), (False, 89)])
def test_first_sync_window_and_the_90_day_limit_without_the_psu(present, days):
    account = BankAccount(transactions_synced_to=None)
    today = date(2026, 11, 23)

    window = sync.sync_window(account=account, present=present, today=today)

    assert window == sync.SyncWindow(date_from=today - timedelta(days=days), date_to=today)
    # An old cursor: without the PSU never further back than the bank allows.
    account.transactions_synced_to = today - timedelta(days=200)
    account.transactions_synced_from = today - timedelta(days=400)
    window = sync.sync_window(account=account, present=present, today=today)
    assert window.date_from == (today - timedelta(days=207) if present else today - timedelta(days=89))


def test_history_missed_by_an_unattended_first_sync_is_read_once_with_the_psu_present(fake_bank, account):
    today = _today()
    fake_bank.booked = [booked("OLD", "-1.00", today - timedelta(days=200)), booked("NEW", "-2.00", today)]

    refresh.account_refresh(account_id=account.pk)  # unattended: 89 days only
    assert list(Transaction.objects.values_list("transaction_id", flat=True)) == ["NEW"]
    account.refresh_from_db()
    assert account.transactions_synced_from == today - timedelta(days=89)

    _refresh(account)  # the PSU present: the whole history, once
    assert sorted(Transaction.objects.values_list("transaction_id", flat=True)) == ["NEW", "OLD"]
    assert (
        f"dateFrom={(today - timedelta(days=sync.PRESENT_HISTORY_DAYS)).isoformat()}"
        in fake_bank.received[-1].target
    )

    _refresh(account)  # then incremental again
    assert f"dateFrom={(today - timedelta(days=7)).isoformat()}" in fake_bank.received[-1].target
    account.refresh_from_db()
    assert account.transactions_synced_from == today - timedelta(days=sync.PRESENT_HISTORY_DAYS)


def test_card_transactions_are_read_in_their_own_shape():
    raw = {
        "cardTransactionId": "C-77",
        "transactionDate": "2026-11-20",
        "bookingDate": "2026-11-21",
        "transactionAmount": {"amount": "-349.00", "currency": "NOK"},
        "maskedPan": "123456******1234",
        "transactionDetails": "SAS Bergen",
    }

    item = sync._item(CardTransaction.from_json(raw), TransactionStatus.BOOKED)

    assert (item.transaction_id, item.amount, item.booking_date, item.value_date) == (
        "C-77",
        Decimal("-349.00"),
        date(2026, 11, 21),
        date(2026, 11, 20),
    )
    assert item.counterparty_name == "SAS Bergen" and item.raw == raw


def test_fingerprint_ignores_spacing_case_and_trailing_zeros_but_not_amount_or_date():
    base = sync.fingerprint(amount=Decimal("-10.50"), currency="NOK", day=date(2026, 1, 2), text="Rema  1000")
    assert base == sync.fingerprint(
        amount=Decimal("-10.5"), currency="nok", day=date(2026, 1, 2), text="REMA 1000"
    )
    assert base != sync.fingerprint(
        amount=Decimal("-10.51"), currency="NOK", day=date(2026, 1, 2), text="Rema 1000"
    )
    assert base != sync.fingerprint(
        amount=Decimal("-10.50"), currency="NOK", day=date(2026, 1, 3), text="Rema 1000"
    )


def test_a_read_stopped_by_its_hook_is_not_stored(fake_bank, account):
    fake_bank.page_size = 2
    today = _today()
    fake_bank.booked = [booked(f"B{n}", "-1.00", today) for n in range(5)]
    window = sync.sync_window(account=account, present=True, today=today)

    with pytest.raises(sync.SyncInterrupted):
        sync.fetch_pages(
            client=bank_client(), account=account, psu=PRESENT, window=window, before_page=lambda n: n < 3
        )

    assert fake_bank.calls(kind="transactions") == 2  # the third page was never asked for
    assert not Transaction.objects.exists()
