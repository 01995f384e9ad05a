"""Writes about bank connections: starting SCA, accepting the identity its redirect claims once the bank
confirms it, establishing and renewing connections, the bank's verdict on a connection, disconnecting, key
rotation and consent reminders.

Rules kept here:

- Every change of ``BankConnection.state`` goes through :func:`connection_transition` (a conditional UPDATE plus
  a ``ConnectionEvent`` row); an illegal move raises ``IllegalTransition``.
- No bank call inside ``transaction.atomic``: the intent is saved first (the ``ScaState``, the pending
  connection), the bank is called in autocommit mode, and the answer is stored in a short transaction after.
- Every bank call runs in ``bank_audit_context`` naming the user and the connection it concerns.
- An SCA state is single-use: :func:`sca_state_consume` marks it used with a conditional UPDATE, so a replayed
  or concurrent callback finds nothing to consume. Only a successful redirect consumes it.
- A redirect's query string is a claim. A PSU-ID is believed only when the bank confirms it in the SCA's own
  TPP-Session-ID (an attended read: the bank answers it only for the PSU who authenticated in that session), and
  only then bound to the user. A PSU-ID belongs to one portal user (``PsuBinding``, a unique constraint): another
  user presenting it is refused. A PSU-Corporate-ID is believed only when the bank lists it among the PSU's
  agreements. Each refusal is kept in ``IdentityRefusal`` for staff.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from connections import crypto, plugins
from connections.crypto import lookup_hash
from connections.models import (
    CONSENT_REMINDER_DAYS,
    CONSENT_VALIDITY,
    SCA_STATE_LIFETIME,
    TPP_SESSION_LIFETIME,
    TPP_SESSION_MARGIN,
    BankConnection,
    ConnectionAccess,
    ConnectionEvent,
    ConnectionState,
    ConsentReminder,
    IdentityRefusal,
    PsuBinding,
    PsuContextChoice,
    ScaPurpose,
    ScaState,
    TppSession,
)
from tpp_portal.bank import bank_audit_context, bank_client, callback_uri
from xs2a import models as bank_models
from xs2a.errors import (
    AccessExceededError,
    ClientError,
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
    """The SCA was done as another bank user (or agreement) than the one expected (reconnect, a co-signer)."""


class IdentityRefused(ConnectionServiceError):
    """The identity the redirect claims is not believed: the PSU-ID is another portal user's, the bank does not
    confirm it in the SCA's session, or the bank does not list the PSU-Corporate-ID among the PSU's agreements.
    Recorded in ``IdentityRefusal``; ``reason`` is its reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IdentityUnconfirmed(ConnectionServiceError):
    """The bank could not be asked to confirm the identity (it failed or did not answer); nothing is stored."""


class BankStartFailed(ConnectionServiceError):
    """The bank did not give a usable scaRedirect link."""


class AppApprovalNotOffered(BankStartFailed):
    """Approval in the bank's app was asked for (TPP-Redirect-Preferred: false) and the bank answered without a
    scaRedirect. A connection cannot be made that way: the PSU-ID only ever comes back in the redirect."""


# --- outcomes ----------------------------------------------------------------------------------------------


class FetchProblem:
    NEEDS_RECONNECT = "needs_reconnect"  # 401 with scaRedirect, or a consent error
    LIMIT = "limit"  # 429 / ACCESS_EXCEEDED
    UNAVAILABLE = "unavailable"  # any other bank failure (network, 5xx, unexpected answer)
    NO_ACCOUNTS = "no_accounts"  # the bank answered with the consent, and it covers no account
    INCOMPLETE = "incomplete"  # connected, but part of what is read with the new consent could not be read


@dataclass(frozen=True)
class FetchOutcome:
    """What the bank answered when a connection was used (accounts read, balances refreshed ...)."""

    connection: BankConnection
    accounts: int = 0
    balances: int = 0
    problem: str | None = None
    retry_at: datetime | None = None
    request_id: str | None = None
    message: str = ""  # the reader's own words for the user about the problem (INCOMPLETE), translated

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class CallbackParams:
    """The success parameters of the redirect after SCA (spec section 6), already checked for form: the UUIDs
    in their canonical lower-case form."""

    tpp_session_id: str
    psu_id: str
    context: str
    psu_corporate_id: str | None = None
    #: The per-redirect state the portal put in this SCA's TPP-Redirect-URI (the bank returns it untouched).
    state: str = ""


