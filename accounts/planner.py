"""The planner of unattended refreshes (beat runs it every few minutes through the task
``accounts.plan_refreshes``): it claims the accounts whose ``next_refresh_at`` is due, moves it REFRESH_INTERVAL
(+ jitter) on, and enqueues one task per TASK_ACCOUNTS accounts after commit. Four refreshes in 24 hours at
six-hour intervals fit the allowance; the ledger (accounts/ledger.py) decides anyway.

The task is enqueued by its name through Celery: this module never imports accounts.tasks (the tasks import it).
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import BankAccount
from connections.models import ConnectionAccess, ConnectionState

#: Time between two planned unattended refreshes of an account; with the jitter, 4 fit in 24 hours.
REFRESH_INTERVAL = timedelta(hours=6)
REFRESH_JITTER = timedelta(minutes=20)
#: An account that may not be refreshed when it falls due is looked at again this much later (or when a consent
#: is granted for it): each tick reads the rows due, never the same idle rows again and again.
PARKED_RECHECK = timedelta(days=7)
#: Accounts claimed per planner statement (one short transaction each).
PLAN_BATCH = 500
#: Accounts refreshed by one task: their claim and their answers are each written in a few statements, whatever
#: their number, so the database work per account shrinks with it; the bank is still called once per account.
TASK_ACCOUNTS = 20
#: The task that refreshes the accounts of one batch (accounts/tasks.py).
REFRESH_ACCOUNTS_TASK = "accounts.refresh_accounts"


def _enqueue_refresh(account_ids: list[int], planned_at: datetime) -> None:
    """Send one batch to the task (ids only in the message). The task object registered under that name is used,
    not ``send_task``, so that eager mode (tests) and the task's own options apply as before."""
    current_app.tasks[REFRESH_ACCOUNTS_TASK].delay(account_ids, planned_at.isoformat())


def _next_time(now: datetime, rng: random.Random) -> datetime:
    return now + REFRESH_INTERVAL + timedelta(seconds=rng.uniform(0, REFRESH_JITTER.total_seconds()))


def _live(account: BankAccount, now: datetime) -> bool:
    """May ``account`` (read with its connection) be refreshed unattended now?"""
    connection = account.connection
    return (
        account.consented
        and connection.state == ConnectionState.ACTIVE
        and connection.access == ConnectionAccess.ACCOUNTS
        and (connection.consent_valid_until is None or connection.consent_valid_until > now)
    )


def claimable(*, now: datetime, new: bool) -> Any:
    """Up to PLAN_BATCH accounts never planned (``new``) or due, to be locked (rows another planner holds are
    skipped) and read with the fields of their connections the planner looks at: through the index on
    ``next_refresh_at`` and a LIMIT, so that the statement reads the rows it returns, whatever the table's size.
    A QuerySet (bench/scale.py prints its plan)."""
    rows = (
        BankAccount.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("connection")
        .only(
            "pk",
            "consented",
            "next_refresh_at",
            "refresh_blocked_until",
            "connection__state",
            "connection__access",
            "connection__consent_valid_until",
        )
    )
    if new:
        rows = rows.filter(next_refresh_at__isnull=True).order_by("pk")
    else:
        rows = rows.filter(next_refresh_at__lte=now).order_by("next_refresh_at")
    return rows[:PLAN_BATCH]


def refresh_plan(*, now: datetime | None = None, enqueue: Any = None, rng: random.Random | None = None) -> int:
    """Claim the accounts whose unattended refresh is due and enqueue one task per TASK_ACCOUNTS of them (after
    commit); ``enqueue(account_ids, planned_at)``.

    Accounts never planned get a first time spread over the next REFRESH_INTERVAL. Claiming moves
    ``next_refresh_at`` on in the same transaction that locks the rows (``skip_locked``: a second planner running
    at the same moment takes other rows, or none), so each due time is enqueued once. Every row claimed gets a
    time in the future, so that no tick reads it again before then: an account that may not be refreshed (its
    connection needs reconnecting, its consent expired, ...) is looked at again after PARKED_RECHECK (a new
    consent plans it at once: :func:`plan_accounts`), one blocked after a 429 when its block ends. The work of a
    tick follows the accounts due, not the size of the table. Returns the number enqueued.
    """
    now = now or timezone.now()
    rng = rng or random.Random()  # noqa: S311 - spreading times, not a secret
    enqueue = enqueue or _enqueue_refresh
    # New accounts: a first time within the next interval, so that a thousand new accounts do not all go at once.
    while True:
        with transaction.atomic():
            fresh = list(claimable(now=now, new=True))
            for account in fresh:
                account.next_refresh_at = (
                    now + timedelta(seconds=rng.uniform(0, REFRESH_INTERVAL.total_seconds()))
                    if _live(account, now)
                    else now + PARKED_RECHECK
                )
            BankAccount.objects.bulk_update(fresh, ["next_refresh_at"])
        if len(fresh) < PLAN_BATCH:
            break
    enqueued = 0
    while True:
        with transaction.atomic():
            due = list(claimable(now=now, new=False))
            # One next time for the batch (its rows fell due together), so that the batch moves in a few plain
            # UPDATEs: bulk_update's CASE over 500 rows cost the tick more than the claim itself.
            later = _next_time(now, rng)
            moves: dict[datetime, list[int]] = defaultdict(list)
            claimed = []
            for account in due:
                blocked = account.refresh_blocked_until
                if not _live(account, now):
                    moves[now + PARKED_RECHECK].append(account.pk)
                elif blocked is not None and blocked > now:
                    moves[blocked].append(account.pk)
                else:
                    moves[later].append(account.pk)
                    claimed.append(account.pk)
            for when, pks in moves.items():
                BankAccount.objects.filter(pk__in=pks).update(next_refresh_at=when)
            chunks = [claimed[i : i + TASK_ACCOUNTS] for i in range(0, len(claimed), TASK_ACCOUNTS)]
            transaction.on_commit(lambda chunks=chunks: [enqueue(chunk, now) for chunk in chunks])
        enqueued += len(claimed)
        if len(due) < PLAN_BATCH:
            break
    return enqueued


def plan_accounts(*, account_ids: list[int], now: datetime | None = None, rng: random.Random | None = None) -> int:
    """A consent was just granted for ``account_ids``: plan their next unattended refresh within the next
    REFRESH_INTERVAL when they have none or were parked (the planner left them for PARKED_RECHECK while they might
    not be refreshed). One statement; returns the number planned."""
    now = now or timezone.now()
    rng = rng or random.Random()  # noqa: S311 - spreading times, not a secret
    first = now + timedelta(seconds=rng.uniform(0, REFRESH_INTERVAL.total_seconds()))
    return (
        BankAccount.objects.filter(pk__in=account_ids)
        .filter(Q(next_refresh_at__isnull=True) | Q(next_refresh_at__gt=now + REFRESH_INTERVAL + REFRESH_JITTER))
        .filter(Q(refresh_blocked_until__isnull=True) | Q(refresh_blocked_until__lte=now))
        .update(next_refresh_at=first)
    )
