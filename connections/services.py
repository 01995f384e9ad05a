"""Writes about bank connections: establishing and renewing connections, the bank's verdict on a connection,
disconnecting, consent expiry, key rotation and consent reminders. Starting SCA and checking the redirect back
are connections/sca.py's; the user's TPP-Session-ID is connections/sessions.py's.

Rules kept here:

- Every change of ``BankConnection.state`` goes through :func:`connection_transition` (a conditional UPDATE plus
  a ``ConnectionEvent`` row); an illegal move raises ``IllegalTransition``.
- No bank call inside ``transaction.atomic``: the intent is saved first (the pending connection), the bank is
  called in autocommit mode, and the answer is stored in a short transaction after.
- Every bank call runs in ``bank_audit_context`` naming the user and the connection it concerns.
- A connection is made only from a redirect that passed every check of ``connections.sca.sca_return_accept``.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import gettext_noop

from connections import crypto, plugins
from connections.crypto import lookup_hash
from connections.errors import IdentityMismatch, IllegalTransition, ScaStateRejected
from connections.models import (
    CONSENT_REMINDER_DAYS,
    CONSENT_VALIDITY,
    BankConnection,
    ConnectionAccess,
    ConnectionEvent,
    ConnectionState,
    ConsentReminder,
    PsuContextChoice,
    ScaPurpose,
    ScaState,
)
from connections.outcomes import FetchOutcome, FetchProblem, ScaReturn
from connections.sca import identity_mismatch_record
from core.bank import bank_audit_context, bank_client
from xs2a.errors import (
    AccessExceededError,
    ConsentDeletionNotOfferedError,
    ConsentError,
    ConsentUnknownError,
    ScaRequiredError,
    Xs2aError,
)
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


def connection_activate(*, connection: BankConnection, actor: Any, reason: str, now: datetime) -> BankConnection:
    """The bank confirmed the connection by answering with it (its accounts read): a pending connection becomes
    active, and the time its accounts were read is kept. Inside the caller's transaction."""
    BankConnection.objects.filter(pk=connection.pk).update(accounts_fetched_at=now)
    connection.accounts_fetched_at = now
    if connection.state == S.PENDING:
        connection_transition(connection=connection, to=S.ACTIVE, actor=actor, reason=reason, now=now)
    return connection


def connection_without_accounts(*, connection: BankConnection, actor: Any, now: datetime) -> BankConnection:
    """The bank answered with the connection's consent and it covers no account (none was ticked at the bank's
    screen, or the bank no longer lists them): nothing is connected. The connection asks for a new consent
    (NEEDS_RECONNECT) instead of showing as connected. Inside the caller's transaction."""
    BankConnection.objects.filter(pk=connection.pk).update(accounts_fetched_at=now)
    connection.accounts_fetched_at = now
    if connection.state in (S.PENDING, S.ACTIVE):
        connection_transition(
            connection=connection,
            to=S.NEEDS_RECONNECT,
            actor=actor,
            reason=gettext_noop("the bank's consent covers no account"),
            now=now,
        )
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


# --- establishing a connection -----------------------------------------------------------------------------


