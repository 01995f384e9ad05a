"""The ledger of unattended bank calls: 4 per bank account per kind in a rolling 24 hours, reserved before the
call, shared by portal accounts on the same bank account, and holding under concurrency (real threads on
PostgreSQL; on SQLite, which serialises writers, the same interleavings run one after another)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts import ledger
from accounts.models import UNATTENDED_CALLS_PER_DAY, BankAccount, RefreshCall, RefreshKind
from tests.bank_factories import BankAccountFactory, BankConnectionFactory

B, T = RefreshKind.BALANCES, RefreshKind.TRANSACTIONS


def test_four_calls_per_kind_then_refused_until_the_oldest_leaves_the_window(alice):
    account = BankAccountFactory(connection__user=alice)
    start = timezone.now() - timedelta(hours=23)
    for hour in range(4):
        ledger.reserve(account=account, kinds=(B, T), now=start + timedelta(hours=hour))

    now = start + timedelta(hours=5)
    with pytest.raises(ledger.RefreshRefused) as refused:
        ledger.reserve(account=account, kinds=(B, T), now=now)
    assert refused.value.available_at == start + timedelta(hours=24)
    assert RefreshCall.objects.count() == 8  # nothing reserved by the refusal (all or nothing)

    # One second after the first call left the window, one more of each kind is allowed.
    ledger.reserve(account=account, kinds=(B, T), now=start + timedelta(hours=24, seconds=1))
    assert RefreshCall.objects.count() == 10


def test_kinds_are_counted_apart(alice):
    account = BankAccountFactory(connection__user=alice)
    for _ in range(4):
        ledger.reserve(account=account, kinds=(T,))

    ledger.reserve(account=account, kinds=(B,))  # balances still free
    with pytest.raises(ledger.RefreshRefused):
        ledger.reserve(account=account, kinds=(B, T))  # all or nothing: transactions are spent
    assert RefreshCall.objects.filter(kind=B).count() == 1


def test_portal_accounts_on_one_bank_account_share_its_allowance(alice, bob):
    # Two users of one corporate agreement: two connections, the same bank account (the bank counts per TPP).
    mine = BankAccountFactory(connection__user=alice, resource_id="shared-resource")
    theirs = BankAccountFactory(connection__user=bob, resource_id="shared-resource")
    other = BankAccountFactory(connection__user=bob, resource_id="another-resource")
    for _ in range(2):
        ledger.reserve(account=mine, kinds=(B, T))
        ledger.reserve(account=theirs, kinds=(B, T))

    with pytest.raises(ledger.RefreshRefused):
        ledger.reserve(account=theirs, kinds=(B, T))
    ledger.reserve(account=other, kinds=(B, T))
    budgets = ledger.refresh_budgets(account_ids=[mine.pk, theirs.pk, other.pk])
    assert (budgets[mine.pk].used, budgets[theirs.pk].remaining, budgets[other.pk].used) == (4, 0, 1)


def test_a_blocked_account_refuses_until_the_bank_reset(alice):
    account = BankAccountFactory(connection__user=alice)
    until = timezone.now() + timedelta(hours=3)
    BankAccount.objects.filter(pk=account.pk).update(refresh_blocked_until=until)

    with pytest.raises(ledger.RefreshRefused) as refused:
        ledger.reserve(account=account, kinds=(B,))
    assert refused.value.reason == "blocked" and refused.value.available_at == until
    ledger.reserve(account=account, kinds=(B,), now=until + timedelta(seconds=1))
    assert RefreshCall.objects.count() == 1


def test_refresh_budgets_reads_any_number_of_accounts_in_two_queries(alice):
    connection_ = BankConnectionFactory(user=alice)
    accounts = BankAccountFactory.create_batch(12, connection=connection_)
    now = timezone.now()
    for account in accounts[:5]:
        ledger.reserve(account=account, kinds=(B, T), now=now - timedelta(hours=30))  # outside the window
        ledger.reserve(account=account, kinds=(T,), now=now - timedelta(hours=2))
        ledger.reserve(account=account, kinds=(T,), now=now - timedelta(hours=1))
        ledger.reserve(account=account, kinds=(B,), now=now - timedelta(hours=1))
    blocked_until = now + timedelta(hours=4)
    BankAccount.objects.filter(pk=accounts[0].pk).update(refresh_blocked_until=blocked_until, next_refresh_at=now)
    BankAccount.objects.filter(pk=accounts[1].pk).update(refresh_blocked_until=now - timedelta(minutes=1))

    with CaptureQueriesContext(connection) as queries:
        budgets = ledger.refresh_budgets(account_ids=[a.pk for a in accounts] + [999_999], now=now)

    assert len(queries) <= 2
    assert set(budgets) == {a.pk for a in accounts}
    first = budgets[accounts[0].pk]
    assert (first.used, first.remaining, first.limit) == (2, 2, UNATTENDED_CALLS_PER_DAY)  # max over the kinds
    assert first.blocked_until == blocked_until and first.next_due_at == now
    assert budgets[accounts[1].pk].blocked_until is None  # a passed block is no block
    assert (budgets[accounts[9].pk].used, budgets[accounts[9].pk].remaining) == (0, 4)
    assert ledger.refresh_budgets(account_ids=[]) == {}


def _race(account_pk: int, workers: int) -> tuple[int, int]:
    """``workers`` threads each try to reserve one refresh at once; returns (granted, refused)."""
    results: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(workers)

    def work() -> None:
        try:
            account = BankAccount.objects.get(pk=account_pk)
            barrier.wait(timeout=10)
            try:
                ledger.reserve(account=account, kinds=(B, T))
                granted = True
            except ledger.RefreshRefused:
                granted = False
            with lock:
                results.append(granted)
        finally:
            close_old_connections()
            connection.close()

    if connection.vendor == "postgresql":
        threads = [threading.Thread(target=work) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    else:
        # SQLite (in memory, one connection): the same calls one after another; the database serialises
        # writers anyway, so this is the order every concurrent run reduces to.
        for _ in range(workers):
            account = BankAccount.objects.get(pk=account_pk)
            try:
                ledger.reserve(account=account, kinds=(B, T))
                results.append(True)
            except ledger.RefreshRefused:
                results.append(False)
    return results.count(True), results.count(False)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_workers_never_reserve_more_than_the_allowance():
    from tests.factories import UserFactory

    account = BankAccountFactory(connection__user=UserFactory())
    ledger.reserve(account=account, kinds=(B, T))  # one already spent today

    granted, refused = _race(account.pk, workers=8)

    assert (granted, refused) == (3, 5)
    assert RefreshCall.objects.filter(kind=B).count() == 4 and RefreshCall.objects.filter(kind=T).count() == 4


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_planned_refresh_delivered_twice_at_once_is_done_once():
    from tests.factories import UserFactory

    account = BankAccountFactory(connection__user=UserFactory())
    planned = timezone.now()
    outcomes: list[str] = []

    def deliver() -> None:
        try:
            ledger.reserve(account=BankAccount.objects.get(pk=account.pk), kinds=(B, T), not_since=planned)
            outcomes.append("done")
        except ledger.RefreshRefused as refused:
            outcomes.append(refused.reason)
        finally:
            connection.close()

    if connection.vendor == "postgresql":
        threads = [threading.Thread(target=deliver) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    else:
        deliver()
        deliver()

    assert sorted(outcomes) == ["already done", "done"]
    assert RefreshCall.objects.count() == 2
