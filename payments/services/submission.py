"""The submission of a reviewed payment: one bank call, whatever the user does (double click, another tab).

- The payment row (idempotency key, X-Request-ID, exact body bytes) is committed before the bank is called; the
  claim DRAFT -> SUBMITTING is a conditional UPDATE, so of two submits of one review page only one calls the
  bank.
- A lost answer (timeout, 5xx, unreadable answer) leaves the payment OUTCOME_UNKNOWN: it is never re-sent as a
  new payment (payments.services.reconciliation replays the same request). Only a request that never left
  (TransportError) returns the payment to DRAFT; a 4xx of the first send makes it REFUSED.
- The initiation carries the TPP-Redirect-URI of an SCA state (purpose "payment") made before the call, so that
  a bank that starts the approval with the initiation sends the PSU back to connections' one callback; what the
  answer asks next is read from its links (payments.services.approval_steps). A user who chose to approve in
  the bank's app sends TPP-Redirect-Preferred: false with the initiation too.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from connections import sca as connection_sca
from connections.models import ConnectionState, PsuContextChoice, ScaState
from connections.sessions import tpp_session_for
from core.bank import bank_audit_deferred
from core.money import amount_plain
from payments import selectors as payment_selectors
from payments.instructions import BANK_PATH_TO_FIELD
from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import initiation_call
from payments.services.approval_steps import PAYMENT_PURPOSE
from payments.services.errors import PaymentServiceError
from payments.services.lifecycle import payment_move
from payments.services.reconciliation import RECONCILE_DELAYS, replay_window_end
from xs2a.errors import ClientError, TransportError, Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)


class PaymentNotSubmittable(PaymentServiceError):
    """The payment cannot be sent (not a draft, the identity it needs is missing ...). ``field`` names the
    review page's field the message belongs beside, when there is one; ``blocking``: the user's payment alike
    of unknown outcome that keeps this one from being sent."""

    def __init__(self, message: str, *, field: str | None = None, blocking: Payment | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.blocking = blocking


def alike_unknown_message(blocking: Payment) -> str:
    """Why a payment cannot be sent while the user's payment alike is of unknown outcome, in plain words."""
    return _(
        "Your payment of %(amount)s to %(name)s, sent on %(date)s, is not confirmed by the bank "
        "yet. Until it is settled, the same payment cannot be sent again, so that it is never paid twice."
    ) % {
        "amount": amount_plain(blocking.amount, blocking.currency),
        "name": blocking.creditor_name,
        "date": timezone.localdate(blocking.submitted_at or blocking.created_at).isoformat(),
    }


#: The note on the user's earlier payment of unknown outcome when the bank refused a payment alike as a logical
#: duplicate: the bank holds the earlier one.
DUPLICATE_EVIDENCE = gettext_lazy(
    "The bank refused a payment alike as a duplicate of this one: the bank has this payment, not approved. "
    "Approve or cancel it at the bank; otherwise it lapses."
)


@dataclass(frozen=True)
class SubmitOutcome:
    """What a submission came to. ``payment.state`` says which: INITIATED (go on to approval), AUTHORISING with
    ``sca_redirect`` (the bank started the approval with the initiation: send the PSU there), AWAITING_STATUS or
    FINAL with ``approval_skipped`` (the bank asked for no approval; its status is read at once), REFUSED
    (``field_errors``/``errors``: the bank's texts, by form field when its path names one), OUTCOME_UNKNOWN
    (reconciliation runs), DRAFT (nothing reached the bank: send again), or another state when this was a
    second submit of an already submitted payment (``duplicate_submit``)."""

    payment: Payment
    duplicate_submit: bool = False
    message: str = ""
    field_errors: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: The bank started the approval with the initiation: the address to send the PSU to (state AUTHORISING).
    sca_redirect: str = ""
    #: The bank asked for no approval: ``message`` says so; the status is read at once.
    approval_skipped: bool = False


def _replay_psu_json(psu: PsuContext) -> str:
    return json.dumps(
        {name: getattr(psu, name) for name in initiation_call.REPLAY_FIELDS if getattr(psu, name) is not None}
    )


def _initiation_psu(payment: Payment, presence: PsuContext) -> PsuContext:
    """The PSU headers of the initiation: PSU-ID (and PSU-Corporate-ID) of the payment's connection, or
    X-PSU-IDENTITY for single SCA, with the PSU's live request."""
    connection = payment.connection
    if connection is not None:
        if not connection.psu_id or connection.state == ConnectionState.DISCONNECTED:
            raise PaymentNotSubmittable(_("The bank connection of this payment is no longer available."))
        return dataclasses.replace(
            presence,
            psu_id=connection.psu_id,
            corporate_id=connection.psu_corporate_id or None,
            context=payment.context,
            identity=None,
            tpp_session_id=None,
        )
    return dataclasses.replace(presence, psu_id=None, corporate_id=None, context=PsuContextChoice.PRIVATE)


