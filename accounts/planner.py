"""The planner of unattended refreshes (beat runs it every few minutes through the task
``accounts.plan_refreshes``): it claims the accounts whose ``next_refresh_at`` is due, moves it REFRESH_INTERVAL
(+ jitter) on, and enqueues one task per TASK_ACCOUNTS accounts after commit. Four refreshes in 24 hours at
six-hour intervals fit the allowance; the ledger (accounts/ledger.py) decides anyway.

The task is enqueued by its name through Celery: this module never imports accounts.tasks (the tasks import it).
"""

from __future__ import annotations

import random
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


def _refreshable() -> Any:
    return BankAccount.objects.filter(
        consented=True,
        connection__state=ConnectionState.ACTIVE,
        connection__access=ConnectionAccess.ACCOUNTS,
    )


def refresh_plan(*, now: datetime | None = None, enqueue: Any = None, rng: random.Random | None = None) -> int:
    """Claim the accounts whose unattended refresh is due and enqueue one task per TASK_ACCOUNTS of them (after
    commit); ``enqueue(account_ids, planned_at)``.

    Accounts never planned get a first time spread over the next REFRESH_INTERVAL. Claiming moves
    ``next_refresh_at`` on in the same transaction that locks the rows (``skip_locked``: a second planner running
    at the same moment takes other rows, or none), so each due time is enqueued once. Returns the number
    enqueued.
    """
    now = now or timezone.now()
    rng = rng or random.Random()  # noqa: S311 - spreading times, not a secret
    enqueue = enqueue or _enqueue_refresh
    live = _refreshable().filter(
        Q(connection__consent_valid_until__isnull=True) | Q(connection__consent_valid_until__gt=now)
    )
    # New accounts: a first time within the next interval, so that a thousand new accounts do not all go at once.
    while True:
        with transaction.atomic():
            fresh = list(
                BankAccount.objects.select_for_update(skip_locked=True)
                .filter(pk__in=live.filter(next_refresh_at__isnull=True).values("pk")[:PLAN_BATCH])
                .filter(next_refresh_at__isnull=True)
            )
            for account in fresh:
                account.next_refresh_at = now + timedelta(seconds=rng.uniform(0, REFRESH_INTERVAL.total_seconds()))
            BankAccount.objects.bulk_update(fresh, ["next_refresh_at"])
        if len(fresh) < PLAN_BATCH:
            break
    enqueued = 0
    while True:
        with transaction.atomic():
            due = list(
                BankAccount.objects.select_for_update(skip_locked=True)
                .filter(
                    pk__in=live.filter(next_refresh_at__lte=now)
                    .filter(Q(refresh_blocked_until__isnull=True) | Q(refresh_blocked_until__lte=now))
                    .order_by("next_refresh_at")
                    .values("pk")[:PLAN_BATCH]
                )
                .filter(next_refresh_at__lte=now)
            )
            for account in due:
                account.next_refresh_at = _next_time(now, rng)
            BankAccount.objects.bulk_update(due, ["next_refresh_at"])
            claimed = [a.pk for a in due]
            chunks = [claimed[i : i + TASK_ACCOUNTS] for i in range(0, len(claimed), TASK_ACCOUNTS)]
            transaction.on_commit(lambda chunks=chunks: [enqueue(chunk, now) for chunk in chunks])
        enqueued += len(claimed)
        if len(claimed) < PLAN_BATCH:
            break
    return enqueued
