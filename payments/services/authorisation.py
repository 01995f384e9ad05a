"""A payment's approval (SCA): starting it at the bank, and what the bank's redirect back comes to.

The redirect back reaches connections' one callback, which consumes the SCA state and checks the identity it
claims, then hands it to :func:`payment_sca_accept` (registered for the purpose "payment" in
``PaymentsConfig.ready``). A failure redirect names no state and proves nothing: :func:`payment_sca_failed`
changes nothing and reads the payment's status from the bank instead.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from connections import sca as connection_sca
from connections import services as connection_services
from connections.crypto import lookup_hash
from connections.errors import IdentityMismatch, ScaStateRejected
from connections.models import BankConnection, PsuContextChoice, ScaState
from connections.outcomes import ScaReturn
from connections.selectors import connection_for_agreement
from core.bank import bank_audit_context, bank_audit_deferred, bank_client
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import polling
from payments.services.approval_steps import (
    NO_APPROVAL_DETAIL,
    PAYMENT_PURPOSE,
    STEP_IN_APP,
    STEP_NONE,
    STEP_REDIRECT,
    authorisation_step,
    start_link,
)
from payments.services.errors import PaymentServiceError
from payments.services.lifecycle import payment_move
from xs2a.errors import Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)


class AuthorisationNotStarted(PaymentServiceError):
    """The bank did not start the approval. ``message`` is for the user (the bank's text when it gave one)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- starting the approval ---------------------------------------------------------------------------------


def _signer_connection(payment: Payment, signer) -> BankConnection | None:
    """The connection whose PSU-ID the signer approves with: the payment's for the initiator; for another
    signer of a corporate payment, their own active connection to the same agreement (PSU-Corporate-ID)."""
    if signer.pk == payment.user_id:
        return payment.connection
    if payment.connection is None or not payment.connection.psu_corporate_id_hash:
        return None
    return connection_for_agreement(user=signer, corporate_id_hash=payment.connection.psu_corporate_id_hash)


def authorisation_start(
    *, payment: Payment, signer, session_key: str | None, presence: PsuContext, in_app: bool = False
) -> str | None:
    """Store a fresh SCA state (purpose "payment") and the signer's PaymentAuthorisation, then POST the payment's
    startAuthorisation link; returns the scaRedirect address to send the signer's browser to.

    The call carries the signer's TPP-Session-ID and this SCA's own TPP-Redirect-URI. The bank always asks for
    the payment's own SCA (dynamic linking), whatever the session. ``in_app``: TPP-Redirect-Preferred: false;
    when the bank then answers without a scaRedirect (the signer approves in its app), None is returned and
    the payment's status is read until the bank says it is approved (as for any approval).

    None also when the bank asked this signer for no approval (scaStatus "exempted", no scaRedirect): the
    signature is counted as the bank counts it (``signature_counted``), the state is spent, a payment still
    INITIATED or AUTHORISING is AWAITING_STATUS (a poll finds it still waiting for others' signatures, if it
    does) and its status is read at once.

    The initiator approves first; for a corporate payment in PATC a further signer (another portal user of the
    same company, with their own connection to the agreement) calls this too. Raises AuthorisationNotStarted
    (with the bank's text when it gave one); the SCA state is then spent and the failure noted.
    """
    _check_awaits_approval(payment)
    connection = _signer_connection(payment, signer)
    if signer.pk != payment.user_id and connection is None:
        raise AuthorisationNotStarted(
            _("Connect your bank for this company first: the bank needs to know who signs.")
        )
    state, authorisation = _authorisation_open(
        payment, signer=signer, session_key=session_key, connection=connection
    )
    psu = _signer_psu(payment, presence, state=state, connection=connection)
    href = start_link(payment.links) if isinstance(payment.links, dict) else None
    # The call's audit row is committed with what the call came to (one commit after the call, not two).
    with bank_audit_deferred() as flush_audit:
        try:
            with bank_audit_context(user=signer, obj=payment):
                answer = bank_client().payments.start_authorisation(
                    href=href or None,
                    payment_id=payment.payment_id,
                    product=payment.product,
                    psu=psu,
                    tpp_session_id=state.tpp_session_id,
                    redirect_uri=connection_sca.sca_redirect_uri(state),
                    redirect_preferred=False if in_app else None,
                )
            step = authorisation_step(sca_redirect=answer.sca_redirect, sca_status=answer.sca_status)
            if step == STEP_NONE:
                _no_approval(
                    payment, signer=signer, state=state, authorisation=authorisation, flush_audit=flush_audit
                )
                return None
            if step == STEP_IN_APP and answer.sca_redirect:
                # A scaRedirect the browser cannot be sent to: neither an address nor an approval in the app.
                raise AuthorisationNotStarted(_("The bank did not give an address to approve the payment at."))
            # STEP_IN_APP without a scaRedirect: the bank asks the signer in its app (decoupled), whether or not
            # they asked for it; its status is read on a backoff from now (below) until the bank says.
            redirect_to = answer.sca_redirect if step == STEP_REDIRECT else ""
        except (Xs2aError, AuthorisationNotStarted) as error:
            text = _start_failed(
                payment, error, signer=signer, state=state, authorisation=authorisation, flush_audit=flush_audit
            )
            raise AuthorisationNotStarted(text) from error
        moved, started = _authorisation_started(
            payment, answer, signer=signer, authorisation=authorisation, flush_audit=flush_audit
        )
    if moved:  # what the UPDATE wrote, without reading the row back
        payment.state, payment.updated_at = PaymentState.AUTHORISING, started
    else:  # already past INITIATED (a further signer, a second try): the row as it is
        payment.refresh_from_db(fields=["state", "updated_at"])
    return redirect_to or None


def _check_awaits_approval(payment: Payment) -> None:
    """AuthorisationNotStarted unless the payment waits for an approval the bank may start now."""
    if not payment.payment_id or payment.state not in (
        PaymentState.INITIATED,
        PaymentState.AUTHORISING,
        PaymentState.AWAITING_STATUS,
    ):
        raise AuthorisationNotStarted(_("This payment is not waiting for an approval."))
    # A status past RCVD/PATC needs no approval, unless the bank's initiation answer asked for one with a
    # startAuthorisation link (the links decide, spec 2.7) and none was started yet.
    asked_at_initiation = payment.state == PaymentState.INITIATED and start_link(payment.links or {}) is not None
    if (
        payment.transaction_status
        and payment.transaction_status not in ("RCVD", "PATC")
        and not asked_at_initiation
    ):
        raise AuthorisationNotStarted(_("This payment needs no further approval."))


def _authorisation_open(
    payment: Payment, *, signer, session_key: str | None, connection: BankConnection | None
) -> tuple[ScaState, PaymentAuthorisation]:
    """A fresh SCA state and the signer's open authorisation tied to it (a new one, or the unfinished one
    started again), in one transaction before the bank is called."""
    now = timezone.now()
    with transaction.atomic():
        state = connection_sca.sca_state_create(
            user=signer,
            session_key=session_key,
            purpose=PAYMENT_PURPOSE,
            context=payment.context,
            connection=connection,
            now=now,
        )
        authorisation = (
            PaymentAuthorisation.objects.select_for_update()
            .filter(payment=payment, signer=signer, completed_at__isnull=True)
            .order_by("-started_at", "-id")
            .first()
        )
        if authorisation is None:
            authorisation = PaymentAuthorisation.objects.create(
                payment=payment, signer=signer, sca_state=state, started_at=now
            )
        else:
            authorisation.sca_state = state
            authorisation.started_at = now
            authorisation.failed_at = None
            authorisation.failure = ""
            authorisation.save(update_fields=["sca_state", "started_at", "failed_at", "failure"])
    return state, authorisation


def _signer_psu(
    payment: Payment, presence: PsuContext, *, state: ScaState, connection: BankConnection | None
) -> PsuContext:
    """The PSU headers of the signer's startAuthorisation: their live request, the SCA state's TPP-Session-ID and
    the PSU-ID (and PSU-Corporate-ID) of the connection they sign with."""
    identity: dict[str, Any] = {
        "context": payment.context,
        "tpp_session_id": state.tpp_session_id,
        "identity": None,
    }
    if connection is not None and connection.psu_id:
        identity.update(psu_id=connection.psu_id, corporate_id=connection.psu_corporate_id or None)
    return dataclasses.replace(presence, **identity)


def _start_failed(
    payment: Payment,
    error: Xs2aError | AuthorisationNotStarted,
    *,
    signer,
    state: ScaState,
    authorisation: PaymentAuthorisation,
    flush_audit,
) -> str:
    """The bank did not start the approval: the SCA state spent and the failure noted, with the call's audit row
    in one transaction. Returns the text for the user (the bank's when it gave one)."""
    text = (
        error.message
        if isinstance(error, AuthorisationNotStarted)
        else (error.text or _("The bank could not start the approval. Please try again later."))
    )
    failed = timezone.now()
    with transaction.atomic():
        flush_audit()
        connection_sca.sca_state_spend(state=state, now=failed)
        PaymentAuthorisation.objects.filter(pk=authorisation.pk).update(failed_at=failed, failure=text[:512])
        PaymentEvent.objects.create(
            payment=payment, kind=PaymentEventKind.SCA_FAILED, actor=signer, detail=text[:512]
        )
    return text


def _authorisation_started(
    payment: Payment, answer, *, signer, authorisation: PaymentAuthorisation, flush_audit
) -> tuple[bool, datetime]:
    """The bank started the approval: its authorisation's resource, INITIATED -> AUTHORISING and status polls
    from now on, with the call's audit row in one transaction. Whether the payment moved, and when."""
    started = timezone.now()
    first_poll = started + settings.PAYMENT_POLL_MIN_INTERVAL
    sca_link = answer.links.get("scaStatus")
    with transaction.atomic():
        flush_audit()
        PaymentAuthorisation.objects.filter(pk=authorisation.pk).update(
            authorisation_id=(answer.authorisation_id or "")[:200],
            sca_status_href=(sca_link.href if sca_link is not None else "")[:1000],
            sca_status=(answer.sca_status or "")[:40],
        )
        moved = payment_move(
            payment.pk, source=PaymentState.INITIATED, target=PaymentState.AUTHORISING, updated_at=started
        )
        PaymentEvent.objects.create(payment=payment, at=started, kind=PaymentEventKind.SCA_STARTED, actor=signer)
        # The status is read on a backoff from now until final or the SCA window passes: an approval made on
        # another device, or whose redirect back never comes, is seen without it (payments.services.polling).
        Payment.objects.filter(pk=payment.pk).filter(
            Q(next_poll_at__isnull=True) | Q(next_poll_at__gt=first_poll)
        ).update(next_poll_at=first_poll)
    return moved, started


#: What the signer is told when they approve in the bank's app (no address to send the browser to).
IN_APP_MESSAGE = gettext_lazy(
    "Open your bank's app and approve the payment there. This page shows the bank's answer as soon as it has it."
)


def signature_counted(*, payment: Payment, signer) -> bool:
    """Whether the bank counted ``signer``'s approval of ``payment`` (after SCA, or exempted from it)."""
    return PaymentAuthorisation.objects.filter(payment=payment, signer=signer, completed_at__isnull=False).exists()


def _no_approval(payment: Payment, *, signer, state: ScaState, authorisation: PaymentAuthorisation, flush_audit):
    """The bank asked the signer for no approval: the signature counted, the status read at once (one commit)."""
    now = timezone.now()
    with transaction.atomic():
        flush_audit()
        connection_sca.sca_state_spend(state=state, now=now)
        PaymentAuthorisation.objects.filter(pk=authorisation.pk, completed_at__isnull=True).update(
            completed_at=now, failed_at=None, failure=""
        )
        PaymentEvent.objects.create(
            payment=payment,
            at=now,
            kind=PaymentEventKind.SCA_DONE if signer.pk == payment.user_id else PaymentEventKind.SIGNATURE,
            actor=signer,
            detail=NO_APPROVAL_DETAIL,
        )
        payment_move(
            payment.pk,
            source=(PaymentState.INITIATED, PaymentState.AUTHORISING),
            target=PaymentState.AWAITING_STATUS,
            updated_at=now,
        )
        polling.poll_soon(payment)
    payment.refresh_from_db(fields=["state", "updated_at", "next_poll_at"])


# --- the redirect back --------------------------------------------------------------------------------------


def payment_sca_accept(*, sca_return: ScaReturn) -> Payment:
    """The bank sent the signer back after approving (the state consumed, the identity checked by connections):
    record the signature, keep a single-SCA PSU-ID for next time, and read the status soon. The redirect
    decides nothing about the payment itself: its status is read from the bank.

    Raises ScaStateRejected or IdentityMismatch (recorded); nothing is recorded then.
    """
    state, user, now = sca_return.state, sca_return.user, sca_return.at
    authorisation = (
        PaymentAuthorisation.objects.select_related("payment", "payment__connection")
        .filter(sca_state=state)
        .first()
    )
    if authorisation is None:
        raise ScaStateRejected("unknown")
    payment = authorisation.payment
    expected = state.connection
    if sca_return.context != payment.context:
        connection_sca.identity_mismatch_record(sca_return=sca_return, detail="approved in another context")
        raise IdentityMismatch("the payment was approved in another context")
    if expected is not None and (expected.psu_id_hash, expected.psu_corporate_id_hash) != (
        lookup_hash(sca_return.psu_id),
        lookup_hash(sca_return.corporate_id),
    ):
        connection_sca.identity_mismatch_record(
            sca_return=sca_return, detail="payment approved as another bank user or agreement"
        )
        raise IdentityMismatch("the payment was approved as another bank user or agreement")
    initiator = user.pk == payment.user_id
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        if locked.connection_id is None and initiator and sca_return.context == PsuContextChoice.PRIVATE:
            connection = connection_services.connection_keep_for_payments(
                user=user, psu_id=sca_return.psu_id, now=now
            )
            Payment.objects.filter(pk=locked.pk).update(connection=connection)
        done = PaymentAuthorisation.objects.filter(pk=authorisation.pk, completed_at__isnull=True).update(
            completed_at=now, failed_at=None, failure=""
        )
        if done == 1:
            PaymentEvent.objects.create(
                payment=locked,
                at=now,
                kind=PaymentEventKind.SCA_DONE if initiator else PaymentEventKind.SIGNATURE,
                actor=user,
            )
        polling.poll_soon(locked)
    payment.refresh_from_db()
    return payment


def payment_for_failed_sca(*, state: ScaState, user) -> Payment | None:
    """The payment whose approval the session's open SCA state is about (a failure redirect names none), when it
    is this user's to sign; None otherwise."""
    authorisation = (
        PaymentAuthorisation.objects.select_related("payment")
        .filter(sca_state=state, signer=user, completed_at__isnull=True)
        .first()
    )
    return authorisation.payment if authorisation is not None else None