# The bank's KID errors in the user's words (its own texts are English and name the JSON field).
_KID_TEXTS = {
    "KID_MISSING": gettext_lazy(
        "The recipient asks for a KID with every payment: enter the KID from the invoice."
    ),
    "KID_INVALID": gettext_lazy("The bank did not accept this KID: check it against the invoice."),
}


def bank_errors_by_field(tpp_messages: list[dict[str, Any]]) -> tuple[dict[str, list[str]], list[str]]:
    """The bank's ERROR texts by the form field their ``path`` names, and those naming no form field."""
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for message in tpp_messages or []:
        if str(message.get("category", "ERROR")).upper() != "ERROR":
            continue
        text = (
            _KID_TEXTS.get(str(message.get("code")))
            or message.get("text")
            or message.get("code")
            or _("The bank refused the payment.")
        )
        target = BANK_PATH_TO_FIELD.get(message.get("path") or "")
        if target is None and str(message.get("path") or "").startswith("remittanceInformationStructured"):
            target = "kid"
        if target is None and message.get("path") == "X-PSU-IDENTITY":
            target = "national_identity_number"
        if target:
            by_field.setdefault(target, []).append(text)
        else:
            general.append(text)
    return by_field, general


def _submitted_event(payment: Payment, actor) -> PaymentEvent:
    """ "Sent to the bank", at the time of the claim: written with what the call came to, in one transaction
    (the claim itself is one UPDATE committed before the call)."""
    return PaymentEvent(
        payment=payment, at=payment.submitted_at or timezone.now(), kind=PaymentEventKind.SUBMITTED, actor=actor
    )


def payment_submit(
    *,
    payment: Payment,
    user,
    idempotency_key: str,
    presence: PsuContext,
    national_identity_number: str = "",
    session_key: str | None = None,
    in_app: bool = False,
) -> SubmitOutcome:
    """Send the reviewed payment to the bank, once.

    ``idempotency_key`` is the one the review page was shown with: a second submit of it (double click,
    another tab, the back button) finds the payment no longer a draft and calls nothing. ``presence`` is the
    PSU's live request (initiation needs the PSU present). ``national_identity_number``: for single SCA
    (a payment without a connection), a validated fødselsnummer.

    The claim DRAFT -> SUBMITTING is one conditional UPDATE, committed before the bank is called; it stores
    what a replay needs and a lease (``reconcile_at``): a caller killed during the call leaves a SUBMITTING
    row whose lease runs out, and reconciliation takes it over. What the call came to (the answer, the
    timeline events and the audit row of the call) is stored in one transaction after it.

    ``session_key``: the PSU's browser session. With it, the initiation carries the TPP-Redirect-URI of an SCA
    state of this session (purpose "payment"), so that a bank which starts the approval with the initiation
    (``scaRedirect`` in its answer, then ``SubmitOutcome.sca_redirect``) sends the PSU back to the one callback
    like any other approval; a bank that asks for no approval gives ``approval_skipped``.
    """
    key = _submitted_key(payment, user, idempotency_key)
    if payment.state != PaymentState.DRAFT:
        return SubmitOutcome(payment=payment, duplicate_submit=True)
    psu = _submission_psu(payment, presence, national_identity_number)
    claimed, sca_state = _claim(
        payment,
        user=user,
        key=key,
        psu=psu,
        national_identity_number=national_identity_number,
        session_key=session_key,
        in_app=in_app,
    )
    if not claimed:  # the other submit won: it calls the bank
        return SubmitOutcome(payment=payment, duplicate_submit=True)
    return _send_claimed(payment, psu, user=user, sca_state=sca_state)


def _submitted_key(payment: Payment, user, idempotency_key: str) -> uuid.UUID:
    """The review page's idempotency key, when it is this user's payment's; else PaymentNotSubmittable."""
    try:
        key = uuid.UUID(str(idempotency_key))
    except ValueError:
        raise PaymentNotSubmittable(_("This page is out of date. Please review the payment again.")) from None
    if payment.user_id != user.pk:
        raise PaymentNotSubmittable(_("This payment is not yours."))
    if key != payment.idempotency_key:
        raise PaymentNotSubmittable(_("This page is out of date. Please review the payment again."))
    return key


