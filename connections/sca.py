"""Strong customer authentication for bank connections and for every other purpose registered with
``connections.plugins.register_purpose``: starting SCA (its state, the bank's scaRedirect) and the redirect
back, checked before the purpose's handler sees it.

Rules kept here:

- No bank call inside ``transaction.atomic``: the ``ScaState`` is saved first, the bank is called in autocommit
  mode, and the answer is stored in a short transaction after.
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
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.utils import timezone

from connections import plugins
from connections.crypto import lookup_hash
from connections.errors import (
    AppApprovalNotOffered,
    BankStartFailed,
    IdentityRefused,
    IdentityUnconfirmed,
    ScaStateRejected,
)
from connections.models import (
    SCA_STATE_LIFETIME,
    BankConnection,
    IdentityRefusal,
    PsuBinding,
    PsuContextChoice,
    ScaPurpose,
    ScaState,
)
from connections.outcomes import ScaReturn
from connections.sessions import tpp_session_for, tpp_session_known_psu, tpp_session_sca_completed
from core.bank import bank_audit_context, bank_client, callback_uri
from xs2a import models as bank_models
from xs2a.errors import ClientError, ScaRequiredError, Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)


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


# --- SCA states --------------------------------------------------------------------------------------------


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
