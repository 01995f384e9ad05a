"""The background refresh's statements, all through the ORM (no hand-written SQL): the claim that locks and reads
every portal account on the refreshed bank accounts with its connection (through the indexes, whatever the
table's size), the ledger, the cursor
that keeps the stored history contiguous, the read of the stored rows, and the statements a refresh takes: the
same few for one account as for twenty."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from accounts import ledger, refresh, sync
from accounts.models import BankAccount, RefreshCall, RefreshKind, Transaction, TransactionStatus
from connections.models import BankConnection
from tests.bank_factories import BankAccountFactory
from tests.bankfake import FakeBank, booked


def _values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_claim_reads_every_account_on_the_bank_account_with_its_connection(alice, bob):
    now = timezone.now().replace(microsecond=123456)
    mine = BankAccountFactory(
        connection__user=alice,
        connection__psu_corporate_id="corporate-77",
        resource_id="shared!!res=",
        transactions_synced_to=date(2026, 3, 1),
        transactions_synced_from=date(2025, 12, 1),
        refresh_blocked_until=now,
        balances_refreshed_at=now - timedelta(hours=1),
    )
    theirs = BankAccountFactory(connection__user=bob, resource_id="shared!!res=")
    BankAccountFactory(connection__user=alice, resource_id="another")  # another bank account: not claimed
    BankAccountFactory(connection__user=bob, resource_id="shared!!res=", kind="card")  # another kind

    with transaction.atomic():
        locked = refresh._locked_with_connections([mine.pk])

    assert [a.pk for a in locked] == sorted([mine.pk, theirs.pk])
    for account in locked:
        stored = BankAccount.objects.select_related("connection").get(pk=account.pk)
        assert _values(account) == _values(stored)
        assert _values(account.connection) == _values(stored.connection)
        assert account.connection.psu_id == stored.connection.psu_id != ""  # decrypted, as the ORM gives it
        assert not account._state.adding
    claimed = next(a for a in locked if a.pk == mine.pk)
    assert claimed.connection.psu_corporate_id == "corporate-77"
    assert claimed.refresh_blocked_until == now and claimed.refresh_blocked_until.tzinfo is not None
    assert claimed.transactions_synced_to == date(2026, 3, 1)


def test_the_claim_finds_its_rows_through_the_indexes_not_by_testing_every_row(alice):
    """The claim's statement names the rows by the columns of the (kind, resource_id) index, with no subquery (a
    correlated EXISTS made SQLite test every row of the accounts' table: 90 ms a task at 10 000 accounts), and
    SQLite's plan scans no table. PostgreSQL's plan depends on the table's statistics (with a few rows any plan
    is right), so the plan itself is read on SQLite."""
    from django.db import connection

    mine = BankAccountFactory(connection__user=alice, resource_id="res-1")
    BankAccountFactory.create_batch(30, connection__user=alice)

    claimed = refresh._on_their_bank_accounts([mine.pk])

    assert [a.pk for a in claimed] == [mine.pk]
    where = str(claimed.query).split(" WHERE ", 1)[1]
    assert "SELECT" not in where and '"accounts_bankaccount"."resource_id" IN (res-1)' in where, where
    if connection.vendor == "sqlite":
        plan = claimed.explain()
        assert "SEARCH accounts_bankaccount USING INDEX bankaccount_bank_account_idx" in plan, plan
        assert "SCAN" not in plan, plan


def test_the_claim_of_an_account_that_is_gone_reads_nothing(db):
    with transaction.atomic():
        assert refresh._locked_with_connections([987_654]) == []


def test_the_ledger_rows_are_read_back_by_the_ledger(alice):
    account = BankAccountFactory(connection__user=alice)
    at = timezone.now().replace(microsecond=654321)
    ledger.reserve(account=account, kinds=(RefreshKind.BALANCES, RefreshKind.TRANSACTIONS), now=at)

    rows = list(
        RefreshCall.objects.order_by("kind").values_list("account_id", "resource_key", "kind", "reserved_at")
    )
    key = RefreshCall.key_for(account)
    assert rows == [(account.pk, key, "balances", at), (account.pk, key, "transactions", at)]
    # ... and the ledger's own read sees them: the planned refresh at ``at`` is done.
    with pytest.raises(ledger.RefreshRefused, match="already done"):
        ledger.reserve(account=account, kinds=(RefreshKind.BALANCES,), now=at, not_since=at)


def _statements(alice, override_bank, accounts: int) -> list[tuple[str, str]]:
    """The statements of one unattended refresh of ``accounts`` accounts (one task's batch), by kind and table."""
    from django.contrib.contenttypes.models import ContentType
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    bank = override_bank(FakeBank())
    batch = [BankAccountFactory(connection__user=alice) for _ in range(accounts)]
    bank.booked = [booked("B1", "-1.00", timezone.now().date())]
    ContentType.objects.get_for_model(BankAccount)  # cached, as in a running worker

    with CaptureQueriesContext(connection) as captured:
        outcomes = refresh.refresh_due(account_ids=[a.pk for a in batch], planned_at=timezone.now())

    assert all(o.ok for o in outcomes.values()) and len(outcomes) == accounts
    assert bank.calls() == 2 * accounts and Transaction.objects.filter(account__in=batch).count() == accounts
    statements = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    if connection.features.has_select_for_update_of:
        assert 'FOR UPDATE OF "accounts_bankaccount"' in statements[1]
    assert "JOIN" in statements[1]
    return [(sql.split()[0], next(w for w in sql.split() if w.startswith('"'))) for sql in statements]


def test_an_unattended_refresh_takes_the_same_few_statements_for_one_account_or_twenty(alice, override_bank):
    one = _statements(alice, override_bank, 1)

    assert one == [
        ("SELECT", '"accounts_bankaccount"."kind"'),  # the claim: the bank accounts of the batch, by pk
        ("SELECT", '"accounts_bankaccount"."id",'),  # ... every account on them locked, with its connection
        ("SELECT", '"accounts_refreshcall"."account_id"'),  # the ledger
        ("INSERT", '"accounts_refreshcall"'),  # the reserved calls
        ("SELECT", '"accounts_bankaccount"."id"'),  # the answers' accounts locked, by pk
        ("UPDATE", '"accounts_bankaccount"'),  # refresh times and cursors
        ("SELECT", '"accounts_transaction"."id",'),  # the stored rows the answers name
        ("INSERT", '"accounts_transaction"'),
        ("INSERT", '"accounts_balancesnapshot"'),
        ("INSERT", '"tpp_portal_bankcall"'),  # every call's audit row, with the answers
    ]
    assert _statements(alice, override_bank, 20) == one


def test_a_task_of_accounts_with_different_cursors_stores_each_ones_own(alice, fake_bank):
    """The rows are updated in one UPDATE per distinct read (window and kinds), each with its own cursor: a fresh
    account starts its history at the read, one whose stored history the read joins keeps its start."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    today = timezone.now().date()
    fresh = [BankAccountFactory(connection__user=alice) for _ in range(2)]
    joined = BankAccountFactory(
        connection__user=alice,
        transactions_synced_from=today - timedelta(days=200),
        transactions_synced_to=today - timedelta(days=1),
    )
    oldest = today - timedelta(days=sync.UNATTENDED_HISTORY_DAYS)

    with CaptureQueriesContext(connection) as captured:
        outcomes = refresh.refresh_due(account_ids=[a.pk for a in [*fresh, joined]], planned_at=timezone.now())

    assert all(o.ok for o in outcomes.values())
    updates = [q["sql"] for q in captured.captured_queries if q["sql"].startswith('UPDATE "accounts_bankaccount"')]
    assert len(updates) == 2  # the fresh accounts read one window, the joined one another
    for account in fresh:
        account.refresh_from_db()
        assert (account.transactions_synced_from, account.transactions_synced_to) == (oldest, today)
        assert account.balances_refreshed_at is not None
        assert account.transactions_refreshed_at == account.balances_refreshed_at
    joined.refresh_from_db()
    assert (joined.transactions_synced_from, joined.transactions_synced_to) == (today - timedelta(days=200), today)
    assert joined.balances_refreshed_at == fresh[0].balances_refreshed_at


def test_the_stored_rows_read_are_those_the_answer_names_and_every_pending_row(alice):
    account = BankAccountFactory(connection__user=alice)
    other = BankAccountFactory(connection__user=alice)
    now = timezone.now()
    common = {"currency": "NOK", "first_seen_at": now, "updated_at": now, "fingerprint": "f" * 64}
    named = Transaction.objects.create(
        account=account,
        transaction_id="B1",
        status=TransactionStatus.BOOKED,
        booking_date=date(2026, 11, 2),
        amount=Decimal("-10.12345"),
        raw={"transactionId": "B1", "amount": "-10.12345", "nested": {"æøå": [1, 2]}},
        **common,
    )
    pending = Transaction.objects.create(
        account=account, status=TransactionStatus.PENDING, amount=Decimal("5"), transaction_id="P9", **common
    )
    without_id = Transaction.objects.create(
        account=account, status=TransactionStatus.BOOKED, amount=Decimal("7.5"), transaction_id="", **common
    )
    Transaction.objects.create(  # booked, not named by the answer: not read
        account=account, status=TransactionStatus.BOOKED, amount=Decimal("1"), transaction_id="B2", **common
    )
    Transaction.objects.create(  # another account's pending row: not read
        account=other, status=TransactionStatus.PENDING, amount=Decimal("1"), transaction_id="P1", **common
    )

    rows = sync._stored(account_ids=[account.pk], ids={"B1", "unknown"})

    assert [r.pk for r in rows] == [named.pk, pending.pk, without_id.pk]
    for row in rows:
        assert _values(row) == _values(Transaction.objects.get(pk=row.pk))
    assert rows[0].raw["nested"] == {"æøå": [1, 2]} and rows[0].amount == Decimal("-10.12345")
    assert [r.pk for r in sync._stored(account_ids=[account.pk], ids=set())] == [pending.pk, without_id.pk]


@pytest.mark.parametrize(
    ("synced", "read_from", "expected_from"),
    [
        (None, date(2026, 8, 1), date(2026, 8, 1)),  # first sync: the history starts at the read
        ((date(2026, 5, 1), date(2026, 10, 1)), date(2026, 9, 20), date(2026, 5, 1)),  # joins: keeps its start
        ((date(2026, 9, 25), date(2026, 10, 1)), date(2026, 9, 20), date(2026, 9, 20)),  # joins, reaches back
        ((date(2026, 5, 1), date(2026, 7, 1)), date(2026, 8, 1), date(2026, 8, 1)),  # after a gap: starts anew
    ],
)
def test_the_cursor_statement_keeps_the_stored_history_contiguous(alice, synced, read_from, expected_from):
    start, to = synced or (None, None)
    account = BankAccountFactory(connection__user=alice, transactions_synced_from=start, transactions_synced_to=to)
    now = timezone.now()
    window = sync.SyncWindow(date_from=read_from, date_to=date(2026, 11, 23))

    with transaction.atomic():
        moved = BankAccount.objects.filter(pk=account.pk).update(
            balances_refreshed_at=now, **sync.cursor_fields(window=window, now=now)
        )

    assert moved == 1
    account.refresh_from_db()
    assert account.transactions_synced_from == expected_from
    assert account.transactions_synced_to == date(2026, 11, 23)
    assert account.transactions_refreshed_at == now == account.balances_refreshed_at
    assert BankConnection.objects.count() == 1  # nothing else written
