"""Refreshing an account's balances and transactions: with the PSU present ("Refresh now") or unattended (the
background refresh planned by accounts/planner.py), within the bank's allowance (issue 6).

- Every unattended call is reserved in the ledger (accounts/ledger.py) before it is made; a refused reservation
  stops the refresh.
- No database transaction is held open across a bank call.
- A 429 from the bank all the same sets ``refresh_blocked_until`` (the bank's reset time, else the end of the
  24-hour window) on the account and stops further unattended calls until then.
- A 401 or a consent error marks the connection needs_reconnect (``connections.services.bank_problem``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from accounts import sync
from accounts.ledger import RefreshRefused, budget_available_at, reserve, reserve_locked
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
from connections.outcomes import FetchOutcome, FetchProblem
from connections.services import ais_psu, bank_problem
from core.bank import bank_audit_context, bank_audit_deferred, bank_client, unattended_bank_client
from xs2a import models as bank_models
from xs2a.client import Xs2aClient
from xs2a.errors import AccessExceededError, ConsentError, ScaRequiredError, Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)


# --- outcomes ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefreshOutcome:
    ok: bool
    message: str
    balances: int = 0
    transactions_new: int = 0
    transactions_updated: int = 0
    calls: int = 0


# --- claiming the accounts of an unattended refresh --------------------------------------------------------


def _claim(
    *, account_ids: list[int], kinds: tuple[str, ...], now: datetime, not_since: datetime | None
) -> tuple[list[BankAccount], dict[int, RefreshOutcome], dict[int, tuple[BankAccount, RefreshRefused]]]:
    """The start of an unattended refresh of several accounts, in one short transaction: lock the rows of every
    portal account on their bank accounts and read them with their connections (one statement), check that each
    account may be refreshed, and reserve their calls in the ledger (``accounts.ledger.reserve``'s rules; one
    read and one write). Returns the accounts granted, the outcomes of those that may not be refreshed, and the
    ledger's refusals (nothing reserved for either)."""
    with transaction.atomic():
        locked = _locked_with_connections(account_ids)
        by_pk = {a.pk: a for a in locked}
        blocked: dict[str, datetime | None] = {}
        for a in locked:
            key, until = RefreshCall.key_for(a), a.refresh_blocked_until
            blocked[key] = max((b for b in (blocked.get(key), until) if b is not None), default=None)
        outcomes: dict[int, RefreshOutcome] = {}
        claims: list[tuple[BankAccount, datetime | None]] = []
        for pk in dict.fromkeys(account_ids):
            account = by_pk.get(pk)
            refusal = _not_refreshable(account, now=now, unattended=True)
            if refusal is not None:
                outcomes[pk] = refusal
                continue
            assert account is not None
            claims.append((account, blocked[RefreshCall.key_for(account)]))
        granted, refused = reserve_locked(claims=claims, kinds=kinds, now=now, not_since=not_since)
    return granted, outcomes, {pk: (by_pk[pk], exc) for pk, exc in refused.items()}


def _locked_with_connections(account_ids: list[int]) -> list[BankAccount]:
    """Lock and read every portal account on the bank accounts of ``account_ids`` (the bank counts per bank
    account) with its connection; by pk (the order every locker takes them in). The rows of the accounts only
    are locked (``FOR UPDATE OF``), not their connections; SQLite's transaction holds the database's write lock
    from its start instead."""
    return list(_on_their_bank_accounts(account_ids).select_for_update(of=("self",)))


def _on_their_bank_accounts(account_ids: list[int]) -> QuerySet[BankAccount]:
    """Every portal account on the bank accounts of ``account_ids``, with its connection, by pk.

    Two statements, each through an index whatever the table's size: the bank accounts of ``account_ids`` by pk
    (read here), then the rows on them by (kind, resource_id). (In one statement, SQLite tests a correlated EXISTS
    on every row of the table: 90 ms a task at 10 000 accounts.)"""
    resources: dict[str, set[str]] = defaultdict(set)
    for kind, resource_id in BankAccount.objects.filter(pk__in=account_ids).values_list("kind", "resource_id"):
        resources[kind].add(resource_id)
    if not resources:
        return BankAccount.objects.none()
    on_them = Q()
    for kind, resource_ids in sorted(resources.items()):
        on_them |= Q(kind=kind, resource_id__in=sorted(resource_ids))
    return BankAccount.objects.select_related("connection").filter(on_them).order_by("pk")


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
    return _refresh(
        account_ids=[account_id], presence=presence, actor=actor, planned_at=planned_at, balances=True
    )[account_id]


def transactions_refresh(*, account_id: int, presence: PsuContext, actor: Any = None) -> RefreshOutcome:
    """Only the transactions, with the PSU present (the overview's "Refresh now" reads the balances itself)."""
    return _refresh(account_ids=[account_id], presence=presence, actor=actor, planned_at=None, balances=False)[
        account_id
    ]


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