def _submission_psu(payment: Payment, presence: PsuContext, national_identity_number: str) -> PsuContext:
    """The PSU headers the draft is sent with; PaymentNotSubmittable while the user's payment alike is of
    unknown outcome, or without the identity the bank needs."""
    # One short EXISTS on every submit; the blocking payment itself is read only when there is one.
    if payment_selectors.payments_alike_unknown(payment=payment).exists():
        blocking = payment_selectors.payment_alike_unknown(payment=payment)
        if blocking is not None:
            raise PaymentNotSubmittable(alike_unknown_message(blocking), blocking=blocking)
    psu = _initiation_psu(payment, presence)
    if payment.connection is None:
        if not national_identity_number:
            raise PaymentNotSubmittable(
                _("Enter your national identity number (11 digits) to approve the payment at the bank."),
                field="national_identity_number",
            )
        psu = dataclasses.replace(psu, identity=national_identity_number)
    if not psu.present:
        raise ValueError("a payment is submitted with the PSU present")
    return psu


def _claim(
    payment: Payment,
    *,
    user,
    key: uuid.UUID,
    psu: PsuContext,
    national_identity_number: str,
    session_key: str | None,
    in_app: bool,
) -> tuple[bool, ScaState | None]:
    """DRAFT -> SUBMITTING (one conditional UPDATE, committed before the bank is called), with what a replay
    needs and the caller's lease. False when another submit claimed it first (``payment`` is then read again);
    with the SCA state the initiation carries the TPP-Redirect-URI of."""
    now = timezone.now()
    # The user's TPP-Session-ID: an SCA within it holds for an hour across the portal's roles (never for this
    # payment's own approval, which the bank always asks for). With the PSU's browser session, the initiation
    # also carries the TPP-Redirect-URI of an SCA state (purpose "payment"), so that a bank which starts the
    # approval with the initiation sends the PSU back to the one callback like any other approval.
    sca_state = None
    if session_key:
        sca_state = connection_sca.sca_state_create(
            user=user,
            session_key=session_key,
            purpose=PAYMENT_PURPOSE,
            context=payment.context,
            connection=payment.connection,
            now=now,
        )
    tpp_session_id = (
        sca_state.tpp_session_id if sca_state is not None else tpp_session_for(user=user, now=now).session_id
    )
    claimed = payment_move(
        payment.pk,
        source=PaymentState.DRAFT,
        target=PaymentState.SUBMITTING,
        where={"idempotency_key": key},
        submitted_at=now,
        tpp_session_id=tpp_session_id,
        initiation_sca_state=sca_state,
        psu_identity=national_identity_number if payment.connection is None else "",
        initiation_psu=_replay_psu_json(psu),
        approve_in_app=in_app,
        reconcile_at=initiation_call.call_lease(now),
        updated_at=now,
    )
    if not claimed:
        if sca_state is not None:
            connection_sca.sca_state_spend(state=sca_state)
        payment.refresh_from_db()
        return False, sca_state
    payment.state, payment.submitted_at, payment.tpp_session_id = PaymentState.SUBMITTING, now, tpp_session_id
    payment.initiation_sca_state, payment.approve_in_app = sca_state, in_app
    return True, sca_state


def _send_claimed(payment: Payment, psu: PsuContext, *, user, sca_state: ScaState | None) -> SubmitOutcome:
    """The one initiation call of a claimed payment, and what its answer (or the lack of one) is stored as."""
    submitted = (_submitted_event(payment, user),)
    with bank_audit_deferred() as flush_audit:
        try:
            answer = initiation_call.send(payment, psu, actor=user)
        except initiation_call.ANSWER_LOST as error:
            return _answer_lost(payment, error, user=user, flush_audit=flush_audit, events=submitted)
        except TransportError:  # not delivered: the bank has nothing; the same page may be sent again
            return _not_delivered(payment, user=user, sca_state=sca_state, flush_audit=flush_audit)
        except ClientError as error:
            return _refused(
                payment, error, user=user, sca_state=sca_state, flush_audit=flush_audit, events=submitted
            )
        except BaseException:
            # Whether the request left is not known: reconciliation finds out (it replays the same request).
            initiation_call.store_unknown(
                payment,
                later=replay_window_end(payment),
                detail=_("The portal failed while sending the payment; checking with the bank."),
                actor=user,
                flush_audit=flush_audit,
                events=submitted,
            )
            raise
        if not initiation_call.store_initiated(
            payment,
            answer,
            kind=PaymentEventKind.STATUS,
            actor=user,
            flush_audit=flush_audit,
            events=submitted,
            sca_state=sca_state,
        ):
            payment.refresh_from_db()  # a reconciler that took over stored the same answer first
            return SubmitOutcome(payment=payment)
    step = initiation_call.next_step(payment, answer)
    return SubmitOutcome(
        payment=payment,
        message=step.message,
        sca_redirect=step.sca_redirect,
        approval_skipped=step.approval_skipped,
    )


