"""Refreshing accounts: with the PSU present nothing counts; unattended refreshes stay within the bank's 4 per 24
hours (the portal refuses the 5th itself), a 429 blocks until the bank's reset, a consent error marks the
connection, a planned refresh delivered twice runs once, the planner claims each due account once, and
expired consents are marked."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection as db_connection
from django.utils import timezone

from accounts import ledger, planner, refresh, tasks
from accounts.models import BalanceSnapshot, BankAccount, RefreshCall, Transaction
from connections.models import ConnectionAccess, ConnectionEvent, ConnectionState
from core.bank import unattended_bank_client
from core.models import BankCall
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.bankfake import booked, pending
from xs2a.psu import PsuContext

PRESENT = PsuContext(ip_address="198.51.100.7")


@pytest.fixture
def account(alice):
    return BankAccountFactory(connection__user=alice)


def test_refresh_with_the_psu_present_sends_the_address_and_never_counts(fake_bank, account):
    fake_bank.booked = [booked("B1", "-10.00", timezone.now().date())]

    outcomes = [refresh.account_refresh(account_id=account.pk, presence=PRESENT) for _ in range(6)]

    assert all(o.ok for o in outcomes)
    assert fake_bank.calls(present=True) == 12 and fake_bank.calls(present=False) == 0
    assert not RefreshCall.objects.exists() and fake_bank.too_many == 0
    assert outcomes[0].balances == 2 and outcomes[0].transactions_new == 1 and outcomes[0].calls == 2
    assert BalanceSnapshot.objects.filter(account=account).count() == 12


def test_unattended_refreshes_stop_at_four_and_the_bank_never_answers_429(fake_bank, account):
    fake_bank.booked = [booked("B1", "-10.00", timezone.now().date())]

    outcomes = [refresh.account_refresh(account_id=account.pk) for _ in range(5)]

    assert [o.ok for o in outcomes] == [True, True, True, True, False]
    assert "used up (4)" in outcomes[4].message and outcomes[4].calls == 0
    assert fake_bank.calls(present=False) == 8 and fake_bank.too_many == 0  # the 5th never reached the bank
    assert RefreshCall.objects.filter(account=account).count() == 8
    account.refresh_from_db()
    first = RefreshCall.objects.order_by("reserved_at").first()
    assert account.next_refresh_at == first.reserved_at + timedelta(hours=24)  # postponed until a call is free
    budget = ledger.refresh_budgets(account_ids=[account.pk])[account.pk]
    assert (budget.used, budget.remaining, budget.next_due_at) == (4, 0, account.next_refresh_at)


def test_a_sync_needing_more_pages_than_the_allowance_stops_without_moving_the_cursor(fake_bank, account):
    fake_bank.page_size = 2
    today = timezone.now().date()
    fake_bank.booked = [booked(f"B{n}", "-1.00", today) for n in range(9)]  # 5 pages

    outcome = refresh.account_refresh(account_id=account.pk)

    assert not outcome.ok and outcome.calls == 5  # balances + 4 pages: the 5th page is not asked for
    assert fake_bank.calls(present=False, kind="transactions") == 4 and fake_bank.too_many == 0
    assert not Transaction.objects.exists()
    account.refresh_from_db()
    assert account.transactions_synced_to is None
    assert account.balances_refreshed_at is not None  # the balances read is complete and kept

    # With the PSU present the whole history is read at once.
    assert refresh.account_refresh(account_id=account.pk, presence=PRESENT).transactions_new == 9


def test_a_429_blocks_unattended_refreshes_until_the_banks_reset(fake_bank, account):
    fake_bank.fail_with = 429
    fake_bank.retry_after = "7200"

    outcome = refresh.account_refresh(account_id=account.pk)

    assert (
        not outcome.ok
        and "The bank's limit is reached" in outcome.message
        and "The bank said: no" in outcome.message
    )
    account.refresh_from_db()
    assert account.refresh_blocked_until is not None
    assert timedelta(minutes=119) < account.refresh_blocked_until - timezone.now() <= timedelta(hours=2)
    assert account.next_refresh_at == account.refresh_blocked_until
    assert (
        ledger.refresh_budgets(account_ids=[account.pk])[account.pk].blocked_until == account.refresh_blocked_until
    )

    fake_bank.fail_with = None
    calls = len(fake_bank.received)
    again = refresh.account_refresh(account_id=account.pk)
    assert not again.ok and "resume after" in again.message
    assert len(fake_bank.received) == calls  # no call while blocked
    assert refresh.account_refresh(account_id=account.pk, presence=PRESENT).ok  # the PSU present may read


def test_a_429_without_reset_information_blocks_for_the_24_hour_window(fake_bank, account):
    fake_bank.fail_with = 429

    refresh.account_refresh(account_id=account.pk)

    account.refresh_from_db()
    assert timedelta(hours=23, minutes=59) < account.refresh_blocked_until - timezone.now() <= timedelta(hours=24)


def test_a_consent_error_during_an_unattended_refresh_marks_the_connection(fake_bank, account):
    fake_bank.fail_with = 401

    outcome = refresh.account_refresh(account_id=account.pk)

    assert not outcome.ok and "Reconnect" in outcome.message and "The consent expired" in outcome.message
    account.connection.refresh_from_db()
    assert account.connection.state == ConnectionState.NEEDS_RECONNECT
    assert ConnectionEvent.objects.get().to_state == ConnectionState.NEEDS_RECONNECT
    calls = len(fake_bank.received)
    assert not refresh.account_refresh(account_id=account.pk).ok
    assert len(fake_bank.received) == calls  # a connection needing a reconnect is not read


def test_unattended_calls_are_audited_without_psu_presence(fake_bank, account, settings):
    refresh.account_refresh(account_id=account.pk)

    # The ledger's rows name the account and the kind; the client audits each call (one BankCall row each,
    # about the account, without PSU presence).
    assert sorted(RefreshCall.objects.values_list("kind", flat=True)) == ["balances", "transactions"]
    assert set(RefreshCall.objects.values_list("resource_key", flat=True)) == {f"account:{account.resource_id}"}
    calls = BankCall.objects.order_by("pk")
    assert [c.path_template for c in calls] == [
        "/v1/accounts/{account_id}/balances",
        "/v1/accounts/{account_id}/transactions",
    ]
    assert all(c.psu_present is False and c.status == 200 and c.object_id == str(account.pk) for c in calls)


def test_a_task_delivered_twice_refreshes_once(fake_bank, account):
    planned = timezone.now().isoformat()

    assert tasks.refresh_accounts([account.pk], planned) == 1
    assert tasks.refresh_accounts([account.pk], planned) == 1  # done already: nothing called

    assert fake_bank.calls() == 2 and RefreshCall.objects.count() == 2
    # The next planned time is a new refresh.
    tasks.refresh_accounts([account.pk], (timezone.now() + timedelta(seconds=1)).isoformat())
    assert fake_bank.calls() == 4


def test_refresh_accounts_task_is_late_acknowledged():
    assert tasks.refresh_accounts.acks_late is True and tasks.refresh_accounts.reject_on_worker_lost is True


def test_a_stale_or_unknown_account_is_not_read(fake_bank, alice):
    gone = refresh.account_refresh(account_id=999_999)
    unconsented = BankAccountFactory(connection__user=alice, consented=False)
    payments_only = BankAccountFactory(connection__user=alice, connection__access=ConnectionAccess.PAYMENTS)
    expired = BankAccountFactory(
        connection__user=alice, connection__consent_valid_until=timezone.now() - timedelta(minutes=1)
    )

    outcomes = [gone] + [refresh.account_refresh(account_id=a.pk) for a in (unconsented, payments_only, expired)]

    assert not any(o.ok for o in outcomes) and fake_bank.calls() == 0


# --- the planner --------------------------------------------------------------------------------------------


def _plan(now=None):
    enqueued: list[tuple[int, object]] = []
    count = planner.refresh_plan(
        now=now, enqueue=lambda pks, at: enqueued.extend((pk, at) for pk in pks), rng=random.Random(7)
    )
    return count, enqueued


def test_new_accounts_are_spread_over_the_interval_and_not_enqueued_at_once(
    alice, django_capture_on_commit_callbacks
):
    accounts = BankAccountFactory.create_batch(40, connection=BankConnectionFactory(user=alice))
    now = timezone.now()

    with django_capture_on_commit_callbacks(execute=True):
        count, enqueued = _plan(now)

    assert count == 0 and enqueued == []
    times = list(
        BankAccount.objects.filter(pk__in=[a.pk for a in accounts]).values_list("next_refresh_at", flat=True)
    )
    assert all(now <= t <= now + planner.REFRESH_INTERVAL for t in times)
    assert max(times) - min(times) > timedelta(hours=3)  # spread, not one burst


def test_the_planner_enqueues_due_refreshable_accounts_once_after_commit(
    alice, django_capture_on_commit_callbacks
):
    now = timezone.now()
    due = BankAccountFactory(connection__user=alice, next_refresh_at=now - timedelta(minutes=1))
    BankAccountFactory(connection__user=alice, next_refresh_at=now + timedelta(minutes=5))  # not yet
    BankAccountFactory(connection__user=alice, next_refresh_at=now, consented=False)
    BankAccountFactory(
        connection__user=alice, connection__state=ConnectionState.NEEDS_RECONNECT, next_refresh_at=now
    )
    BankAccountFactory(connection__user=alice, connection__access=ConnectionAccess.PAYMENTS, next_refresh_at=now)
    BankAccountFactory(
        connection__user=alice, connection__consent_valid_until=now - timedelta(days=1), next_refresh_at=now
    )
    BankAccountFactory(connection__user=alice, next_refresh_at=now, refresh_blocked_until=now + timedelta(hours=1))

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        count, enqueued = _plan(now)
        assert enqueued == []  # nothing sent before the claim is committed
    for callback in callbacks:
        callback()

    assert count == 1 and enqueued == [(due.pk, now)]
    due.refresh_from_db()
    assert (
        now + planner.REFRESH_INTERVAL
        <= due.next_refresh_at
        <= now + planner.REFRESH_INTERVAL + planner.REFRESH_JITTER
    )

    with django_capture_on_commit_callbacks(execute=True):
        assert _plan(now) == (0, [])  # a second planner (or a second beat) finds nothing due


def test_planned_refreshes_every_six_hours_fit_the_allowance_for_days(
    fake_bank, account, monkeypatch, django_capture_on_commit_callbacks
):
    """A day and a half of planner runs every 5 minutes with tasks run at once: never refused, never 429."""
    start = timezone.now()
    BankAccount.objects.filter(pk=account.pk).update(next_refresh_at=start)
    clock = {"now": start}
    monkeypatch.setattr(refresh.timezone, "now", lambda: clock["now"])
    fake_bank.now = lambda: clock["now"]
    outcomes = []

    def run(pks, planned):
        outcomes.extend(refresh.refresh_due(account_ids=pks, planned_at=planned).values())

    for step in range(0, 36 * 12):
        clock["now"] = start + timedelta(minutes=5 * step)
        with django_capture_on_commit_callbacks(execute=True):
            planner.refresh_plan(now=clock["now"], enqueue=run, rng=random.Random(step))

    assert len(outcomes) >= 6 and all(o.ok for o in outcomes), [o.message for o in outcomes if not o.ok]
    assert fake_bank.too_many == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_planners_at_once_enqueue_each_account_once():
    from tests.factories import UserFactory

    now = timezone.now()
    user = UserFactory()
    accounts = BankAccountFactory.create_batch(
        30, connection=BankConnectionFactory(user=user), next_refresh_at=now
    )
    enqueued: list[int] = []
    lock = threading.Lock()

    def plan(seed: int) -> None:
        try:
            planner.refresh_plan(
                now=now,
                enqueue=lambda pks, at: (lock.acquire(), enqueued.extend(pks), lock.release()),
                rng=random.Random(seed),
            )
        finally:
            db_connection.close()

    if db_connection.vendor == "postgresql":
        threads = [threading.Thread(target=plan, args=(seed,)) for seed in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    else:  # SQLite serialises the two planners' transactions: the same outcome, one after the other
        plan(1)
        plan(2)

    assert sorted(enqueued) == sorted(a.pk for a in accounts)


# --- consent expiry ---------------------------------------------------------------------------------------


def test_expired_consents_are_marked_for_reconnecting_once(alice):
    now = timezone.now()
    expired = BankConnectionFactory(user=alice, consent_valid_until=now - timedelta(minutes=1))
    valid = BankConnectionFactory(user=alice, consent_valid_until=now + timedelta(days=1))
    gone = BankConnectionFactory(user=alice, state=ConnectionState.DISCONNECTED, consent_valid_until=None)

    from connections import tasks as connection_tasks

    assert connection_tasks.expire_consents() == 1
    assert connection_tasks.expire_consents() == 0

    states = {c.pk: c.state for c in type(expired).objects.all()}
    assert states == {
        expired.pk: ConnectionState.NEEDS_RECONNECT,
        valid.pk: ConnectionState.ACTIVE,
        gone.pk: ConnectionState.DISCONNECTED,
    }
    event = ConnectionEvent.objects.get()
    assert event.connection_id == expired.pk and "expired" in event.reason


def test_the_beat_schedule_plans_refreshes_and_expires_consents(settings):
    tasks_scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"accounts.plan_refreshes", "connections.expire_consents"} <= tasks_scheduled
    from tpp_portal.celery import app

    assert {"accounts.plan_refreshes", "accounts.refresh_accounts", "connections.expire_consents"} <= set(
        app.tasks
    )


# --- "Refresh now" on the accounts overview ---------------------------------------------------------------


def test_refresh_now_reads_transactions_too_with_the_psu_present(fake_bank, alice, alice_client):
    account = BankAccountFactory(connection__user=alice)
    fake_bank.booked = [booked("B1", "-42.00", timezone.now().date(), "Coop")]
    fake_bank.pending = [pending("P1", "-3.00", timezone.now().date())]

    response = alice_client.post("/bank/accounts/refresh/", follow=True)

    assert response.status_code == 200
    assert "Balances and transactions refreshed." in response.content.decode()
    assert Transaction.objects.filter(account=account).count() == 2
    assert fake_bank.calls(present=False) == 0 and not RefreshCall.objects.exists()


def test_the_unattended_client_never_repeats_a_request_by_itself():
    # Each unattended request was reserved in the ledger once; a retry the bank also counts would be unreserved.
    unattended_bank_client.cache_clear()
    try:
        assert unattended_bank_client().config.retry.max_attempts == 1
    finally:
        unattended_bank_client.cache_clear()


def test_the_planner_sends_ids_only_to_the_task(alice, monkeypatch, django_capture_on_commit_callbacks):
    now = timezone.now()
    due = BankAccountFactory(connection__user=alice, next_refresh_at=now - timedelta(seconds=1))
    sent = []
    monkeypatch.setattr(tasks.refresh_accounts, "delay", lambda *args: sent.append(args))

    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.plan_refreshes() == 1

    ((account_ids, planned),) = sent
    assert account_ids == [due.pk] and isinstance(planned, str)
    assert abs(datetime.fromisoformat(planned) - now) < timedelta(seconds=30)