@dataclass(frozen=True)
class ScaReturn:
    """A successful redirect back from SCA after the checks every purpose shares: its state consumed (single use,
    this user's, this browser session's), the PSU-ID confirmed by the bank in the SCA's session and bound to this
    user and to nobody else, and a PSU-Corporate-ID only when the bank listed it among the PSU's agreements (with
    the agreement's name)."""

    state: ScaState
    user: Any
    psu_id: str
    context: str
    corporate_id: str | None
    agreement_name: str
    presence: PsuContext
    at: datetime


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
            reason="the bank's consent covers no account",
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


# --- SCA states --------------------------------------------------------------------------------------------


def tpp_session_for(*, user: Any, now: datetime | None = None) -> TppSession:
    """The user's TPP-Session-ID for an SCA starting now: the same one for the bank's hour (from the first SCA
    completed in it, or from its first use when none was), then a new one. One per user, so that a new one never
    ends the hour of another of the user's sessions at the bank before its time (spec section 3).

    An SCA starting within ``TPP_SESSION_MARGIN`` of the hour's end gets a new one: the bank may let the old
    session's SCA hold for it, and its callback, up to 10 minutes later, is confirmed in the session it started
    in (:func:`sca_return_accept`), which must still be valid at the bank then."""
    now = now or timezone.now()
    current = TppSession.objects.filter(user=user).first()  # the common case: one read, no lock
    if current is not None and current.expires_at > now + TPP_SESSION_MARGIN:
        return current
    with transaction.atomic():
        session, created = TppSession.objects.select_for_update().get_or_create(
            user=user, defaults={"session_id": secrets.token_urlsafe(32), "started_at": now}
        )
        if not created and session.expires_at <= now + TPP_SESSION_MARGIN:
            session.session_id = secrets.token_urlsafe(32)
            session.started_at, session.sca_at, session.psu_id = now, None, ""
            session.save(update_fields=["session_id", "started_at", "sca_at", "psu_id"])
    return session


def tpp_session_sca_completed(*, user: Any, tpp_session_id: str, psu_id: str, now: datetime) -> None:
    """An SCA with ``tpp_session_id`` came back confirmed: the first one in the user's current TPP session starts
    its hour (later ones do not prolong it: the bank's hour may not be prolonged by an SCA it skipped)."""
    session = TppSession.objects.filter(user=user, sca_at__isnull=True).first()
    if session is None or not hmac.compare_digest(session.session_id, tpp_session_id):
        return  # the hour runs already, or the session was replaced meanwhile
    # started_at names this session: one replaced meanwhile (same row, new id) is not given this SCA.
    TppSession.objects.filter(pk=session.pk, sca_at__isnull=True, started_at=session.started_at).update(
        sca_at=now, psu_id=psu_id
    )


def tpp_session_known_psu(*, user: Any, now: datetime | None = None) -> str | None:
    """The PSU-ID of the SCA that started the user's TPP session, while its hour runs: sent when the user starts
    another SCA, so that the bank can let that SCA hold (never for a payment, which the bank always asks for)."""
    now = now or timezone.now()
    session = TppSession.objects.filter(user=user, sca_at__gt=now - TPP_SESSION_LIFETIME).first()
    return (session.psu_id or None) if session is not None else None


def session_key_hash(session_key: str | None) -> str:
    if not session_key:
        raise ValueError("a saved browser session is needed to start SCA")
    return hashlib.sha256(session_key.encode("ascii")).hexdigest()


def sca_state_create(
    *,
    user: Any,
    session_key: str | None,
    purpose: str,
    context: str,
    connection: BankConnection | None = None,
    agreement: bank_models.Agreement | None = None,
    now: datetime | None = None,
) -> ScaState:
    """A fresh SCA state for a registered ``purpose`` (saved before the bank is called): 256 random bits, tied
    to ``user`` and the browser session, with the user's TPP-Session-ID of the moment (``tpp_session_for``).
    Send it with :func:`sca_redirect_uri` and ``state.tpp_session_id``."""
    if not plugins.is_registered(purpose) or context not in PsuContextChoice.values:
        raise ValueError(f"unknown SCA purpose or context: {purpose!r}, {context!r}")
    now = now or timezone.now()
    return ScaState.objects.create(
        token=secrets.token_urlsafe(32),  # the issue asks for at least 128 random bits
        tpp_session_id=tpp_session_for(user=user, now=now).session_id,
        user=user,
        session_key_hash=session_key_hash(session_key),
        purpose=purpose,
        context=context,
        connection=connection,
        agreement_name=((agreement.name or "") if agreement else "")[:140],
        agreement_id_hash=lookup_hash(agreement.id) if agreement else "",
        created_at=now,
    )


