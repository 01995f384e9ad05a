"""Writes about bank accounts: reading a connection's consented accounts and balances with the PSU present, the
details of one transaction while the user looks at it, the available balance of an account while the user is
present, and removing them when the connection ends. (Transactions and the unattended refresh: accounts/sync.py
and accounts/refresh.py.)

- No bank call inside ``transaction.atomic``: the bank is called in autocommit mode, and the answer is stored in
  a short transaction after.
- Every bank call runs in ``bank_audit_context`` naming the user and the connection it concerns.
- The connection is the connections app's: its state moves only through ``connections.services``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from accounts.models import (
    TRANSACTION_DETAILS_FRESH,
    AccountKind,
    BalanceSnapshot,
    BankAccount,
    Transaction,
    TransactionStatus,
)
from accounts.planner import plan_accounts
from connections.models import BankConnection, ConnectionAccess, ConnectionState
from connections.outcomes import FetchOutcome, FetchProblem
from connections.services import ais_psu, bank_problem, connection_activate, connection_without_accounts
from core.bank import bank_audit_context, bank_client
from xs2a import models as bank_models
from xs2a.errors import Xs2aError
from xs2a.psu import PsuContext

S = ConnectionState


def connection_fetch_accounts(
    *, connection: BankConnection, presence: PsuContext, actor: Any, tpp_session_id: str | None = None
) -> FetchOutcome:
    """Read the consented accounts (and card accounts) and their balances with the PSU present, and store them.

    Accounts no longer in the consent are kept with ``consented=False``. A pending connection becomes active;
    one whose consent covers no account at all is not connected (``FetchProblem.NO_ACCOUNTS``).
    """
    psu = ais_psu(connection, presence, tpp_session_id)
    try:
        with bank_audit_context(user=actor, obj=connection):
            client = bank_client()
            accounts = client.accounts.list(psu=psu)
            cards = client.card_accounts.list(psu=psu)
            balances = {
                (AccountKind.ACCOUNT, a.resource_id): client.accounts.balances(a.resource_id, psu=psu)
                for a in accounts
            }
            balances.update(
                {
                    (AccountKind.CARD, c.resource_id): client.card_accounts.balances(c.resource_id, psu=psu)
                    for c in cards
                }
            )
    except Xs2aError as error:
        return bank_problem(connection=connection, error=error, actor=actor)

    now = timezone.now()
    rows = [(AccountKind.ACCOUNT, _account_fields(a)) for a in accounts]
    rows += [(AccountKind.CARD, _card_fields(c)) for c in cards]
    with transaction.atomic():
        kept: list[int] = []
        stored: dict[tuple[str, str], BankAccount] = {}
        for kind, values in rows:
            account, _created = BankAccount.objects.update_or_create(
                connection=connection,
                kind=kind,
                resource_id=values.pop("resource_id"),
                defaults={**values, "consented": True},
            )
            kept.append(account.pk)
            stored[(kind, account.resource_id)] = account
        BankAccount.objects.filter(connection=connection).exclude(pk__in=kept).update(consented=False)
        count = _balances_store(stored, balances, now)
        if not stored:
            connection_without_accounts(connection=connection, actor=actor, now=now)
            return FetchOutcome(connection, problem=FetchProblem.NO_ACCOUNTS)
        connection_activate(
            connection=connection, actor=actor, reason=gettext_noop("consented accounts fetched"), now=now
        )
        plan_accounts(account_ids=kept, now=now)  # the planner may have parked them while the consent was missing
    return FetchOutcome(connection, accounts=len(stored), balances=count)


def _account_fields(account: bank_models.Account) -> dict[str, Any]:
    return {
        "resource_id": account.resource_id,
        "iban": (account.iban or "")[:34],
        "bban": (account.bban or "")[:30],
        "masked_pan": "",
        "currency": (account.currency or "")[:3],
        "name": (account.name or "")[:70],
        "product": (account.product or "")[:70],
        "cash_account_type": (account.cash_account_type or "")[:10],
    }


def _card_fields(card: bank_models.CardAccount) -> dict[str, Any]:
    return {
        "resource_id": card.resource_id,
        "iban": "",
        "bban": "",
        "masked_pan": (card.masked_pan or "")[:35],
        "currency": (card.currency or "")[:3],
        "name": (card.name or "")[:70],
        "product": (card.product or "")[:70],
        "cash_account_type": "",
    }


def balance_snapshots(
    account: BankAccount, answer: bank_models.AccountBalances, now: datetime
) -> list[BalanceSnapshot]:
    """The balance snapshots of one answer: one row per balance type (the unique constraint)."""
    rows: dict[str, BalanceSnapshot] = {}
    for balance in answer.balances:
        rows.setdefault(
            balance.balance_type,
            BalanceSnapshot(
                account=account,
                balance_type=balance.balance_type[:40],
                amount=balance.balance_amount.amount,
                currency=balance.balance_amount.currency[:3],
                reference_date=balance.reference_date,
                fetched_at=now,
            ),
        )
    return list(rows.values())


def _balances_store(
    accounts: dict[tuple[str, str], BankAccount],
    balances: dict[tuple[str, str], bank_models.AccountBalances],
    now: datetime,
) -> int:
    """Snapshots of one fetch (inside the caller's transaction); the accounts' refresh time moves to ``now``."""
    snapshots = []
    for key, account in accounts.items():
        answer = balances.get(key)
        if answer is None:
            continue
        snapshots += balance_snapshots(account, answer, now)
        account.balances_refreshed_at = now
    BalanceSnapshot.objects.bulk_create(snapshots)
    BankAccount.objects.filter(pk__in=[a.pk for a in accounts.values()]).update(balances_refreshed_at=now)
    return len(snapshots)


def connection_refresh_balances(*, connection: BankConnection, presence: PsuContext, actor: Any) -> FetchOutcome:
    """The balances of the connection's consented accounts, with the PSU present ("Refresh now": it does not
    count against the bank's unattended limit)."""
    if connection.state != S.ACTIVE or connection.access != ConnectionAccess.ACCOUNTS:
        return FetchOutcome(connection)
    accounts = {
        (a.kind, a.resource_id): a for a in BankAccount.objects.filter(connection=connection, consented=True)
    }
    psu = ais_psu(connection, presence)
    try:
        with bank_audit_context(user=actor, obj=connection):
            client = bank_client()
            balances = {
                (kind, rid): (
                    client.card_accounts.balances(rid, psu=psu)
                    if kind == AccountKind.CARD
                    else client.accounts.balances(rid, psu=psu)
                )
                for kind, rid in accounts
            }
    except Xs2aError as error:
        return bank_problem(connection=connection, error=error, actor=actor)
    with transaction.atomic():
        count = _balances_store(accounts, balances, timezone.now())
    return FetchOutcome(connection, accounts=len(accounts), balances=count)


def balances_refresh_for_user(*, user: Any, presence: PsuContext) -> list[FetchOutcome]:
    """The "Refresh now" button of the accounts overview: the balances of every active account-information
    connection of ``user``; a pending one (accounts not fetched after its SCA, e.g. the bank was down) gets its
    accounts fetched."""
    connections: Iterable[BankConnection] = BankConnection.objects.filter(
        user=user, state__in=(S.ACTIVE, S.PENDING), access=ConnectionAccess.ACCOUNTS
    ).order_by("pk")
    return [
        connection_refresh_balances(connection=c, presence=presence, actor=user)
        if c.state == S.ACTIVE
        else connection_fetch_accounts(connection=c, presence=presence, actor=user)
        for c in connections
    ]


def connection_accounts_remove(*, connection: BankConnection) -> None:
    """The connection ended: its accounts go, with their balances and transactions (CASCADE)."""
    BankAccount.objects.filter(connection=connection).delete()


# --- one transaction's details, read while the user looks at it ---------------------------------------------


class DetailsProblem:
    """Why the bank's details of a transaction were not read just now (FetchProblem values, and these)."""

    NEEDS_RECONNECT = (
        FetchProblem.NEEDS_RECONNECT
    )  # the consent must be given again (or the connection is not live)
    LIMIT = FetchProblem.LIMIT  # the bank's limit (429)
    UNAVAILABLE = FetchProblem.UNAVAILABLE  # any other bank failure: the error is in the audit log
    PENDING = "pending"  # the bank gives details of booked transactions only


@dataclass(frozen=True)
class TransactionDetails:
    """The bank's details record of a transaction: read now, or kept from a read less than
    TRANSACTION_DETAILS_FRESH ago (``record`` None when the bank gave none); ``problem`` says why it was not
    read now when it should have been."""

    record: dict[str, Any] | None = None
    read_at: datetime | None = None
    problem: str | None = None


def _kept_details(tx: Transaction) -> dict[str, Any] | None:
    """The stored details, when they are of this transaction (a row's id can change from pending to booked)."""
    record = tx.details
    if not isinstance(record, dict) or tx.details_read_at is None:
        return None
    if record.get("transactionId") not in (None, tx.transaction_id):
        return None
    return record


def transaction_details_read(
    *, transaction: Transaction, presence: PsuContext, actor: Any, now: datetime | None = None
) -> TransactionDetails:
    """The bank's details of a booked transaction (GET /v1/accounts/{id}/transactions/{transactionId}) with the
    PSU present: PSU-IP-Address is sent, so the read never counts against the unattended allowance. Details read
    less than TRANSACTION_DETAILS_FRESH ago are given without asking the bank. A successful read is stored on
    the row with its time; a failed one changes nothing there (a consent error marks the connection for
    reconnecting, as every read does) and gives the details kept from an earlier read, if any."""
    now = now or timezone.now()
    kept = _kept_details(transaction)
    if kept is not None and transaction.details_read_at > now - TRANSACTION_DETAILS_FRESH:
        return TransactionDetails(record=kept, read_at=transaction.details_read_at)
    account = transaction.account
    earlier = TransactionDetails(record=kept, read_at=transaction.details_read_at if kept is not None else None)
    if account.kind != AccountKind.ACCOUNT:
        return earlier  # the bank has no details endpoint for card accounts
    if transaction.status != TransactionStatus.BOOKED:
        return TransactionDetails(record=kept, read_at=earlier.read_at, problem=DetailsProblem.PENDING)
    if not transaction.transaction_id:
        return earlier  # nothing to name the transaction by
    connection = account.connection
    if (
        connection.state != ConnectionState.ACTIVE
        or connection.access != ConnectionAccess.ACCOUNTS
        or not account.consented
    ):
        return TransactionDetails(record=kept, read_at=earlier.read_at, problem=DetailsProblem.NEEDS_RECONNECT)
    psu = ais_psu(connection, presence)
    try:
        with bank_audit_context(user=actor, obj=transaction):
            answer = bank_client().accounts.transaction_details(
                account.resource_id, transaction.transaction_id, psu=psu
            )
    except Xs2aError as error:
        outcome = bank_problem(connection=connection, error=error, actor=actor)
        return TransactionDetails(record=kept, read_at=earlier.read_at, problem=outcome.problem)
    record = json.loads(json.dumps(dict(answer.raw), default=str))
    read_at = timezone.now()
    Transaction.objects.filter(pk=transaction.pk).update(details=record, details_read_at=read_at)
    transaction.details, transaction.details_read_at = record, read_at
    return TransactionDetails(record=record, read_at=read_at)


# --- the available balance of an account, read while the user is present (payments' review page) ----------

#: The balance types that say what can be spent now, in the order they are preferred: the bank's available
#: balance of the moment, else its expected balance (booked and pending items counted).
AVAILABLE_BALANCE_TYPES = ("interimAvailable", "expected")


@dataclass(frozen=True)
class AvailableBalance:
    """What the bank says can be spent from an account now: ``amount`` None when the bank's answer had no
    available balance, or ``problem`` (a FetchProblem value) when the bank could not be asked."""

    amount: Decimal | None = None
    currency: str = ""
    balance_type: str = ""
    read_at: datetime | None = None
    problem: str | None = None


def account_available_balance_read(*, account: BankAccount, presence: PsuContext, actor: Any) -> AvailableBalance:
    """The account's balances read from the bank with the PSU present (PSU-IP-Address: it never counts against
    the unattended allowance) and stored as the account's latest balances; the first of
    AVAILABLE_BALANCE_TYPES the bank gave is returned."""
    connection = account.connection
    if (
        connection.state != ConnectionState.ACTIVE
        or connection.access != ConnectionAccess.ACCOUNTS
        or not account.consented
        or account.kind != AccountKind.ACCOUNT
    ):
        return AvailableBalance(problem=FetchProblem.NEEDS_RECONNECT)
    psu = ais_psu(connection, presence)
    try:
        with bank_audit_context(user=actor, obj=account):
            answer = bank_client().accounts.balances(account.resource_id, psu=psu)
    except Xs2aError as error:
        return AvailableBalance(problem=bank_problem(connection=connection, error=error, actor=actor).problem)
    now = timezone.now()
    with transaction.atomic():
        _balances_store(
            {(account.kind, account.resource_id): account}, {(account.kind, account.resource_id): answer}, now
        )
    by_type = {b.balance_type: b for b in answer.balances}
    for balance_type in AVAILABLE_BALANCE_TYPES:
        balance = by_type.get(balance_type)
        if balance is not None:
            return AvailableBalance(
                amount=balance.balance_amount.amount,
                currency=balance.balance_amount.currency,
                balance_type=balance_type,
                read_at=now,
            )
    return AvailableBalance(read_at=now)
