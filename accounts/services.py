"""Writes about bank connections: starting SCA, accepting its callback, fetching accounts and balances,
reconnecting and disconnecting.

Rules kept here:

- Every change of ``BankConnection.state`` goes through :func:`connection_transition` (a conditional UPDATE plus
  a ``ConnectionEvent`` row); an illegal move raises ``IllegalTransition``.
- No bank call inside ``transaction.atomic``: the intent is saved first (the ``ScaState``, the pending
  connection), the bank is called in autocommit mode, and the answer is stored in a short transaction after.
- Every bank call runs in ``bank_audit_context`` naming the user and the connection it concerns.
- An SCA state is single-use: :func:`sca_state_consume` marks it used with a conditional UPDATE, so a replayed
  or concurrent callback finds nothing to consume.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from accounts import crypto
from accounts.crypto import lookup_hash
from accounts.models import (
    CONSENT_REMINDER_DAYS,
    CONSENT_VALIDITY,
    SCA_STATE_LIFETIME,
    AccountKind,
    BalanceSnapshot,
    BankAccount,
    BankConnection,
    ConnectionAccess,
    ConnectionEvent,
    ConnectionState,
    ConsentReminder,
    PsuContextChoice,
    ScaPurpose,
    ScaState,
)
from tpp_portal.bank import bank_audit_context, bank_client
from xs2a import models as bank_models
from xs2a.errors import AccessExceededError, ConsentError, ScaRequiredError, Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)

S = ConnectionState

#: The moves a connection may make; anything else is refused. "" is "no connection yet".
CONNECTION_TRANSITIONS: dict[str, frozenset[str]] = {
    "": frozenset({S.PENDING}),
    # A pending connection may be renewed by another SCA before its accounts were fetched.
    S.PENDING: frozenset({S.PENDING, S.ACTIVE, S.NEEDS_RECONNECT, S.DISCONNECTED}),
    S.ACTIVE: frozenset({S.PENDING, S.NEEDS_RECONNECT, S.DISCONNECTED}),
    S.NEEDS_RECONNECT: frozenset({S.PENDING, S.DISCONNECTED}),
    S.DISCONNECTED: frozenset(),
}


# --- domain errors -----------------------------------------------------------------------------------------


class ConnectionServiceError(Exception):
    """Base of the domain errors of this module."""


class IllegalTransition(ConnectionServiceError):
    """The connection cannot move to that state (from its current one, or it changed meanwhile)."""


class ScaStateRejected(ConnectionServiceError):
    """The callback's tpp-session-id is unknown, foreign, used or expired. ``reason`` says which (for logs and
    tests); the page shown does not tell a stranger whether a state exists."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IdentityMismatch(ConnectionServiceError):
    """The SCA was done as another bank user (or agreement) than the one being reconnected."""


class BankStartFailed(ConnectionServiceError):
    """The bank did not give a usable scaRedirect link."""


# --- outcomes ----------------------------------------------------------------------------------------------


class FetchProblem:
    NEEDS_RECONNECT = "needs_reconnect"  # 401 with scaRedirect, or a consent error
    LIMIT = "limit"  # 429 / ACCESS_EXCEEDED
    UNAVAILABLE = "unavailable"  # any other bank failure (network, 5xx, unexpected answer)


@dataclass(frozen=True)
class FetchOutcome:
    connection: BankConnection
    accounts: int = 0
    balances: int = 0
    problem: str | None = None
    retry_at: datetime | None = None
    request_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class CallbackParams:
    """The success parameters of the redirect after SCA (spec section 6), already checked for form."""

    tpp_session_id: str
    psu_id: str
    context: str
    psu_corporate_id: str | None = None


# --- state transitions -------------------------------------------------------------------------------------