def sca_redirect_uri(state: ScaState) -> str:
    """The TPP-Redirect-URI of the SCA of ``state``: the callback, naming the state."""
    return callback_uri(state=state.token)


def sca_state_spend(*, state: ScaState, now: datetime | None = None) -> None:
    """The SCA could not start (the bank refused or failed): its state can never be used."""
    ScaState.objects.filter(pk=state.pk, used_at__isnull=True).update(used_at=now or timezone.now())


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


def sca_state_open(
    *, user: Any, session_key: str | None, token: str | None = None, now: datetime | None = None
) -> ScaState | None:
    """The unused, unexpired SCA state of this user's browser session that a failure redirect is about: the one
    its address names (``token``), else (an address naming none) the newest. A named state that is not open
    (used, expired, another session's) gives None: a late or replayed redirect is about no SCA of now. Reading it
    changes nothing."""
    if not session_key or not getattr(user, "is_authenticated", False):
        return None
    now = now or timezone.now()
    open_states = (
        ScaState.objects.filter(
            user=user,
            session_key_hash=session_key_hash(session_key),
            used_at__isnull=True,
            created_at__gt=now - SCA_STATE_LIFETIME,
        )
        .select_related("connection")
        .order_by("-created_at", "-pk")
    )
    return open_states.filter(token=token).first() if token else open_states.first()


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
    in_app: bool = False,
) -> str:
    """Store a fresh SCA state and ask the bank to start SCA with it; returns the scaRedirect address.

    CONNECT: bank-offered consent in ``context``; in private context within the hour of the user's TPP session
    with the PSU-ID of its SCA, so that the bank may let that SCA hold. USERS: /v1/users (the PSU-ID only,
    payment-only journey). RECONNECT: a new consent for ``connection``, with its PSU-ID (and PSU-Corporate-ID)
    so the bank asks for the same person; the old consent stays in use until the callback succeeds. AGREEMENT: a
    consent for the corporate ``agreement`` listed with ``connection``'s PSU-ID.

    Every call carries the user's TPP-Session-ID and this SCA's own TPP-Redirect-URI (naming its state).
    ``in_app``: TPP-Redirect-Preferred: false, the PSU asks to approve in the bank's app.
    Raises ``Xs2aError`` (the bank refused or failed), ``BankStartFailed`` or ``AppApprovalNotOffered``.
    """
    if purpose not in ScaPurpose.values:
        raise ValueError(f"not a purpose of bank connections: {purpose!r}")
    if purpose in (ScaPurpose.RECONNECT, ScaPurpose.AGREEMENT) and (connection is None or not connection.psu_id):
        raise ValueError(f"{purpose} needs a connection with a PSU-ID")
    if purpose == ScaPurpose.AGREEMENT and agreement is None:
        raise ValueError("an agreement is needed")
    state = sca_state_create(
        user=user,
        session_key=session_key,
        purpose=purpose,
        context=PsuContextChoice.CORPORATE if purpose == ScaPurpose.AGREEMENT else context,
        connection=connection,
        agreement=agreement,
    )
    identity: dict[str, Any] = {"context": state.context, "tpp_session_id": state.tpp_session_id}
    if purpose == ScaPurpose.RECONNECT and connection is not None:
        identity.update(psu_id=connection.psu_id, corporate_id=connection.psu_corporate_id or None)
    elif purpose == ScaPurpose.AGREEMENT and connection is not None and agreement is not None:
        identity.update(psu_id=connection.psu_id, corporate_id=agreement.id)
    elif purpose == ScaPurpose.CONNECT and state.context == PsuContextChoice.PRIVATE:
        identity.update(psu_id=tpp_session_known_psu(user=user, now=state.created_at))
    psu = dataclasses.replace(presence, **identity)
    start = {
        "psu": psu,
        "tpp_session_id": state.tpp_session_id,
        "redirect_uri": sca_redirect_uri(state),
        "redirect_preferred": False if in_app else None,
    }
    try:
        with bank_audit_context(user=user, obj=connection):
            client = bank_client()
            if purpose == ScaPurpose.USERS:
                answer = client.consents.users(**start)
            else:
                answer = client.consents.start(**start)
        if in_app and not answer.sca_redirect:
            raise AppApprovalNotOffered("the bank answered the request for in-app approval without a scaRedirect")
        return _check_redirect(answer.sca_redirect)
    except (Xs2aError, BankStartFailed):
        sca_state_spend(state=state)
        raise


# --- the redirect back: what every purpose checks ----------------------------------------------------------