def connection_establish(*, sca_return: ScaReturn) -> BankConnection:
    """A connection from a confirmed redirect of the purposes CONNECT, RECONNECT, AGREEMENT or USERS: a new one, or
    the same identity's renewed (pending until the bank answers with it). USERS (the PSU-ID only, for payments)
    is active at once: the bank asks the PSU's own SCA for every payment made with it.

    Raises ``IdentityMismatch`` (recorded) when a reconnect or an agreement was done as someone else.
    """
    state, user, now = sca_return.state, sca_return.user, sca_return.at
    psu_hash = lookup_hash(sca_return.psu_id)
    corporate_hash = lookup_hash(sca_return.corporate_id)
    target = state.connection
    if state.purpose == ScaPurpose.RECONNECT and (
        target is None or (target.psu_id_hash, target.psu_corporate_id_hash) != (psu_hash, corporate_hash)
    ):
        identity_mismatch_record(sca_return=sca_return, detail="reconnect done as another bank user or agreement")
        raise IdentityMismatch("the SCA was done as another bank user or agreement")
    if state.purpose == ScaPurpose.AGREEMENT and (
        corporate_hash != state.agreement_id_hash or target is None or target.psu_id_hash != psu_hash
    ):
        identity_mismatch_record(sca_return=sca_return, detail="agreement consent for another agreement or user")
        raise IdentityMismatch("the SCA was done for another agreement or bank user")

    access = ConnectionAccess.PAYMENTS if state.purpose == ScaPurpose.USERS else ConnectionAccess.ACCOUNTS
    identity = {
        "context": sca_return.context,
        "psu_id": sca_return.psu_id,
        "psu_id_hash": psu_hash,
        "psu_corporate_id": sca_return.corporate_id or "",
        "psu_corporate_id_hash": corporate_hash,
        "sca_at": now,
    }
    if access == ConnectionAccess.ACCOUNTS:
        identity["consent_valid_until"] = now + CONSENT_VALIDITY
    if sca_return.agreement_name:
        identity["agreement_name"] = sca_return.agreement_name
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
                    user=user,
                    access=access,
                    reason=gettext_noop("SCA completed: new connection"),
                    now=now,
                    **identity,
                )
            elif access == ConnectionAccess.PAYMENTS:
                # /v1/users for an identity already connected: the PSU-ID is the same, nothing to renew.
                return existing
            else:
                connection = connection_transition(
                    connection=existing,
                    to=S.PENDING,
                    actor=user,
                    reason=gettext_noop("SCA completed again: consent renewed"),
                    fields={**identity, "access": ConnectionAccess.ACCOUNTS},
                    now=now,
                )
            if access == ConnectionAccess.PAYMENTS:
                connection_transition(
                    connection=connection,
                    to=S.ACTIVE,
                    actor=user,
                    reason=gettext_noop("PSU identified for payments"),
                    now=now,
                )
    except IntegrityError:  # the same identity connected twice at the same moment
        raise ScaStateRejected("concurrent") from None
    return connection


def connection_keep_for_payments(*, user: Any, psu_id: str, now: datetime) -> BankConnection:
    """Single SCA: keep the PSU-ID the bank made (already bound to ``user`` by the callback's checks) as a payments
    connection of the user, for next time. Inside the caller's transaction."""
    psu_hash = lookup_hash(psu_id)
    corporate_hash = lookup_hash(None)
    existing = (
        BankConnection.objects.select_for_update()
        .filter(user=user, psu_id_hash=psu_hash, psu_corporate_id_hash=corporate_hash)
        .exclude(state=S.DISCONNECTED)
        .first()
    )
    if existing is not None:
        return existing
    connection = _connection_create(
        user=user,
        reason=gettext_noop("PSU-ID made by the bank in a single SCA payment"),
        now=now,
        context=PsuContextChoice.PRIVATE,
        access=ConnectionAccess.PAYMENTS,
        psu_id=psu_id,
        psu_id_hash=psu_hash,
        psu_corporate_id="",
        psu_corporate_id_hash=corporate_hash,
        sca_at=now,
    )
    return connection_transition(
        connection=connection, to=S.ACTIVE, actor=user, reason=gettext_noop("PSU identified for payments"), now=now
    )


# --- using a connection ------------------------------------------------------------------------------------


def ais_psu(connection: BankConnection, presence: PsuContext, tpp_session_id: str | None = None) -> PsuContext:
    """The PSU headers of an account-information call made with ``connection``."""
    return dataclasses.replace(
        presence,
        psu_id=connection.psu_id,
        corporate_id=connection.psu_corporate_id or None,
        tpp_session_id=tpp_session_id,
    )


def bank_problem(*, connection: BankConnection, error: Xs2aError, actor: Any) -> FetchOutcome:
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


# --- disconnecting -----------------------------------------------------------------------------------------


class ConsentEnd:
    """What became of the consent at the bank when a connection was removed."""

    ENDED = "ended"  # the bank ended it (or no longer knew it)
    NOT_OFFERED = "not_offered"  # the bank offers no way for the TPP to end it: the PSU ends it at the bank
    UNAVAILABLE = "unavailable"  # the bank did not answer as it should: the consent may still be alive
    NONE = "none"  # nothing to end (a payments-only connection, or none was given)