@dataclass
class _Read:
    """What the bank answered about one account of a refresh."""

    account: BankAccount
    window: sync.SyncWindow
    calls: int = 0
    answer: bank_models.AccountBalances | None = None
    items: list[sync.Item] | None = None
    error: Xs2aError | None = None
    refused: RefreshRefused | None = None
    stored: bool = False
    snapshots: int = 0
    result: sync.SyncResult | None = None


def _read(
    *, account: BankAccount, client: Xs2aClient, presence: PsuContext | None, actor: Any, balances: bool, now
) -> _Read:
    """The bank calls of one account: its balances (when asked) and every page of its transactions."""
    unattended = presence is None
    window = sync.sync_window(account=account, present=not unattended, today=now.date())
    read = _Read(account=account, window=window)
    psu = ais_psu(account.connection, presence or PsuContext())

    def before_page(page: int) -> None:
        # The first page was reserved with the refresh; each further page is one more counted call, reserved
        # before it is asked for (RefreshRefused stops the read: nothing of it is stored).
        if unattended:
            reserve(account=account, kinds=(RefreshKind.TRANSACTIONS,))
        read.calls += 1

    try:
        with bank_audit_context(user=actor, obj=account):
            if balances:
                read.calls += 1
                service = client.card_accounts if account.kind == AccountKind.CARD else client.accounts
                read.answer = service.balances(account.resource_id, psu=psu)
            read.calls += 1  # the first page of transactions
            read.items = sync.fetch_pages(
                client=client, account=account, psu=psu, window=read.window, before_page=before_page
            )
    except RefreshRefused as exc:
        read.refused = exc
    except Xs2aError as exc:
        read.error = exc
    return read


def _store(reads: list[_Read], *, now: datetime) -> None:
    """Store what the bank answered about several accounts, in a few statements whatever their number (inside the
    caller's transaction): the accounts' rows locked by pk and updated (refresh times, cursors: one UPDATE per
    distinct read), their transactions (accounts/sync.py), their balance snapshots."""
    reads = [r for r in reads if r.answer is not None or r.items is not None]
    if not reads:
        return
    pks = sorted(r.account.pk for r in reads)
    locking = BankAccount.objects.select_for_update().filter(pk__in=pks).order_by("pk")
    alive = set(locking.values_list("pk", flat=True))
    reads = [r for r in reads if r.account.pk in alive]  # an account removed meanwhile (disconnected): dropped
    # The accounts whose rows take the same values (in a task, usually all: the same reads of the same window) in
    # one plain UPDATE each; bulk_update's CASE over every row cost the worker more than a bank call's signing.
    alike: dict[tuple[bool, sync.SyncWindow | None], list[BankAccount]] = defaultdict(list)
    for read in reads:
        alike[(read.answer is not None, read.window if read.items is not None else None)].append(read.account)
        read.stored = True
    for (balances_read, window), accounts in alike.items():
        fields: dict[str, Any] = {"balances_refreshed_at": now} if balances_read else {}
        if window is not None:
            fields.update(sync.cursor_fields(window=window, now=now))
        BankAccount.objects.filter(pk__in=[a.pk for a in accounts]).update(**fields)
        for account in accounts:
            for name, value in fields.items():
                if hasattr(value, "resolve_expression"):  # computed by the database: read again when next used
                    account.__dict__.pop(name, None)
                else:
                    setattr(account, name, value)
    entries = [sync.Entry(account=r.account, items=r.items, window=r.window) for r in reads if r.items is not None]
    results = sync.store_transactions(entries=entries, now=now)
    snapshots: list[BalanceSnapshot] = []
    for read in reads:
        read.result = results.get(read.account.pk)
        if read.answer is not None:
            rows = balance_snapshots(read.account, read.answer, now)
            read.snapshots = len(rows)
            snapshots += rows
    BalanceSnapshot.objects.bulk_create(snapshots)


