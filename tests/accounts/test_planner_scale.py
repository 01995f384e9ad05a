"""The planner's work follows the accounts due, not the size of the accounts' table (issue #32, item 4): a tick
takes the same statements for a few due accounts as for many, and an account that may not be refreshed when it
falls due is moved out of the due range (parked), so that later ticks do not read it again and again; a new
consent plans it again at once."""

from __future__ import annotations

import random
from datetime import timedelta

from django.utils import timezone

from accounts import ledger, planner, services
from accounts.models import BankAccount
from connections.models import ConnectionState
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from xs2a.psu import PsuContext


def _tick(now):
    enqueued: list[int] = []
    count = planner.refresh_plan(now=now, enqueue=lambda pks, at: enqueued.extend(pks), rng=random.Random(3))
    return count, enqueued


def _tick_queries(django_assert_num_queries, django_capture_on_commit_callbacks, now, expected):
    with django_assert_num_queries(expected), django_capture_on_commit_callbacks(execute=True):
        return _tick(now)


def test_a_tick_takes_the_same_statements_for_three_due_accounts_as_for_forty(
    alice, django_assert_num_queries, django_capture_on_commit_callbacks
):
    now = timezone.now()
    connection = BankConnectionFactory(user=alice)
    few = BankAccountFactory.create_batch(3, connection=connection, next_refresh_at=now - timedelta(minutes=1))
    # Per loop (new accounts, due accounts): savepoint, the claim, the release; bulk_update only with rows.
    count, enqueued = _tick_queries(django_assert_num_queries, django_capture_on_commit_callbacks, now, 7)
    assert count == 3 and sorted(enqueued) == sorted(a.pk for a in few)

    later = now + planner.REFRESH_INTERVAL + planner.REFRESH_JITTER
    many = BankAccountFactory.create_batch(40, connection=connection, next_refresh_at=later - timedelta(minutes=1))
    BankAccountFactory.create_batch(
        40, connection=connection, next_refresh_at=later + timedelta(days=1)
    )  # not due
    count, enqueued = _tick_queries(django_assert_num_queries, django_capture_on_commit_callbacks, later, 7)
    assert count == 43 and sorted(enqueued) == sorted(a.pk for a in [*few, *many])  # the three are due again


def test_accounts_that_may_not_be_refreshed_are_parked_and_not_read_by_the_next_ticks(
    alice, django_capture_on_commit_callbacks
):
    now = timezone.now()
    dead = BankConnectionFactory(user=alice, state=ConnectionState.NEEDS_RECONNECT)
    parked = BankAccountFactory.create_batch(5, connection=dead, next_refresh_at=now - timedelta(hours=1))
    unplanned = BankAccountFactory(connection=dead, next_refresh_at=None)
    unconsented = BankAccountFactory(connection__user=alice, consented=False, next_refresh_at=now)

    with django_capture_on_commit_callbacks(execute=True):
        assert _tick(now) == (0, [])

    times = set(
        BankAccount.objects.filter(pk__in=[*(a.pk for a in parked), unplanned.pk, unconsented.pk]).values_list(
            "next_refresh_at", flat=True
        )
    )
    assert times == {now + planner.PARKED_RECHECK}
    # The next ticks find none of them due, until the recheck.
    assert not BankAccount.objects.filter(next_refresh_at__lte=now + timedelta(days=6)).exists()


def test_accounts_fetched_after_a_new_consent_are_planned_within_the_interval(alice, fake_bank):
    now = timezone.now()
    connection = BankConnectionFactory(user=alice, state=ConnectionState.PENDING)
    parked = BankAccountFactory(
        connection=connection, resource_id="res-1", next_refresh_at=now + planner.PARKED_RECHECK
    )
    soon = BankAccountFactory(connection=connection, resource_id="res-2", next_refresh_at=now + timedelta(hours=1))
    fake_bank.accounts_of[connection.psu_id] = [bankfake.account("res-1"), bankfake.account("res-2")]

    outcome = services.connection_fetch_accounts(
        connection=connection, presence=PsuContext(ip_address="198.51.100.7"), actor=alice
    )

    assert outcome.accounts == 2
    parked.refresh_from_db()
    soon.refresh_from_db()
    assert now <= parked.next_refresh_at <= now + planner.REFRESH_INTERVAL + timedelta(seconds=5)
    assert soon.next_refresh_at == now + timedelta(hours=1)  # a time already planned is kept


def test_a_parked_account_shows_no_next_refresh(alice):
    now = timezone.now()
    dead = BankAccountFactory(
        connection__user=alice,
        connection__state=ConnectionState.NEEDS_RECONNECT,
        next_refresh_at=now + planner.PARKED_RECHECK,
    )
    live = BankAccountFactory(connection__user=alice, next_refresh_at=now + timedelta(hours=2))

    budgets = ledger.refresh_budgets(account_ids=[dead.pk, live.pk], now=now)

    assert budgets[dead.pk].next_due_at is None  # the pages say "not planned yet", not a week ahead
    assert budgets[live.pk].next_due_at == now + timedelta(hours=2)