def _consent_end(*, connection: BankConnection, actor: Any, presence: PsuContext) -> str:
    """Ask the bank to end the connection's consent (DELETE /v1/bank-offered-consents), the PSU present."""
    if (
        connection.access != ConnectionAccess.ACCOUNTS
        or not connection.psu_id
        or connection.consent_valid_until is None
    ):
        return ConsentEnd.NONE
    psu = dataclasses.replace(ais_psu(connection, presence), context=connection.context, tpp_session_id=None)
    try:
        with bank_audit_context(user=actor, obj=connection):
            bank_client().consents.delete(psu=psu)
    except ConsentDeletionNotOfferedError:
        return ConsentEnd.NOT_OFFERED
    except ConsentUnknownError:
        return ConsentEnd.ENDED  # revoked at the bank already, or expired
    except Xs2aError as exc:
        logger.warning(
            "consent not ended at the bank", extra={"connection_id": connection.pk, "error": type(exc).__name__}
        )
        return ConsentEnd.UNAVAILABLE
    return ConsentEnd.ENDED


_DISCONNECT_REASONS = {
    ConsentEnd.ENDED: gettext_noop("disconnected by the user; the bank ended the consent"),
    ConsentEnd.NOT_OFFERED: gettext_noop(
        "disconnected by the user; the bank offers no way to end the consent from here"
    ),
    ConsentEnd.UNAVAILABLE: gettext_noop(
        "disconnected by the user; the bank could not be asked to end the consent"
    ),
    ConsentEnd.NONE: gettext_noop("disconnected by the user"),
}


def connection_disconnect(*, connection: BankConnection, actor: Any, presence: PsuContext) -> str:
    """End the connection's consent at the bank where the bank allows it, then remove the connection's PSU
    identifiers and what other apps kept for it (accounts, balances); keep its timeline. The PSU-ID stays bound to
    the user (``PsuBinding``). Returns what became of the consent (``ConsentEnd``), for the user to be told."""
    ended = _consent_end(connection=connection, actor=actor, presence=presence)
    with transaction.atomic():
        plugins.connection_ended(connection=connection)
        ScaState.objects.filter(connection=connection, used_at__isnull=True).update(used_at=timezone.now())
        connection_transition(
            connection=connection,
            to=S.DISCONNECTED,
            actor=actor,
            reason=_DISCONNECT_REASONS[ended],
            fields={
                "psu_id": "",
                "psu_id_hash": "",
                "psu_corporate_id": "",
                "psu_corporate_id_hash": "",
                "consent_valid_until": None,
                "accounts_fetched_at": None,
            },
        )
    return ended


# --- consent expiry ----------------------------------------------------------------------------------------


def consents_expire(*, now: datetime | None = None) -> int:
    """Mark connections whose consent has passed its validity as needing a reconnect (beat, hourly). Returns
    how many were marked; safe to run twice (a connection already moved is skipped)."""
    now = now or timezone.now()
    expired = BankConnection.objects.filter(
        state__in=(S.ACTIVE, S.PENDING),
        access=ConnectionAccess.ACCOUNTS,
        consent_valid_until__lte=now,
    ).order_by("pk")
    marked = 0
    for connection in expired:
        try:
            connection_transition(
                connection=connection,
                to=S.NEEDS_RECONNECT,
                actor=None,
                reason=gettext_noop("the consent expired (180 days after its SCA)"),
                now=now,
            )
        except IllegalTransition:
            continue  # moved meanwhile (another run, a reconnect)
        marked += 1
    return marked


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
        subject = "".join(render_to_string("connections/email/consent_reminder_subject.txt", context).splitlines())
        body = render_to_string("connections/email/consent_reminder.txt", context)
        try:
            send_mail(subject, body, None, [connection.user.email])
        except OSError:
            logger.exception("consent reminder not sent", extra={"connection_id": connection.pk})
            ConsentReminder.objects.filter(pk=reminder.pk, sent_at__isnull=True).delete()  # the next run retries
            continue
        ConsentReminder.objects.filter(pk=reminder.pk).update(sent_at=timezone.now())
        sent += 1
    return sent