def _answer_lost(
    payment: Payment, error: Xs2aError, *, user, flush_audit, events: tuple[PaymentEvent, ...]
) -> SubmitOutcome:
    """The call may have reached the bank without its answer reaching us: OUTCOME_UNKNOWN, reconciliation runs."""
    logger.warning(
        "payment initiation outcome unknown",
        extra={"payment_id": payment.pk, "error": type(error).__name__, "x_request_id": error.request_id},
    )
    initiation_call.store_unknown(
        payment,
        later=replay_window_end(payment),
        # Not at once: a request still on its way (a slow network, a proxy) would meet its own replay.
        not_before=timezone.now() + RECONCILE_DELAYS[0],
        detail=_("The bank's answer was lost (%(error)s); checking with the bank.")
        % {"error": type(error).__name__},
        actor=user,
        flush_audit=flush_audit,
        events=events,
    )
    return SubmitOutcome(
        payment=payment,
        message=_(
            "The bank did not confirm the payment in time. We are checking with the bank whether it "
            "arrived; it will never be sent twice."
        ),
    )


def _not_delivered(payment: Payment, *, user, sca_state: ScaState | None, flush_audit) -> SubmitOutcome:
    """The request never left (TransportError): the bank has nothing; SUBMITTING -> DRAFT, to be sent again."""
    logger.warning("payment initiation not delivered", extra={"payment_id": payment.pk})
    with transaction.atomic():
        flush_audit()
        if sca_state is not None:  # the next submit makes a new one
            connection_sca.sca_state_spend(state=sca_state)
        payment_move(
            payment.pk,
            source=PaymentState.SUBMITTING,
            target=PaymentState.DRAFT,
            where={"reconcile_attempts": 0},  # the first send only
            events=[
                PaymentEvent(
                    payment=payment,
                    kind=PaymentEventKind.BANK_ERROR,
                    actor=user,
                    detail=_("The bank could not be reached; nothing was sent."),
                )
            ],
            submitted_at=None,
            psu_identity="",
            initiation_psu="",
            reconcile_at=None,
        )
    payment.refresh_from_db()
    return SubmitOutcome(
        payment=payment, message=_("The bank could not be reached; nothing was sent. Please try again.")
    )


def _refused(
    payment: Payment,
    error: ClientError,
    *,
    user,
    sca_state: ScaState | None,
    flush_audit,
    events: tuple[PaymentEvent, ...],
) -> SubmitOutcome:
    """The bank refused the first send (4xx): REFUSED, with its texts by form field."""
    if sca_state is not None:  # nothing exists at the bank: no approval will follow
        connection_sca.sca_state_spend(state=sca_state)
    if not initiation_call.store_refused(payment, error, actor=user, flush_audit=flush_audit, events=events):
        payment.refresh_from_db()
        return SubmitOutcome(payment=payment)
    held = _duplicate_evidence(payment, error, actor=user)
    by_field, general = bank_errors_by_field(payment.tpp_messages)
    if held is not None:
        general = [str(DUPLICATE_EVIDENCE), *general]
    if not by_field and not general:
        general = [_("The bank refused the payment (HTTP %(status)s).") % {"status": error.status}]
    return SubmitOutcome(payment=payment, field_errors=by_field, errors=general)


def is_logical_duplicate(tpp_messages) -> bool:
    """The bank refused the payment as a logical duplicate (its CONFLICT on allowLogicalDuplicate)."""
    return any(
        m.get("code") == "CONFLICT" and m.get("path") == "allowLogicalDuplicate" for m in tpp_messages or []
    )


def _duplicate_evidence(payment: Payment, error: Xs2aError, *, actor) -> Payment | None:
    """The bank refused ``payment`` as a logical duplicate while the user's payment alike is of unknown outcome:
    that is the bank's word that it holds the earlier one (not approved). The earlier one gets a note saying so;
    nothing is sent for it. Returns the earlier payment, or None."""
    if not is_logical_duplicate(initiation_call.bank_messages(error)):
        return None
    earlier = payment_selectors.payment_alike_unknown(payment=payment)
    if earlier is None:
        return None
    PaymentEvent.objects.create(
        payment=earlier, kind=PaymentEventKind.NOTE, actor=actor, detail=str(DUPLICATE_EVIDENCE)[:512]
    )
    return earlier
