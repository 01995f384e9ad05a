"""Refreshing an account's balances and transactions: with the PSU present ("Refresh now") or unattended (the
background refresh planned by beat), within the bank's allowance (issue 6).

The bank (spec section 8) counts every request without PSU-IP-Address, every page included: at most
UNATTENDED_CALLS_PER_DAY per account per kind (balances, transactions) in a rolling 24 hours, then 429. The portal
keeps its own count in the database (``RefreshCall``, a ledger of reserved calls) and never asks beyond it:

- A call is reserved BEFORE it is made, in a short transaction that locks the account's rows
  (``select_for_update``) and counts the ledger, so several workers, a task delivered twice, or two planners
  cannot together spend more than the allowance. A reserved call counts whether or not it succeeded.
- No database transaction is held open across a bank call.
- A 429 from the bank all the same sets ``refresh_blocked_until`` (the bank's reset time, else the end of the
  24-hour window) on the account and stops further unattended calls until then.
- A 401 or a consent error marks the connection needs_reconnect (``connections.services.bank_problem``).

The planner (:func:`refresh_plan`, every few minutes from beat) claims the accounts whose ``next_refresh_at`` is
due, moves it REFRESH_INTERVAL (+ jitter) on, and enqueues one task per account after commit. Four refreshes in
24 hours at six-hour intervals fit the allowance; the ledger decides anyway.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from accounts import sync
from accounts.models import (
    UNATTENDED_CALLS_PER_DAY,
    UNATTENDED_WINDOW,
    AccountKind,
    BalanceSnapshot,
    BankAccount,
    RefreshCall,
    RefreshKind,
)
from accounts.services import balance_snapshots
from connections.models import BankConnection, ConnectionAccess, ConnectionState
from connections.services import ais_psu, bank_problem
from tpp_portal.bank import bank_audit_context, bank_audit_deferred, bank_client, client_config, record_bank_call
from xs2a.client import RetryPolicy, Xs2aClient
from xs2a.errors import AccessExceededError, ConsentError, ScaRequiredError, Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)

#: Time between two planned unattended refreshes of an account; with the jitter, 4 fit in 24 hours.
REFRESH_INTERVAL = timedelta(hours=6)
REFRESH_JITTER = timedelta(minutes=20)
#: Accounts claimed per planner statement (one short transaction each).
PLAN_BATCH = 500


# --- outcomes and errors -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshOutcome:
    ok: bool
    message: str
    balances: int = 0
    transactions_new: int = 0
    transactions_updated: int = 0
    calls: int = 0


class RefreshRefused(Exception):
    """The ledger refuses an unattended call: the allowance is spent, the account is blocked, or the planned
    refresh was already done (a task delivered twice). ``available_at``: when a call is allowed again."""

    def __init__(self, reason: str, available_at: datetime | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.available_at = available_at


# --- the ledger --------------------------------------------------------------------------------------------


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
        _reserve_locked(account=account, blocked=blocked, kinds=kinds, now=now, not_since=not_since)


def _reserve_locked(
    *,
    account: BankAccount,
    blocked: list[datetime | None],
    kinds: tuple[str, ...],
    now: datetime,
    not_since: datetime | None,
) -> None:
    """:func:`reserve` once the rows of the bank account are locked in the caller's transaction; ``blocked``:
    their ``refresh_blocked_until``. Reads the ledger after the lock (a statement of its own, so that it sees the
    rows a worker that held the lock before us committed)."""
    until = max((b for b in blocked if b is not None), default=None)
    if until is not None and until > now:
        raise RefreshRefused("blocked", available_at=until)
    key = RefreshCall.key_for(account)
    since = now - UNATTENDED_WINDOW
    if not_since is not None:
        since = min(since, not_since)
    recent = list(
        RefreshCall.objects.filter(resource_key=key, reserved_at__gte=since).values_list(
            "account_id", "kind", "reserved_at"
        )
    )
    if not_since is not None and any(pk == account.pk and at >= not_since for pk, _kind, at in recent):
        raise RefreshRefused("already done")
    for kind in kinds:
        in_window = sorted(at for _pk, k, at in recent if k == kind and at > now - UNATTENDED_WINDOW)
        if len(in_window) >= UNATTENDED_CALLS_PER_DAY:
            raise RefreshRefused(
                f"{kind} allowance spent",
                available_at=in_window[-UNATTENDED_CALLS_PER_DAY] + UNATTENDED_WINDOW,
            )
    RefreshCall.objects.bulk_create(
        RefreshCall(account_id=account.pk, resource_key=key, kind=kind, reserved_at=now) for kind in kinds
    )


def _claim(
    *, account_id: int, kinds: tuple[str, ...], now: datetime, not_since: datetime | None
) -> tuple[BankAccount | None, RefreshOutcome | None, RefreshRefused | None]:
    """The start of an unattended refresh, in one short transaction: lock the rows of every portal account on
    the account's bank account and read them with their connections (one statement), check that the account
    may be refreshed, and reserve its calls in the ledger (:func:`reserve`'s rules). Returns the account, the
    outcome to give when it may not be refreshed, and the ledger's refusal (nothing reserved in either case)."""
    with transaction.atomic():
        locked = _locked_with_connections(account_id)
        account = next((a for a in locked if a.pk == account_id), None)
        refusal = _not_refreshable(account, now=now, unattended=True)
        if refusal is not None:
            return account, refusal, None
        assert account is not None
        try:
            _reserve_locked(
                account=account,
                blocked=[a.refresh_blocked_until for a in locked],
                kinds=kinds,
                now=now,
                not_since=not_since,
            )
        except RefreshRefused as exc:
            return account, None, exc
    return account, None, None


def _locked_with_connections(account_id: int) -> list[BankAccount]:
    """Lock and read, in one statement, every portal account on the bank account of ``account_id`` (the bank
    counts per bank account) with its connection; by pk (the order every locker takes them in). The rows of the
    accounts only are locked (``FOR UPDATE OF``), not their connections; SQLite's transaction holds the
    database's write lock from its start instead."""
    same_bank_account = BankAccount.objects.filter(
        pk=account_id, kind=OuterRef("kind"), resource_id=OuterRef("resource_id")
    )
    return list(
        BankAccount.objects.select_for_update(of=("self",))
        .select_related("connection")
        .filter(Exists(same_bank_account))
        .order_by("pk")
    )


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


# --- the clients -------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def unattended_client() -> Xs2aClient:
    """A client that never repeats a request by itself: each unattended request was reserved in the ledger, and
    a retry the bank also counts (say after a lost answer) would be a call nobody reserved."""
    config = dataclasses.replace(client_config(), retry=RetryPolicy(max_attempts=1))
    return Xs2aClient(config, audit_hook=record_bank_call)


# --- refreshing one account --------------------------------------------------------------------------------


def _when(moment: datetime) -> str:
    return formats.date_format(timezone.localtime(moment), "DATETIME_FORMAT")


def _bank_text(error: Xs2aError) -> str:
    text = error.text
    return _("The bank said: %(text)s") % {"text": text} if text else ""


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _block(*, account: BankAccount, error: AccessExceededError, now: datetime) -> datetime:
    """After a 429: no unattended call on this bank account before the bank's reset (else a full window)."""
    until = error.reset_at
    if until is None and error.retry_after is not None:
        until = now + timedelta(seconds=error.retry_after)
    if until is None or until <= now:
        until = now + UNATTENDED_WINDOW
    BankAccount.objects.filter(kind=account.kind, resource_id=account.resource_id).update(
        refresh_blocked_until=until, next_refresh_at=until
    )
    account.refresh_blocked_until = until
    account.next_refresh_at = until
    return until


def _postpone(*, account: BankAccount, until: datetime) -> None:
    """The allowance is spent: plan the next unattended refresh for when it is not."""
    BankAccount.objects.filter(pk=account.pk).filter(
        Q(next_refresh_at__isnull=True) | Q(next_refresh_at__lt=until)
    ).update(next_refresh_at=until)
    account.next_refresh_at = max(until, account.next_refresh_at or until)


def account_refresh(
    *,
    account_id: int,
    presence: PsuContext | None = None,
    actor: Any = None,
    planned_at: datetime | None = None,
) -> RefreshOutcome:
    """Read the account's balances and new transactions from the bank and store them.

    ``presence`` None: unattended (the background refresh): each call is reserved in the ledger first, and the
    refresh is refused when the allowance is spent or the account is blocked after a 429. ``planned_at`` (from
    the planner) makes a repeated delivery of the same planned refresh do nothing. With ``presence`` the PSU is
    present: PSU-IP-Address is sent and nothing counts.
    """
    return _refresh(account_id=account_id, presence=presence, actor=actor, planned_at=planned_at, balances=True)


def transactions_refresh(*, account_id: int, presence: PsuContext, actor: Any = None) -> RefreshOutcome:
    """Only the transactions, with the PSU present (the overview's "Refresh now" reads the balances itself)."""
    return _refresh(account_id=account_id, presence=presence, actor=actor, planned_at=None, balances=False)


def _not_refreshable(account: BankAccount | None, *, now: datetime, unattended: bool) -> RefreshOutcome | None:
    """Why ``account`` (read with its connection) may not be refreshed now, as the outcome to give; else None."""
    if account is None:
        return RefreshOutcome(ok=False, message=_("The account is no longer connected."))
    connection = account.connection
    if (
        connection.state != ConnectionState.ACTIVE
        or connection.access != ConnectionAccess.ACCOUNTS
        or not account.consented
    ):
        return RefreshOutcome(ok=False, message=_("The account is not connected; reconnect the bank first."))
    if unattended and connection.consent_valid_until is not None and connection.consent_valid_until <= now:
        return RefreshOutcome(ok=False, message=_("The consent has expired; reconnect the bank."))
    return None


def _refresh(
    *,
    account_id: int,
    presence: PsuContext | None,
    actor: Any,
    planned_at: datetime | None,
    balances: bool,
) -> RefreshOutcome:
    now = timezone.now()
    unattended = presence is None
    refused: RefreshRefused | None = None
    if unattended:
        # The account is read, checked and its calls reserved in one short transaction (the rows locked).
        kinds = (RefreshKind.BALANCES, RefreshKind.TRANSACTIONS) if balances else (RefreshKind.TRANSACTIONS,)
        account, refusal, refused = _claim(account_id=account_id, kinds=kinds, now=now, not_since=planned_at)
    else:
        account = BankAccount.objects.select_related("connection").filter(pk=account_id).first()
        refusal = _not_refreshable(account, now=now, unattended=False)
    if refusal is not None:
        return refusal
    assert account is not None
    counts = {"balances": 0, "transactions_new": 0, "transactions_updated": 0, "calls": 0}
    if refused is not None:
        return _refused_outcome(account=account, refused=refused, counts=counts, now=now)
    connection = account.connection
    psu = ais_psu(connection, presence or PsuContext())
    client = unattended_client() if unattended else bank_client()
    calls = 0
    answer = None
    items: list[sync.Item] | None = None
    window = sync.sync_window(account=account, present=not unattended, today=now.date())
    error: Xs2aError | None = None

    def before_page(page: int) -> None:
        nonlocal calls
        # The first page was reserved with the refresh; each further page is one more counted call, reserved
        # before it is asked for (RefreshRefused stops the read: nothing of it is stored).
        if unattended:
            reserve(account=account, kinds=(RefreshKind.TRANSACTIONS,))
        calls += 1

    # The audit rows (one per bank call) are written with the answer, in its transaction; when nothing is
    # stored (a refusal, a bank error), when the block ends.
    with bank_audit_deferred() as flush_audit:
        try:
            with bank_audit_context(user=actor, obj=account):
                if balances:
                    calls += 1
                    service = client.card_accounts if account.kind == AccountKind.CARD else client.accounts
                    answer = service.balances(account.resource_id, psu=psu)
                calls += 1  # the first page of transactions
                items = sync.fetch_pages(
                    client=client, account=account, psu=psu, window=window, before_page=before_page
                )
        except RefreshRefused as exc:
            refused = exc
        except Xs2aError as exc:
            error = exc

        result = None
        snapshots: list[BalanceSnapshot] = []
        if answer is not None or items is not None:
            stored_at = timezone.now()
            # One short transaction for the whole answer, after the bank calls. The account row is updated
            # (locked) first, before any insert that refers to it.
            with transaction.atomic():
                updates = {"balances_refreshed_at": stored_at} if answer is not None else {}
                if items is not None:  # moves the cursor and sets ``updates`` in its first statement
                    result = sync.store_locked(
                        account=account, items=items, window=window, now=stored_at, updates=updates
                    )
                else:
                    BankAccount.objects.filter(pk=account.pk).update(**updates)
                    account.balances_refreshed_at = stored_at
                if answer is not None:
                    snapshots = BalanceSnapshot.objects.bulk_create(balance_snapshots(account, answer, stored_at))
                flush_audit()

    counts = {
        "balances": len(snapshots),
        "transactions_new": result.new if result else 0,
        "transactions_updated": result.updated if result else 0,
        "calls": calls,
    }
    if refused is not None:
        return _refused_outcome(account=account, refused=refused, counts=counts, now=now)
    if error is not None:
        return _error_outcome(
            account=account,
            connection=connection,
            error=error,
            actor=actor,
            counts=counts,
            now=now,
            unattended=unattended,
        )
    return RefreshOutcome(ok=True, message=_("Balances and transactions refreshed."), **counts)


def _refused_outcome(
    *, account: BankAccount, refused: RefreshRefused, counts: dict[str, int], now: datetime
) -> RefreshOutcome:
    if refused.reason == "already done":
        return RefreshOutcome(ok=True, message=_("This refresh was already done."), **counts)
    if refused.reason == "blocked":
        assert refused.available_at is not None
        message = _("The bank's limit for automatic refreshes is reached; they resume after %(when)s.") % {
            "when": _when(refused.available_at)
        }
        return RefreshOutcome(ok=False, message=message, **counts)
    available_at = refused.available_at or budget_available_at(account=account, now=now) or now
    _postpone(account=account, until=available_at)
    message = _(
        "The automatic refreshes allowed by the bank for 24 hours are used up (%(limit)s); the next one is after "
        "%(when)s. Use Refresh now to read the account while you are signed in."
    ) % {"limit": UNATTENDED_CALLS_PER_DAY, "when": _when(available_at)}
    return RefreshOutcome(ok=False, message=message, **counts)


def _error_outcome(
    *,
    account: BankAccount,
    connection: BankConnection,
    error: Xs2aError,
    actor: Any,
    counts: dict[str, int],
    now: datetime,
    unattended: bool,
) -> RefreshOutcome:
    if isinstance(error, AccessExceededError):
        if unattended:
            until = _block(account=account, error=error, now=now)
            logger.warning("bank refused an unattended refresh (429)", extra={"account_id": account.pk})
        else:
            until = error.reset_at
        message = (
            _("The bank's limit is reached; try again after %(when)s.") % {"when": _when(until)}
            if until
            else _("The bank's limit is reached; try again later.")
        )
        return RefreshOutcome(ok=False, message=_join(message, _bank_text(error)), **counts)
    bank_problem(connection=connection, error=error, actor=actor)
    if isinstance(error, ScaRequiredError | ConsentError):
        message = _("The bank asks you to confirm your consent again. Use Reconnect.")
    else:
        message = _("The bank did not answer as expected. Please try again later.")
    return RefreshOutcome(ok=False, message=_join(message, _bank_text(error)), **counts)


def transactions_refresh_for_user(*, user: Any, presence: PsuContext) -> list[RefreshOutcome]:
    """The transactions of every consented account of the user's active connections, with the PSU present."""
    ids = (
        BankAccount.objects.filter(
            connection__user=user,
            connection__state=ConnectionState.ACTIVE,
            connection__access=ConnectionAccess.ACCOUNTS,
            consented=True,
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return [transactions_refresh(account_id=pk, presence=presence, actor=user) for pk in ids]


# --- planning ------------------------------------------------------------------------------------------------


def _next_time(now: datetime, rng: random.Random) -> datetime:
    return now + REFRESH_INTERVAL + timedelta(seconds=rng.uniform(0, REFRESH_JITTER.total_seconds()))


def _refreshable() -> Any:
    return BankAccount.objects.filter(
        consented=True,
        connection__state=ConnectionState.ACTIVE,
        connection__access=ConnectionAccess.ACCOUNTS,
    )


def refresh_plan(*, now: datetime | None = None, enqueue: Any = None, rng: random.Random | None = None) -> int:
    """Claim the accounts whose unattended refresh is due and enqueue one task each (after commit).

    Accounts never planned get a first time spread over the next REFRESH_INTERVAL. Claiming moves
    ``next_refresh_at`` on in the same transaction that locks the rows (``skip_locked``: a second planner running
    at the same moment takes other rows, or none), so each due time is enqueued once. Returns the number
    enqueued.
    """
    from accounts.tasks import refresh_account

    now = now or timezone.now()
    rng = rng or random.Random()  # noqa: S311 - spreading times, not a secret
    enqueue = enqueue or (lambda pk, planned: refresh_account.delay(pk, planned.isoformat()))
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
            transaction.on_commit(lambda ids=claimed: [enqueue(pk, now) for pk in ids])
        enqueued += len(claimed)
        if len(claimed) < PLAN_BATCH:
            break
    return enqueued


def refresh_due(*, account_id: int, planned_at: datetime) -> RefreshOutcome:
    """The task's work: one planned unattended refresh (idempotent: a second delivery finds it done)."""
    return account_refresh(account_id=account_id, presence=None, actor=None, planned_at=planned_at)