def _refusal_record(
    *, user: Any, purpose: str, reason: str, psu_id: str, corporate_id: str | None, **extra: Any
) -> None:
    """Keep a refused identity for staff (admin: identity refusals) and log it without identifiers."""
    IdentityRefusal.objects.create(
        user=user,
        purpose=purpose,
        reason=reason,
        psu_id_hash=lookup_hash(psu_id),
        psu_corporate_id_hash=lookup_hash(corporate_id),
        **extra,
    )
    logger.warning("SCA callback refused", extra={"reason": reason, "purpose": purpose, "user_id": user.pk})


def _refuse(*, user: Any, state: ScaState, reason: str, psu_id: str, corporate_id: str | None, **extra: Any):
    _refusal_record(
        user=user, purpose=state.purpose, reason=reason, psu_id=psu_id, corporate_id=corporate_id, **extra
    )
    raise IdentityRefused(reason)


def psu_bind(*, user: Any, psu_id: str) -> PsuBinding | None:
    """Bind ``psu_id`` to ``user``; returns the other user's binding when it is already someone else's (nothing
    is changed then). A PSU-ID stays bound after a disconnect: the consent behind it may be alive at the bank.
    Called only for a PSU-ID the bank confirmed in the SCA's own session (:func:`sca_return_accept`)."""
    psu_hash = lookup_hash(psu_id)
    try:
        with transaction.atomic():
            binding, _created = PsuBinding.objects.get_or_create(psu_id_hash=psu_hash, defaults={"user": user})
    except IntegrityError:  # bound by a concurrent callback this very moment
        binding = PsuBinding.objects.get(psu_id_hash=psu_hash)
    return None if binding.user_id == user.pk else binding


def _psu_bound_elsewhere(*, user: Any, psu_id: str) -> PsuBinding | None:
    """The binding of ``psu_id`` to another user, if there is one (a read: nothing is bound)."""
    return PsuBinding.objects.filter(psu_id_hash=lookup_hash(psu_id)).exclude(user=user).first()


def _bank_refused_identity(error: Xs2aError) -> bool:
    """The bank answered, and what it answered is that the PSU-ID does not speak for this session's PSU: it asks
    for SCA (401 with a scaRedirect: no SCA of that PSU in the session, or its hour is over) or does not know the
    PSU-ID (401 PSU_CREDENTIALS_INVALID). Anything else (a failure, a limit, a refused signature) confirms
    nothing either way."""
    return isinstance(error, ScaRequiredError) or (isinstance(error, ClientError) and error.status == 401)


def _identity_confirm(
    *, user: Any, state: ScaState, psu_id: str, corporate_id: str | None, presence: PsuContext
) -> list[bank_models.Agreement]:
    """Ask the bank whether ``psu_id`` is the PSU who completed this SCA: GET /v1/agreements with the PSU
    present, the PSU-ID of the redirect and the TPP-Session-ID sent when the SCA started. An SCA is valid for one
    TPP and one PSU within a TPP-Session-ID (spec sections 3 and 5.8), so a bank answers such a read only for the
    PSU who authenticated in that session; for anyone else it asks for SCA. The answer lists the PSU's
    agreements.

    Raises ``IdentityRefused`` (recorded, reason SESSION_UNCONFIRMED) when the bank does not answer for that PSU
    in this session, ``IdentityUnconfirmed`` when it could not be asked.
    """
    psu = dataclasses.replace(
        presence, psu_id=psu_id, corporate_id=None, context=None, tpp_session_id=state.tpp_session_id or None
    )
    try:
        with bank_audit_context(user=user, obj=state.connection):
            return bank_client().consents.agreements(psu=psu)
    except Xs2aError as exc:
        if _bank_refused_identity(exc):
            _refuse(
                user=user,
                state=state,
                reason=IdentityRefusal.Reason.SESSION_UNCONFIRMED,
                psu_id=psu_id,
                corporate_id=corporate_id,
                detail=f"the bank answered HTTP {exc.status} ({type(exc).__name__})",
            )
        logger.warning("identity not confirmed for a callback", extra={"error": type(exc).__name__})
        raise IdentityUnconfirmed("the bank could not be asked to confirm the PSU-ID") from exc


def _sca_state_session_check(*, user: Any, session_key: str | None, params: CallbackParams) -> None:
    """The redirect's tpp-session-id must be the one sent when its state's SCA started (the bank echoes it):
    a state's address with another session's id is refused and the state kept (a forged or mixed-up address)."""
    if not session_key or not getattr(user, "is_authenticated", False) or not params.state:
        return  # sca_state_consume refuses these
    sent = (
        ScaState.objects.filter(token=params.state, user=user, session_key_hash=session_key_hash(session_key))
        .values_list("tpp_session_id", flat=True)
        .first()
    )
    if sent is not None and not hmac.compare_digest(sent.encode(), params.tpp_session_id.encode()):
        raise ScaStateRejected("session")