def _refresh(
    *,
    account_ids: list[int],
    presence: PsuContext | None,
    actor: Any,
    planned_at: datetime | None,
    balances: bool,
) -> dict[int, RefreshOutcome]:
    """Refresh several accounts: claim them (unattended: the ledger), read each from the bank, then store every
    answer in one short transaction with the audit rows of the calls. No transaction is open during a bank
    call. Returns the outcome of each account."""
    now = timezone.now()
    unattended = presence is None
    refused: dict[int, tuple[BankAccount, RefreshRefused]] = {}
    if unattended:
        # The accounts are read, checked and their calls reserved in one short transaction (the rows locked).
        kinds = (RefreshKind.BALANCES, RefreshKind.TRANSACTIONS) if balances else (RefreshKind.TRANSACTIONS,)
        granted, outcomes, refused = _claim(account_ids=account_ids, kinds=kinds, now=now, not_since=planned_at)
    else:
        found = {a.pk: a for a in BankAccount.objects.select_related("connection").filter(pk__in=account_ids)}
        granted, outcomes = [], {}
        for pk in dict.fromkeys(account_ids):
            refusal = _not_refreshable(found.get(pk), now=now, unattended=False)
            if refusal is not None:
                outcomes[pk] = refusal
            else:
                granted.append(found[pk])
    for pk, (account, exc) in refused.items():
        outcomes[pk] = _refused_outcome(account=account, refused=exc, counts=_counts(None), now=now)
    client = unattended_bank_client() if unattended else bank_client()
    # The audit rows (one per bank call) are written with the answers, in their transaction; when nothing is
    # stored, when the block ends.
    with bank_audit_deferred() as flush_audit:
        reads = [
            _read(account=account, client=client, presence=presence, actor=actor, balances=balances, now=now)
            for account in granted
        ]
        with transaction.atomic():
            _store(reads, now=timezone.now())
            flush_audit()
    if unattended:
        # Each task opens its own connections to the bank: a keep-alive connection stays with the server process
        # (or the load balancer's backend) that accepted it, so a worker that kept one for good would keep its
        # whole share of the refresh on one of the bank's processes however busy that one is.
        client.close()
    for read in reads:
        outcomes[read.account.pk] = _outcome(read, actor=actor, now=now, unattended=unattended)
    return outcomes


def _counts(read: _Read | None) -> dict[str, int]:
    return {
        "balances": read.snapshots if read else 0,
        "transactions_new": read.result.new if read and read.result else 0,
        "transactions_updated": read.result.updated if read and read.result else 0,
        "calls": read.calls if read else 0,
    }


def _outcome(read: _Read, *, actor: Any, now: datetime, unattended: bool) -> RefreshOutcome:
    counts = _counts(read)
    if read.refused is not None:
        return _refused_outcome(account=read.account, refused=read.refused, counts=counts, now=now)
    if read.error is not None:
        return _error_outcome(
            account=read.account,
            connection=read.account.connection,
            error=read.error,
            actor=actor,
            counts=counts,
            now=now,
            unattended=unattended,
        )
    if not read.stored:
        return RefreshOutcome(ok=False, message=_("The account is no longer connected."), **counts)
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


def _readable_account_ids(**of: Any) -> list[int]:
    """The consented accounts of active connections with account access (narrowed by ``of``), in order."""
    return list(
        BankAccount.objects.filter(
            connection__state=ConnectionState.ACTIVE,
            connection__access=ConnectionAccess.ACCOUNTS,
            consented=True,
            **of,
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def transactions_refresh_for_user(*, user: Any, presence: PsuContext) -> list[RefreshOutcome]:
    """The transactions of every consented account of the user's active connections, with the PSU present."""
    ids = _readable_account_ids(connection__user=user)
    if not ids:
        return []
    outcomes = _refresh(account_ids=ids, presence=presence, actor=user, planned_at=None, balances=False)
    return [outcomes[pk] for pk in ids]


def connection_read_transactions(
    *, connection: BankConnection, presence: PsuContext, actor: Any, tpp_session_id: str | None = None
) -> FetchOutcome:
    """A consent was just granted (connections.plugins.on_consent_granted, after the accounts were read): read the
    transactions of the connection's accounts at once, while the PSU is present (PSU-IP-Address sent, so nothing
    counts against the bank's allowance of unattended calls), so that the account pages show them without
    "Refresh now". A connection that did not become active (no account chosen, a bank error) is left alone."""
    ids = _readable_account_ids(connection=connection)
    if not ids:
        return FetchOutcome(connection)
    outcomes = _refresh(account_ids=ids, presence=presence, actor=actor, planned_at=None, balances=False)
    failed = [outcomes[pk] for pk in ids if not outcomes[pk].ok]
    if not failed:
        return FetchOutcome(connection, accounts=len(ids))
    message = _(
        "Your bank is connected, but its transactions could not be read yet: %(reason)s Use Refresh now on the "
        "account's page."
    ) % {"reason": failed[0].message}
    return FetchOutcome(
        connection, accounts=len(ids) - len(failed), problem=FetchProblem.INCOMPLETE, message=message
    )


def refresh_due(*, account_ids: list[int], planned_at: datetime) -> dict[int, RefreshOutcome]:
    """The task's work: the planned unattended refresh of ``account_ids`` (idempotent: a second delivery finds
    them done)."""
    return _refresh(account_ids=account_ids, presence=None, actor=None, planned_at=planned_at, balances=True)