def connection_transition(
    *,
    connection: BankConnection,
    to: str,
    actor: Any,
    reason: str,
    fields: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> BankConnection:
    """Move ``connection`` to ``to`` (with ``fields`` saved in the same UPDATE) and append the event."""
    now = now or timezone.now()
    source = connection.state
    if to not in CONNECTION_TRANSITIONS.get(source, frozenset()):
        raise IllegalTransition(f"a connection cannot move from {source or 'nothing'} to {to}")
    fields = dict(fields or {})
    with transaction.atomic():
        updated = BankConnection.objects.filter(pk=connection.pk, state=source).update(
            state=to, updated_at=now, **fields
        )
        if updated != 1:
            raise IllegalTransition(f"connection {connection.pk} is no longer {source}")
        ConnectionEvent.objects.create(
            connection=connection,
            actor=_user_or_none(actor),
            at=now,
            from_state=source,
            to_state=to,
            reason=reason,
        )
    connection.state = to
    connection.updated_at = now
    for name, value in fields.items():
        setattr(connection, name, value)
    return connection


def _connection_create(*, user: Any, reason: str, now: datetime, **fields: Any) -> BankConnection:
    """A new pending connection and its first event (inside the caller's transaction)."""
    connection = BankConnection.objects.create(user=user, state=S.PENDING, **fields)
    ConnectionEvent.objects.create(
        connection=connection, actor=_user_or_none(user), at=now, from_state="", to_state=S.PENDING, reason=reason
    )
    return connection


def _user_or_none(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


# --- starting SCA ------------------------------------------------------------------------------------------


def session_key_hash(session_key: str | None) -> str:
    if not session_key:
        raise ValueError("a saved browser session is needed to start SCA")
    return hashlib.sha256(session_key.encode("ascii")).hexdigest()


def _new_token() -> str:
    return secrets.token_urlsafe(32)  # 256 random bits; the issue asks for at least 128


def _check_redirect(href: str | None) -> str:
    parts = urlsplit(href or "")
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise BankStartFailed("the bank's answer holds no usable scaRedirect link")
    return href or ""


def sca_start(
    *,
    user: Any,
    session_key: str | None,
    purpose: str,
    context: str,
    presence: PsuContext,
    connection: BankConnection | None = None,
    agreement: bank_models.Agreement | None = None,
) -> str:
    """Store a fresh SCA state and ask the bank to start SCA with it; returns the scaRedirect address.

    CONNECT: bank-offered consent in ``context``. USERS: /v1/users (the PSU-ID only, payment-only journey).
    RECONNECT: a new consent for ``connection``, with its PSU-ID (and PSU-Corporate-ID) so the bank asks for
    the same person; the old consent stays in use until the callback succeeds. AGREEMENT: a consent for the
    corporate ``agreement`` listed with ``connection``'s PSU-ID.
    Raises ``Xs2aError`` (the bank refused or failed) or ``BankStartFailed``.
    """
    if purpose not in ScaPurpose.values or context not in PsuContextChoice.values:
        raise ValueError(f"unknown SCA purpose or context: {purpose!r}, {context!r}")
    if purpose in (ScaPurpose.RECONNECT, ScaPurpose.AGREEMENT) and (connection is None or not connection.psu_id):
        raise ValueError(f"{purpose} needs a connection with a PSU-ID")
    if purpose == ScaPurpose.AGREEMENT and agreement is None:
        raise ValueError("an agreement is needed")
    state = ScaState.objects.create(  # saved before the bank is called
        token=_new_token(),
        user=user,
        session_key_hash=session_key_hash(session_key),
        purpose=purpose,
        context=PsuContextChoice.CORPORATE if purpose == ScaPurpose.AGREEMENT else context,
        connection=connection,
        agreement_name=((agreement.name or "") if agreement else "")[:140],
        agreement_id_hash=lookup_hash(agreement.id) if agreement else "",
        created_at=timezone.now(),
    )
    identity: dict[str, Any] = {"context": state.context, "tpp_session_id": state.token}
    if purpose == ScaPurpose.RECONNECT and connection is not None:
        identity.update(psu_id=connection.psu_id, corporate_id=connection.psu_corporate_id or None)
    elif purpose == ScaPurpose.AGREEMENT and connection is not None and agreement is not None:
        identity.update(psu_id=connection.psu_id, corporate_id=agreement.id)
    psu = dataclasses.replace(presence, **identity)
    try:
        with bank_audit_context(user=user, obj=connection):
            client = bank_client()
            if purpose == ScaPurpose.USERS:
                answer = client.consents.users(psu=psu, tpp_session_id=state.token)
            else:
                answer = client.consents.start(psu=psu, tpp_session_id=state.token)
        return _check_redirect(answer.sca_redirect)
    except (Xs2aError, BankStartFailed):
        ScaState.objects.filter(pk=state.pk, used_at__isnull=True).update(used_at=timezone.now())
        raise


# --- the callback ------------------------------------------------------------------------------------------


def sca_state_consume(*, token: str, user: Any, session_key: str | None, now: datetime | None = None) -> ScaState:
    """Mark the state used, once: only for its user, in its browser session, unused and not expired."""
    now = now or timezone.now()
    if not session_key or not getattr(user, "is_authenticated", False):
        raise ScaStateRejected("no session")
    mine = ScaState.objects.filter(token=token, user=user, session_key_hash=session_key_hash(session_key))
    consumed = mine.filter(used_at__isnull=True, created_at__gt=now - SCA_STATE_LIFETIME).update(used_at=now)
    if consumed == 1:
        return ScaState.objects.select_related("connection").get(token=token)
    state = mine.first()
    if state is None:
        raise ScaStateRejected("unknown")  # never started, or another user's, or another session's
    if state.used_at is not None:
        raise ScaStateRejected("used")
    raise ScaStateRejected("expired")


def sca_callback_accept(
    *, user: Any, session_key: str | None, params: CallbackParams, presence: PsuContext
) -> tuple[BankConnection, FetchOutcome | None]:
    """Accept a successful SCA redirect: consume the state, store the PSU identity (encrypted) and the context,
    then fetch the consented accounts and balances with the PSU present.

    Raises ``ScaStateRejected`` or ``IdentityMismatch``; nothing is stored then (the state stays used).
    """
    now = timezone.now()
    state = sca_state_consume(token=params.tpp_session_id, user=user, session_key=session_key, now=now)
    corporate_id = params.psu_corporate_id if params.context == PsuContextChoice.CORPORATE else None
    psu_hash = lookup_hash(params.psu_id)
    corporate_hash = lookup_hash(corporate_id)
    target = state.connection
    if state.purpose == ScaPurpose.RECONNECT:
        if target is None or (target.psu_id_hash, target.psu_corporate_id_hash) != (psu_hash, corporate_hash):
            raise IdentityMismatch("the SCA was done as another bank user or agreement")
    if state.purpose == ScaPurpose.AGREEMENT and (
        corporate_hash != state.agreement_id_hash or target is None or target.psu_id_hash != psu_hash
    ):
        raise IdentityMismatch("the SCA was done for another agreement or bank user")

    access = ConnectionAccess.PAYMENTS if state.purpose == ScaPurpose.USERS else ConnectionAccess.ACCOUNTS
    identity = {
        "context": params.context,
        "psu_id": params.psu_id,
        "psu_id_hash": psu_hash,
        "psu_corporate_id": corporate_id or "",
        "psu_corporate_id_hash": corporate_hash,
        "sca_at": now,
    }
    if access == ConnectionAccess.ACCOUNTS:
        identity["consent_valid_until"] = now + CONSENT_VALIDITY
    if state.agreement_name:
        identity["agreement_name"] = state.agreement_name
    try:
        with transaction.atomic():
            existing = (
                BankConnection.objects.select_for_update()
                .filter(user=user, psu_id_hash=psu_hash, psu_corporate_id_hash=corporate_hash)
                .exclude(state=S.DISCONNECTED)
                .first()
            )
            if existing is None:
                connection = _connection_create(
                    user=user, access=access, reason="SCA completed: new connection", now=now, **identity
                )
            elif access == ConnectionAccess.PAYMENTS:
                # /v1/users for an identity already connected: the PSU-ID is the same, nothing to renew.
                return existing, None
            else:
                connection = connection_transition(
                    connection=existing,
                    to=S.PENDING,
                    actor=user,
                    reason="SCA completed again: consent renewed",
                    fields={**identity, "access": ConnectionAccess.ACCOUNTS},
                    now=now,
                )
            if access == ConnectionAccess.PAYMENTS:
                connection_transition(
                    connection=connection, to=S.ACTIVE, actor=user, reason="PSU identified for payments", now=now
                )
                return connection, None
    except IntegrityError:  # the same identity connected twice at the same moment
        raise ScaStateRejected("concurrent") from None

    if connection.is_corporate and not connection.agreement_name:
        _agreement_name_fill(connection=connection, user=user, presence=presence)
    outcome = connection_fetch_accounts(
        connection=connection, presence=presence, actor=user, tpp_session_id=state.token
    )
    return connection, outcome


def _agreement_name_fill(*, connection: BankConnection, user: Any, presence: PsuContext) -> None:
    """The name of the agreement chosen at the bank's screen, from /v1/agreements (shown on the page only)."""
    psu = dataclasses.replace(presence, psu_id=connection.psu_id)
    try:
        with bank_audit_context(user=user, obj=connection):
            agreements = bank_client().consents.agreements(psu=psu)
    except Xs2aError as exc:  # the name is cosmetic: the connection works without it
        logger.warning(
            "agreement name not read", extra={"connection_id": connection.pk, "error": type(exc).__name__}
        )
        return
    for agreement in agreements:
        if lookup_hash(agreement.id) == connection.psu_corporate_id_hash and agreement.name:
            connection.agreement_name = agreement.name[:140]
            BankConnection.objects.filter(pk=connection.pk).update(agreement_name=connection.agreement_name)
            return


# --- account information -----------------------------------------------------------------------------------


def _ais_psu(connection: BankConnection, presence: PsuContext, tpp_session_id: str | None = None) -> PsuContext:
    return dataclasses.replace(
        presence,
        psu_id=connection.psu_id,
        corporate_id=connection.psu_corporate_id or None,
        tpp_session_id=tpp_session_id,
    )


def _bank_problem(*, connection: BankConnection, error: Xs2aError, actor: Any, fetched: int = 0) -> FetchOutcome:
    """Turn a bank error into an outcome; a consent problem marks the connection as needing a reconnect."""
    if isinstance(error, ScaRequiredError | ConsentError):
        if connection.state in (S.PENDING, S.ACTIVE):
            reason = f"the bank asked for SCA again ({error.code or error.status})"
            try:
                connection_transition(
                    connection=connection, to=S.NEEDS_RECONNECT, actor=actor, reason=reason[:200]
                )
            except IllegalTransition:
                connection.refresh_from_db(fields=["state"])
        return FetchOutcome(connection, problem=FetchProblem.NEEDS_RECONNECT, request_id=error.request_id)
    if isinstance(error, AccessExceededError):
        return FetchOutcome(
            connection, problem=FetchProblem.LIMIT, retry_at=error.reset_at, request_id=error.request_id
        )
    logger.warning(
        "bank call failed",
        extra={"connection_id": connection.pk, "error": type(error).__name__, "x_request_id": error.request_id},
    )
    return FetchOutcome(connection, problem=FetchProblem.UNAVAILABLE, request_id=error.request_id)


def connection_fetch_accounts(
    *, connection: BankConnection, presence: PsuContext, actor: Any, tpp_session_id: str | None = None
) -> FetchOutcome:
    """Read the consented accounts (and card accounts) and their balances with the PSU present, and store them.

    Accounts no longer in the consent are kept with ``consented=False``. A pending connection becomes active.
    """
    psu = _ais_psu(connection, presence, tpp_session_id)
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
        return _bank_problem(connection=connection, error=error, actor=actor)

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
        BankConnection.objects.filter(pk=connection.pk).update(accounts_fetched_at=now)
        connection.accounts_fetched_at = now
        if connection.state == S.PENDING:
            connection_transition(
                connection=connection, to=S.ACTIVE, actor=actor, reason="consented accounts fetched", now=now
            )
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
    psu = _ais_psu(connection, presence)
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
        return _bank_problem(connection=connection, error=error, actor=actor)
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


# --- disconnecting -----------------------------------------------------------------------------------------


def connection_disconnect(*, connection: BankConnection, actor: Any) -> BankConnection:
    """Remove the connection's PSU identifiers, accounts and balances; keep its timeline.

    The consent at the bank is not revoked: the spec leaves that to the PSU, directly with the bank.
    """
    with transaction.atomic():
        BankAccount.objects.filter(connection=connection).delete()  # balances go with them (CASCADE)
        ScaState.objects.filter(connection=connection, used_at__isnull=True).update(used_at=timezone.now())
        return connection_transition(
            connection=connection,
            to=S.DISCONNECTED,
            actor=actor,
            reason="disconnected by the user",
            fields={
                "psu_id": "",
                "psu_id_hash": "",
                "psu_corporate_id": "",
                "psu_corporate_id_hash": "",
                "consent_valid_until": None,
                "accounts_fetched_at": None,
            },
        )


# --- key rotation ------------------------------------------------------------------------------------------


def field_encryption_rotate(*, batch_size: int = 500) -> int:
    """Re-encrypt every encrypted field of every model (crypto.encrypted_fields: PSU identifiers of connections
    and payments ...) with the first of FIELD_ENCRYPTION_KEYS; returns the rows rewritten."""
    rotated = 0
    for model, fields in crypto.encrypted_fields().items():
        names = [field.name for field in fields]
        manager = model._default_manager
        ids = list(manager.order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(ids), batch_size):
            with transaction.atomic():
                rows = manager.select_for_update().filter(pk__in=ids[start : start + batch_size])
                for pk, *values in rows.values_list("pk", *names):
                    # values_list decrypts; write back through the field, which encrypts with the first key.
                    manager.filter(pk=pk).update(**dict(zip(names, values, strict=True)))
                    rotated += 1
    return rotated


# --- consent expiry reminders ------------------------------------------------------------------------------

#: A claim whose mail was never confirmed (the sender died) may be taken over after this long.
REMINDER_CLAIM_TIMEOUT = timedelta(hours=1)


def _reminder_due(remaining: timedelta) -> int | None:
    """The most urgent threshold (days) that ``remaining`` has reached, or None when none has."""
    for days in CONSENT_REMINDER_DAYS:
        if remaining <= timedelta(days=days):
            return days
    return None


def _reminder_claim(*, connection: BankConnection, days: int, now: datetime) -> ConsentReminder | None:
    """Claim the reminder (a row, unique per consent and threshold); None when already sent or held."""
    assert connection.consent_valid_until is not None
    try:
        with transaction.atomic():
            return ConsentReminder.objects.create(
                connection=connection,
                consent_valid_until=connection.consent_valid_until,
                days_before=days,
                claimed_at=now,
            )
    except IntegrityError:
        pass
    stale = ConsentReminder.objects.filter(
        connection=connection,
        consent_valid_until=connection.consent_valid_until,
        days_before=days,
        sent_at__isnull=True,
        claimed_at__lt=now - REMINDER_CLAIM_TIMEOUT,
    )
    if stale.update(claimed_at=now) == 1:  # the earlier sender never finished
        return ConsentReminder.objects.get(
            connection=connection, consent_valid_until=connection.consent_valid_until, days_before=days
        )
    return None


def consent_reminders_send(*, now: datetime | None = None) -> int:
    """Mail the owners of consents that expire within 14, 7 or 1 days (once per consent and threshold; when a
    run was missed only the most urgent reminder goes out). Returns the number of mails sent.

    Safe to run concurrently and repeatedly. A mail that fails is logged and retried by the next run.
    """
    now = now or timezone.now()
    horizon = now + timedelta(days=max(CONSENT_REMINDER_DAYS))
    candidates = (
        BankConnection.objects.filter(
            state__in=(S.ACTIVE, S.NEEDS_RECONNECT),
            access=ConnectionAccess.ACCOUNTS,
            consent_valid_until__gt=now,
            consent_valid_until__lte=horizon,
        )
        .select_related("user")
        .order_by("pk")
    )
    sent = 0
    for connection in candidates:
        assert connection.consent_valid_until is not None
        days = _reminder_due(connection.consent_valid_until - now)
        if days is None or not connection.user.email:
            continue
        if ConsentReminder.objects.filter(
            connection=connection,
            consent_valid_until=connection.consent_valid_until,
            days_before__lte=days,
            sent_at__isnull=False,
        ).exists():
            continue  # this or a more urgent reminder about this consent already went out
        reminder = _reminder_claim(connection=connection, days=days, now=now)
        if reminder is None:
            continue
        context = {
            "connection": connection,
            "days": days,
            "portal_base_url": settings.PORTAL_BASE_URL,
            "user": connection.user,
        }
        subject = "".join(render_to_string("accounts/email/consent_reminder_subject.txt", context).splitlines())
        body = render_to_string("accounts/email/consent_reminder.txt", context)
        try:
            send_mail(subject, body, None, [connection.user.email])
        except OSError:
            logger.exception("consent reminder not sent", extra={"connection_id": connection.pk})
            ConsentReminder.objects.filter(pk=reminder.pk, sent_at__isnull=True).delete()  # the next run retries
            continue
        ConsentReminder.objects.filter(pk=reminder.pk).update(sent_at=timezone.now())
        sent += 1
    return sent