def sca_return_accept(
    *, user: Any, session_key: str | None, params: CallbackParams, presence: PsuContext
) -> ScaReturn:
    """The checks of every successful redirect, before its purpose's handler sees it. In this order, and nothing
    is bound or stored from the redirect until every one has passed:

    1. the state: this user's, this browser session's, unused, unexpired, with the TPP-Session-ID it was sent
       with; it is consumed (used up, whatever follows);
    2. the PSU-ID is not another portal user's (a read);
    3. the bank confirms the PSU-ID in the SCA's own TPP-Session-ID (:func:`_identity_confirm`): the PSU who
       authenticated in this session is that PSU, not one whose PSU-ID was written into the address;
    4. a PSU-Corporate-ID is among the agreements the bank listed for that PSU in the same answer;
    5. then, in one transaction, the PSU-ID is bound to this user (refused if another user's callback bound it
       meanwhile) and the TPP session's hour starts.

    Raises ``ScaStateRejected``, ``IdentityRefused`` (recorded for staff with the SCA's purpose and the keyed
    hashes of the identifiers) or ``IdentityUnconfirmed``; the state stays used.
    """
    now = timezone.now()
    _sca_state_session_check(user=user, session_key=session_key, params=params)
    state = sca_state_consume(token=params.state, user=user, session_key=session_key, now=now)
    corporate_id = params.psu_corporate_id if params.context == PsuContextChoice.CORPORATE else None
    refusal = {"user": user, "state": state, "psu_id": params.psu_id, "corporate_id": corporate_id}
    taken = _psu_bound_elsewhere(user=user, psu_id=params.psu_id)
    if taken is not None:
        _refuse(**refusal, reason=IdentityRefusal.Reason.PSU_ID_TAKEN, bound_to_id=taken.user_id)
    listed = _identity_confirm(
        user=user, state=state, psu_id=params.psu_id, corporate_id=corporate_id, presence=presence
    )
    agreement_name = ""
    if corporate_id is not None:
        corporate_hash = lookup_hash(corporate_id)
        agreement = next((a for a in listed if a.id and lookup_hash(a.id) == corporate_hash), None)
        if agreement is None:
            _refuse(**refusal, reason=IdentityRefusal.Reason.CORPORATE_ID_UNCONFIRMED)
        agreement_name = (agreement.name or "")[:140]
    with transaction.atomic():
        bound = psu_bind(user=user, psu_id=params.psu_id)
        if bound is None:
            tpp_session_sca_completed(
                user=user, tpp_session_id=state.tpp_session_id, psu_id=params.psu_id, now=now
            )
    if bound is not None:  # bound to another user by a callback of theirs between the read and now
        _refuse(**refusal, reason=IdentityRefusal.Reason.PSU_ID_TAKEN, bound_to_id=bound.user_id)
    return ScaReturn(
        state=state,
        user=user,
        psu_id=params.psu_id,
        context=params.context,
        corporate_id=corporate_id,
        agreement_name=agreement_name or state.agreement_name,
        presence=presence,
        at=now,
    )


def identity_mismatch_record(*, sca_return: ScaReturn, detail: str) -> None:
    """A handler found the SCA done as another bank user or agreement than it expected: kept for staff."""
    _refusal_record(
        user=sca_return.user,
        purpose=sca_return.state.purpose,
        reason=IdentityRefusal.Reason.MISMATCH,
        psu_id=sca_return.psu_id,
        corporate_id=sca_return.corporate_id,
        detail=detail[:200],
    )


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
                    user=user, access=access, reason="SCA completed: new connection", now=now, **identity
                )
            elif access == ConnectionAccess.PAYMENTS:
                # /v1/users for an identity already connected: the PSU-ID is the same, nothing to renew.
                return existing
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
        reason="PSU-ID made by the bank in a single SCA payment",
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
        connection=connection, to=S.ACTIVE, actor=user, reason="PSU identified for payments", now=now
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
    ConsentEnd.ENDED: "disconnected by the user; the bank ended the consent",
    ConsentEnd.NOT_OFFERED: "disconnected by the user; the bank offers no way to end the consent from here",
    ConsentEnd.UNAVAILABLE: "disconnected by the user; the bank could not be asked to end the consent",
    ConsentEnd.NONE: "disconnected by the user",
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
                reason="the consent expired (180 days after its SCA)",
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
