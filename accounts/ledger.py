"""The ledger of unattended calls (issue 6): the bank's allowance for refreshes made without the PSU, kept by
the portal itself so that it never asks beyond it, and the budget it leaves (shown on the account pages).

The bank (spec section 8) counts every request without PSU-IP-Address, every page included: at most
UNATTENDED_CALLS_PER_DAY per account per kind (balances, transactions) in a rolling 24 hours, then 429. The portal
keeps its own count in the database (``RefreshCall``, a ledger of reserved calls) and never asks beyond it:

- A call is reserved BEFORE it is made, in a short transaction that locks the account's rows
  (``select_for_update``) and counts the ledger, so several workers, a task delivered twice, or two planners
  cannot together spend more than the allowance. A reserved call counts whether or not it succeeded.
- The bank counts per bank account: portal accounts on the same one (two users of one agreement) share it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.db.models import BooleanField, Count, ExpressionWrapper, Q
from django.utils import timezone

from accounts.models import UNATTENDED_CALLS_PER_DAY, UNATTENDED_WINDOW, BankAccount, RefreshCall, RefreshKind
from connections.models import ConnectionAccess, ConnectionState

logger = logging.getLogger(__name__)

#: Ledger rows deleted per statement by :func:`prune`.
PRUNE_BATCH = 5000


class RefreshRefused(Exception):
    """The ledger refuses an unattended call: the allowance is spent, the account is blocked, or the planned
    refresh was already done (a task delivered twice). ``available_at``: when a call is allowed again."""

    def __init__(self, reason: str, available_at: datetime | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.available_at = available_at


def reserve(
    *,
    account: BankAccount,
    kinds: tuple[str, ...],
    now: datetime | None = None,
    not_since: datetime | None = None,
) -> None:
    """Reserve one unattended call of each of ``kinds`` for ``account``, or raise RefreshRefused.

    All or nothing, in one short transaction holding the row locks of every portal account on the same bank
    account (the bank counts per bank account). ``not_since``: refuse when this portal account already reserved
    a call at or after that time (the planned refresh was done by an earlier delivery of the same task).
    """
    now = now or timezone.now()
    with transaction.atomic():
        blocked = list(
            BankAccount.objects.select_for_update()
            .filter(kind=account.kind, resource_id=account.resource_id)
            .order_by("pk")
            .values_list("refresh_blocked_until", flat=True)
        )
        until = max((b for b in blocked if b is not None), default=None)
        _granted, refused = reserve_locked(claims=[(account, until)], kinds=kinds, now=now, not_since=not_since)
    if refused:
        raise refused[account.pk]


def _allowance_check(
    *,
    account: BankAccount,
    recent: list[tuple[int, str, datetime]],
    blocked_until: datetime | None,
    kinds: tuple[str, ...],
    now: datetime,
    not_since: datetime | None,
) -> None:
    """Raise RefreshRefused when the bank account is blocked, the planned refresh was done, or a kind's allowance
    is spent. ``recent``: the ledger of the bank account, (portal account, kind, reserved at)."""
    if blocked_until is not None and blocked_until > now:
        raise RefreshRefused("blocked", available_at=blocked_until)
    if not_since is not None and any(pk == account.pk and at >= not_since for pk, _kind, at in recent):
        raise RefreshRefused("already done")
    for kind in kinds:
        in_window = sorted(at for _pk, k, at in recent if k == kind and at > now - UNATTENDED_WINDOW)
        if len(in_window) >= UNATTENDED_CALLS_PER_DAY:
            raise RefreshRefused(
                f"{kind} allowance spent",
                available_at=in_window[-UNATTENDED_CALLS_PER_DAY] + UNATTENDED_WINDOW,
            )


def reserve_locked(
    *,
    claims: list[tuple[BankAccount, datetime | None]],
    kinds: tuple[str, ...],
    now: datetime,
    not_since: datetime | None,
) -> tuple[list[BankAccount], dict[int, RefreshRefused]]:
    """:func:`reserve` for several accounts once the rows of their bank accounts are locked in the caller's
    transaction; each claim is an account and its bank account's ``refresh_blocked_until``. Reads the ledger after
    the lock (a statement of its own, so that it sees the rows a worker that held the lock before us committed),
    and writes the reserved calls in one statement. Returns the accounts granted and the refusals by account."""
    if not claims:
        return [], {}
    since = now - UNATTENDED_WINDOW
    if not_since is not None:
        since = min(since, not_since)
    recent: dict[str, list[tuple[int, str, datetime]]] = defaultdict(list)
    keys = {RefreshCall.key_for(account) for account, _blocked in claims}
    ledger = RefreshCall.objects.filter(resource_key__in=sorted(keys), reserved_at__gte=since)
    for pk, key, kind, at in ledger.values_list("account_id", "resource_key", "kind", "reserved_at"):
        recent[key].append((pk, kind, at))
    granted: list[BankAccount] = []
    refused: dict[int, RefreshRefused] = {}
    rows: list[RefreshCall] = []
    for account, blocked_until in claims:
        key = RefreshCall.key_for(account)
        try:
            _allowance_check(
                account=account,
                recent=recent[key],
                blocked_until=blocked_until,
                kinds=kinds,
                now=now,
                not_since=not_since,
            )
        except RefreshRefused as exc:
            refused[account.pk] = exc
            continue
        for kind in kinds:  # two portal accounts of the batch on one bank account share its allowance
            rows.append(RefreshCall(account_id=account.pk, resource_key=key, kind=kind, reserved_at=now))
            recent[key].append((account.pk, kind, now))
        granted.append(account)
    RefreshCall.objects.bulk_create(rows)
    return granted, refused


def budget_available_at(*, account: BankAccount, now: datetime | None = None) -> datetime | None:
    """When the next unattended refresh (one call of each kind) fits the allowance; None when it fits now."""
    now = now or timezone.now()
    later = []
    for kind in (RefreshKind.BALANCES, RefreshKind.TRANSACTIONS):
        times = list(
            RefreshCall.objects.filter(
                resource_key=RefreshCall.key_for(account), kind=kind, reserved_at__gt=now - UNATTENDED_WINDOW
            )
            .order_by("-reserved_at")
            .values_list("reserved_at", flat=True)[:UNATTENDED_CALLS_PER_DAY]
        )
        if len(times) >= UNATTENDED_CALLS_PER_DAY:
            later.append(times[-1] + UNATTENDED_WINDOW)
    return max(later) if later else None


def prune(*, now: datetime | None = None, batch_size: int = PRUNE_BATCH) -> int:
    """Delete the ledger rows reserved more than UNATTENDED_WINDOW (24 hours) ago: nothing reads them (the
    allowance, the budget and the metrics count the window only), so the table holds one window of calls whatever
    the portal's age. By primary key in batches of ``batch_size`` found through the index on ``reserved_at``, each
    its own short statement; rows reserved meanwhile are never touched. Returns how many were deleted."""
    if batch_size < 1:
        raise ValueError("the batch size must be at least 1")
    cutoff = (now or timezone.now()) - UNATTENDED_WINDOW
    old = RefreshCall.objects.filter(reserved_at__lt=cutoff).order_by("reserved_at")
    deleted = 0
    while True:
        ids = list(old.values_list("id", flat=True)[:batch_size])
        if ids:
            deleted += RefreshCall.objects.filter(id__in=ids).delete()[0]
        if len(ids) < batch_size:
            break
    logger.info("unattended-call ledger pruned", extra={"deleted": deleted})
    return deleted


# --- the budget (the account pages) ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RefreshBudget:
    """The unattended-refresh allowance of one account (the bank's: 4 calls per kind per rolling 24 hours)."""

    used: int  # unattended calls in the last 24 hours, the larger of balances and transactions
    remaining: int
    limit: int
    next_due_at: datetime | None  # the next planned background refresh; None when none can be made now
    blocked_until: datetime | None  # after the bank answered 429: no background call before this


def refresh_budgets(*, account_ids: Iterable[int], now: datetime | None = None) -> dict[int, RefreshBudget]:
    """The refresh budget of each account in ``account_ids`` (two queries, whatever their number). Unknown ids
    are left out of the answer."""
    ids = list(account_ids)
    if not ids:
        return {}
    now = now or timezone.now()
    # An account that may not be refreshed (its connection needs reconnecting...) has no next refresh to show:
    # the planner parked it (accounts/planner.py) until a consent plans it again.
    live = ExpressionWrapper(
        Q(consented=True, connection__state=ConnectionState.ACTIVE, connection__access=ConnectionAccess.ACCOUNTS)
        & (Q(connection__consent_valid_until__isnull=True) | Q(connection__consent_valid_until__gt=now)),
        output_field=BooleanField(),
    )
    # The bank counts per bank account: portal accounts on the same one (two users of one agreement) share it.
    rows = list(
        BankAccount.objects.filter(pk__in=ids)
        .annotate(live=live)
        .values_list("pk", "kind", "resource_id", "next_refresh_at", "refresh_blocked_until", "live")
    )
    keys = {pk: f"{kind}:{resource_id}" for pk, kind, resource_id, *_rest in rows}
    used: dict[str, int] = {}
    counts = (
        RefreshCall.objects.filter(resource_key__in=set(keys.values()), reserved_at__gt=now - UNATTENDED_WINDOW)
        .values("resource_key", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in counts:
        used[row["resource_key"]] = max(used.get(row["resource_key"], 0), row["n"])
    budgets = {}
    for pk, _kind, _resource_id, next_due_at, blocked_until, refreshable in rows:
        spent = used.get(keys[pk], 0)
        budgets[pk] = RefreshBudget(
            used=spent,
            remaining=max(UNATTENDED_CALLS_PER_DAY - spent, 0),
            limit=UNATTENDED_CALLS_PER_DAY,
            next_due_at=next_due_at if refreshable else None,
            blocked_until=blocked_until if blocked_until is not None and blocked_until > now else None,
        )
    return budgets
