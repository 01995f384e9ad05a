"""Payment initiation: draft -> submit (one bank call) -> initiated / refused / outcome unknown ->
reconciliation.

Rules kept here:

- The payment row (idempotency key, X-Request-ID, exact body bytes) is committed before the bank is called; the
  claim DRAFT -> SUBMITTING is a conditional UPDATE, so of two submits of one review page only one calls the
  bank. No bank call runs inside ``transaction.atomic``.
- A lost answer (timeout, 5xx, unreadable answer) is never re-sent as a new payment: reconciliation replays the
  same request (same X-Request-ID, the same bytes, the same TPP-Session-ID and PSU headers, allowLogicalDuplicate
  as first sent). The bank answers a replay with the payment it made the first time, or makes it now when the
  first never arrived: at most one payment exists at the bank per submission.
- The national identity number (single SCA) and the PSU headers are kept, encrypted, only while the answer is
  unknown; they are erased as soon as it is known.
- The bank may ask for no approval, or start it with the initiation itself (spec 3 rule 2, 5 rule 7: it may
  exempt any transaction or require SCA on any). The initiation therefore carries the TPP-Redirect-URI of an
  SCA state (purpose "payment") made before the call. The answer's links decide, whatever its status (spec
  2.7): ``scaRedirect`` sends the PSU there (its redirect back reaches connections' one callback like any
  other); a startAuthorisation link leaves the payment INITIATED (the startAuthorisation call follows); neither
  means the bank asks for no approval, and the status is read at once. A user who chose to approve in the
  bank's app sends TPP-Redirect-Preferred: false with the initiation too.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts import selectors as account_selectors
from connections import services as connection_services
from connections.models import BankConnection, ConnectionState, PsuContextChoice, ScaState
from connections.services import tpp_session_for
from payments import selectors as payment_selectors
from payments.instructions import (
    BANK_PATH_TO_FIELD,
    PaymentInstruction,
    initiation_body_json,
    new_reference,
    with_reference,
)
from payments.models import (
    FINAL_TRANSACTION_STATUSES,
    Payment,
    PaymentAuthorisation,
    PaymentEvent,
    PaymentEventKind,
    PaymentProduct,
    PaymentState,
)
from payments.selectors import NokEquivalent
from payments.services import dispatch
from payments.services.lifecycle import payment_move
from payments.services.polling import poll_soon
from tpp_portal.bank import bank_audit_context, bank_audit_deferred, bank_client
from tpp_portal.money import amount_plain
from xs2a import models as bank_models
from xs2a.errors import (
    AccessExceededError,
    ClientError,
    OutcomeUnknownError,
    ResponseSignatureError,
    ServerError,
    TransportError,
    UnexpectedResponseError,
    Xs2aError,
)
from xs2a.psu import HEADER_FIELDS, PsuContext

logger = logging.getLogger(__name__)

#: Reconciliation of an OUTCOME_UNKNOWN payment: the first try soon, then slower; after the last the payment
#: stays "checking with the bank" and the user is told to ask the bank (nothing is ever sent anew).
RECONCILE_DELAYS = (
    timedelta(seconds=15),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(minutes=30),
)
#: What the user is told about an UNCONFIRMED payment.
UNCONFIRMED_MESSAGE = gettext_lazy(
    "The bank did not confirm whether it received this payment. Check your account at the bank before you try "
    "again: it may have the payment already."
)
#: What the user is told about a payment found in their account's transactions (FOUND).
FOUND_MESSAGE = gettext_lazy(
    "The bank has this payment: we found it in your account's transactions. Do not send it again."
)
#: Why a payment of unknown outcome was passed to staff.
STAFF_REASON_REFUSED_REPLAY = gettext_lazy(
    "The bank refused the repeated request of a payment whose answer was lost: it may hold the payment."
)
STAFF_REASON_WINDOW = gettext_lazy(
    "The bank's answer was lost and the replay window has passed: settle the payment with the bank."
)
#: A reconciler holds the payment this long (a conditional UPDATE of reconcile_at claims it).
RECONCILE_LEASE = timedelta(minutes=2)

#: The SCA purpose of a payment's approval (registered with connections.plugins by PaymentsConfig.ready).
PAYMENT_PURPOSE = "payment"
#: Bank statuses that wait for an approval: the PSU's SCA (RCVD) or further signers' (PATC).
APPROVAL_STATUSES = frozenset({"RCVD", "PATC"})
#: scaStatus by which the bank says it asks no SCA of this PSU for this payment (Berlin Group's value).
NO_SCA_STATUSES = frozenset({"exempted"})
#: Bank statuses after which no signature was given: the payment ended without one.
_ENDED_UNSIGNED = frozenset({"RJCT", "CANC"})

# What an answer that may start the approval asks of the portal next (approval_step).
STEP_REDIRECT = "redirect"  # send the PSU to the bank's scaRedirect
STEP_NONE = "none"  # the bank asks for no approval: read its status
STEP_START = "start"  # the approval is still to be started (startAuthorisation)
STEP_IN_APP = "in_app"  # the bank asks the PSU in its app (no scaRedirect): its status is read

#: The timeline's note when the bank asked for no approval.
NO_APPROVAL_DETAIL = gettext_lazy("The bank did not ask for approval (exempted from SCA).")
#: What the user is told when the bank asked for no approval.
NO_APPROVAL_MESSAGE = gettext_lazy(
    "The bank did not ask you to approve this payment. It is being processed; this page shows its status."
)
NO_APPROVAL_FINAL_MESSAGE = gettext_lazy(
    "The bank did not ask you to approve this payment. This page shows what the bank did with it."
)

# The PSU headers kept for a replay: PsuContext fields, as sent (the X-PSU-IDENTITY of a single-SCA payment and
# the TPP-Session-ID are the payment's own).
_REPLAY_FIELDS = tuple(name for name in HEADER_FIELDS if name not in ("identity", "tpp_session_id"))


class PaymentServiceError(Exception):
    """Base of the payment initiation errors of this module."""


class PaymentNotSubmittable(PaymentServiceError):
    """The payment cannot be sent (not a draft, the identity it needs is missing ...). ``field`` names the
    review page's field the message belongs beside, when there is one; ``blocking``: the user's payment alike
    of unknown outcome that keeps this one from being sent."""

    def __init__(self, message: str, *, field: str | None = None, blocking: Payment | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.blocking = blocking


class IntentAlreadySent(PaymentServiceError):
    """The payment form was posted before (Back, reload, a second tab, a double click): ``payment`` is the one
    made from it, shown instead of a new one."""

    def __init__(self, payment: Payment) -> None:
        super().__init__(f"intent already used by payment {payment.pk}")
        self.payment = payment


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


def _usable_redirect(href: str | None) -> bool:
    parts = urlsplit(href or "")
    return parts.scheme in {"http", "https"} and bool(parts.netloc)


#: The links by which a bank asks the TPP to start the approval (Berlin Group: any "startAuthorisation..." link).
START_LINKS = (
    "startAuthorisation",
    "startAuthorisationWithPsuIdentification",
    "startAuthorisationWithPsuAuthentication",
    "startAuthorisationWithEncryptedPsuAuthentication",
    "startAuthorisationWithAuthenticationMethodSelection",
    "startAuthorisationWithTransactionAuthorisation",
)


def approval_step(*, sca_redirect: str | None, links) -> str:
    """What an initiation answer asks of the portal next. The links decide (spec 2.7), whatever the status
    (RCVD, ACTC, ACCP, PDNG ...): a usable ``scaRedirect``, STEP_REDIRECT; a startAuthorisation link,
    STEP_START; neither, STEP_NONE (the bank asks for no approval: its status is read)."""
    if _usable_redirect(sca_redirect):
        return STEP_REDIRECT
    if any(name in (links or {}) for name in START_LINKS):
        return STEP_START
    return STEP_NONE


def start_link(links) -> str | None:
    """The href of the answer's startAuthorisation link (any of START_LINKS), or None."""
    for name in START_LINKS:
        href = (links or {}).get(name)
        if isinstance(href, str) and href:
            return href
    return None


def authorisation_step(*, sca_redirect: str | None, sca_status: str | None) -> str:
    """What a startAuthorisation answer asks next: STEP_REDIRECT (a usable scaRedirect), STEP_NONE (scaStatus
    "exempted"), else STEP_IN_APP: the approval happens in the bank's app (decoupled); its status is read on a
    backoff until the bank says."""
    if _usable_redirect(sca_redirect):
        return STEP_REDIRECT
    if (sca_status or "").strip().lower() in NO_SCA_STATUSES:
        return STEP_NONE
    return STEP_IN_APP


def state_without_approval(transaction_status: str) -> str:
    """The payment's state once the bank asked for no approval: FINAL for a final status, AUTHORISING while the
    bank waits for other signers (PATC), else AWAITING_STATUS (RCVD and an unknown status included: the status
    read at once says whether the bank still waits for an approval)."""
    if transaction_status in FINAL_TRANSACTION_STATUSES:
        return PaymentState.FINAL
    if transaction_status == "PATC":
        return PaymentState.AUTHORISING
    return PaymentState.AWAITING_STATUS


def no_approval_message(payment: Payment) -> str:
    return str(NO_APPROVAL_FINAL_MESSAGE if payment.state == PaymentState.FINAL else NO_APPROVAL_MESSAGE)


# --- drafts --------------------------------------------------------------------------------------------------


def payment_draft_create(
    *,
    user,
    product: str,
    context: str,
    connection: BankConnection | None,
    instruction: PaymentInstruction,
    form_data: dict,
    nok_equivalent: Decimal | None = None,
    exchange_rate: NokEquivalent | None = None,
    allow_logical_duplicate: bool = False,
    replaces: Payment | None = None,
    intent_key: uuid.UUID | None = None,
) -> Payment:
    """A reviewed, unsent payment: its idempotency key, X-Request-ID and reference are made now; the body is
    frozen (the instruction, the reference first in its message to the recipient).

    ``exchange_rate``: the conversion the form reckoned the NOK equivalent with; its rate, unit, date and source
    are kept so that the review shows the same (``nok_equivalent`` defaults to its amount).

    ``replaces``: the draft this one was edited from; it is removed when still unsent (a submitted payment is
    never edited nor removed).

    ``intent_key``: the key the payment form was first shown with. A second post of it makes nothing: it raises
    IntentAlreadySent with the payment made from the first (one intent, one payment).
    """
    if intent_key is not None:
        earlier = Payment.objects.filter(user=user, intent_key=intent_key).first()
        if earlier is not None:
            raise IntentAlreadySent(earlier)
    if product not in PaymentProduct.values or context not in PsuContextChoice.values:
        raise ValueError(f"unknown product or context: {product!r}, {context!r}")
    if connection is not None and connection.user_id != user.pk:
        raise ValueError("the connection is not the user's")
    reference = new_reference()
    body_json = initiation_body_json(with_reference(instruction, reference))
    rate_fields = {}
    if exchange_rate is not None and nok_equivalent is None:
        nok_equivalent = exchange_rate.amount_nok
    if exchange_rate is not None and exchange_rate.rate_date is not None:  # NOK converts to itself: no rate
        rate_fields = {
            "nok_rate": exchange_rate.rate,
            "nok_rate_unit": exchange_rate.unit,
            "nok_rate_date": exchange_rate.rate_date,
            "nok_rate_source": exchange_rate.source,
        }
    try:
        return _draft_insert(
            user=user,
            product=product,
            context=context,
            connection=connection,
            instruction=instruction,
            form_data=form_data,
            nok_equivalent=nok_equivalent,
            rate_fields=rate_fields,
            allow_logical_duplicate=allow_logical_duplicate,
            replaces=replaces,
            intent_key=intent_key,
            reference=reference,
            body_json=body_json,
        )
    except IntegrityError:
        earlier = Payment.objects.filter(user=user, intent_key=intent_key).first() if intent_key else None
        if earlier is None:
            raise
        raise IntentAlreadySent(earlier) from None


def _draft_insert(
    *,
    user,
    product,
    context,
    connection,
    instruction,
    form_data,
    nok_equivalent,
    rate_fields,
    allow_logical_duplicate,
    replaces,
    intent_key,
    reference,
    body_json,
) -> Payment:
    creditor = instruction.creditor_account
    with transaction.atomic():
        payment = Payment.objects.create(
            user=user,
            intent_key=intent_key,
            connection=connection,
            product=product,
            context=context,
            state=PaymentState.DRAFT,
            idempotency_key=uuid.uuid4(),
            request_id=uuid.uuid4(),
            reference=reference,
            body_json=body_json.decode("utf-8"),
            form_data=form_data,
            allow_logical_duplicate=allow_logical_duplicate,
            amount=instruction.amount,
            currency=instruction.currency,
            debtor_account=instruction.debtor_account.iban or instruction.debtor_account.bban,
            creditor_name=instruction.creditor_name,
            creditor_account=creditor.iban or creditor.bban,
            requested_execution_date=instruction.requested_execution_date,
            nok_equivalent=nok_equivalent,
            **rate_fields,
        )
        PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.CREATED, actor=user)
        if replaces is not None:
            Payment.objects.filter(pk=replaces.pk, user=user, state=PaymentState.DRAFT).delete()
    return payment


def payment_draft_delete(*, user, payment_id: int) -> bool:
    """Delete the user's draft ``payment_id`` (reviewed, never sent): True when it was deleted, False when it is
    not a draft of this user (another user's, gone, or sent meanwhile). A payment that was sent, or is being
    sent, is never deleted: the delete is conditional on the state DRAFT, the same row a submit must first claim
    (DRAFT -> SUBMITTING), so of a delete and a submit of one draft only one wins."""
    with transaction.atomic():
        _count, by_model = Payment.objects.filter(
            pk=payment_id, user=user, state=PaymentState.DRAFT, payment_id="", submitted_at__isnull=True
        ).delete()
    deleted = by_model.get(Payment._meta.label, 0) == 1
    if deleted:
        logger.info("payment draft deleted", extra={"payment_id": payment_id})
    return deleted


# --- submission ----------------------------------------------------------------------------------------------


def _replay_psu_json(psu: PsuContext) -> str:
    return json.dumps({name: getattr(psu, name) for name in _REPLAY_FIELDS if getattr(psu, name) is not None})


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


def _bank_messages(error: Xs2aError) -> list[dict[str, Any]]:
    return [{"category": m.category, "code": m.code, "path": m.path, "text": m.text} for m in error.tpp_messages]


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


def _answer_fields(answer: bank_models.PaymentInitiationResponse) -> dict[str, Any]:
    fees = answer.transaction_fees
    return {
        "payment_id": answer.payment_id,
        "transaction_status": answer.transaction_status[:4],
        "fee_amount": fees.amount if fees is not None else None,
        "fee_currency": fees.currency[:3] if fees is not None else "",
        "fee_indicator": answer.transaction_fee_indicator,
        "psu_message": (answer.psu_message or "")[:512],
        "tpp_messages": [
            {"category": m.category, "code": m.code, "path": m.path, "text": m.text} for m in answer.tpp_messages
        ],
        "links": {name: link.href for name, link in answer.links.items()},
    }


#: Raised by the bank client for a request that may have reached the bank without its answer reaching us.
_ANSWER_LOST = (OutcomeUnknownError, ServerError, ResponseSignatureError, UnexpectedResponseError)
#: Left as they are by a call that got its answer: a lost answer or a crashed caller (the lease ran out).
_CALLING_STATES = (PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN)


def _call_lease(now: datetime) -> datetime:
    """Until when a caller holds a SUBMITTING payment (``reconcile_at``): longer than any one initiation call
    can last. After it, the caller is taken for dead (process killed) and reconciliation takes over."""
    timeout = float(settings.BANK_TIMEOUT)
    lease = settings.PAYMENT_CALL_LEASE  # only the fault tests' faster clock sets it
    if lease is None:
        return now + max(RECONCILE_LEASE, timedelta(seconds=2 * timeout + 60))
    return now + max(lease, timedelta(seconds=2 * timeout))  # never shorter than a connect and a read


def _submitted_event(payment: Payment, actor) -> PaymentEvent:
    """ "Sent to the bank", at the time of the claim: written with what the call came to, in one transaction
    (the claim itself is one UPDATE committed before the call)."""
    return PaymentEvent(
        payment=payment, at=payment.submitted_at or timezone.now(), kind=PaymentEventKind.SUBMITTED, actor=actor
    )


def _store_initiated(
    payment: Payment,
    answer: bank_models.PaymentInitiationResponse,
    *,
    kind: str,
    actor,
    flush_audit,
    events: tuple[PaymentEvent, ...] = (),
    sca_state: ScaState | None = None,
) -> bool:
    """SUBMITTING/OUTCOME_UNKNOWN -> what the bank's answer asks next, with the answer, the timeline events and the
    bank call's audit row, in one transaction; False when another writer stored the answer first.

    - an approval started with the initiation (scaRedirect): AUTHORISING, the initiator's authorisation tied to
      ``sca_state`` (the SCA state whose TPP-Redirect-URI the initiation carried), and status polls from now on,
      as after a startAuthorisation;
    - no approval asked (exempted, or the status already past RCVD/PATC): AWAITING_STATUS (FINAL for a final
      status) with the initiator's signature counted, and the status read at once;
    - otherwise INITIATED: the approval is started next (startAuthorisation).

    ``sca_state`` is spent unless the PSU is sent to the bank with it.
    """
    now = timezone.now()
    fields: dict[str, Any] = _answer_fields(answer)
    status = fields["transaction_status"]
    step = approval_step(sca_redirect=answer.sca_redirect, links=answer.links)
    rows = [*events]
    if kind != PaymentEventKind.STATUS:
        confirmed = _("The bank confirmed the payment.")
        rows.append(PaymentEvent(payment=payment, at=now, kind=kind, actor=actor, detail=confirmed))
    rows.append(
        PaymentEvent(
            payment=payment,
            at=now,
            kind=PaymentEventKind.STATUS,
            transaction_status=status,
            detail=fields["psu_message"],
        )
    )
    authorisation: PaymentAuthorisation | None = None
    if step == STEP_REDIRECT:
        fields.update(state=PaymentState.AUTHORISING, next_poll_at=now + settings.PAYMENT_POLL_MIN_INTERVAL)
        rows.append(PaymentEvent(payment=payment, at=now, kind=PaymentEventKind.SCA_STARTED, actor=actor))
        authorisation = PaymentAuthorisation(
            payment=payment, signer_id=payment.user_id, sca_state=sca_state, started_at=now
        )
    elif step == STEP_NONE:
        fields["state"] = state_without_approval(status)
        if fields["state"] == PaymentState.FINAL:
            fields.update(final_at=now, next_poll_at=None)
        if status not in _ENDED_UNSIGNED:  # the bank counts the initiator's signature
            rows.append(
                PaymentEvent(
                    payment=payment, at=now, kind=PaymentEventKind.SCA_DONE, actor=actor, detail=NO_APPROVAL_DETAIL
                )
            )
            authorisation = PaymentAuthorisation(
                payment=payment, signer_id=payment.user_id, started_at=now, completed_at=now
            )
    else:
        fields["state"] = PaymentState.INITIATED
    # One transaction: the audit rows whatever happens, the answer and its events only if no other writer stored
    # them first.
    with transaction.atomic():
        flush_audit()
        target = fields.pop("state")
        updated = payment_move(
            payment.pk,
            source=_CALLING_STATES,
            target=target,
            events=rows,
            psu_identity="",
            initiation_psu="",
            reconcile_at=None,
            updated_at=now,
            **fields,
        )
        fields["state"] = target
        if updated:
            if authorisation is not None:
                authorisation.save()
            if sca_state is not None and step != STEP_REDIRECT:
                connection_services.sca_state_spend(state=sca_state, now=now)
            if step == STEP_NONE and fields["state"] != PaymentState.FINAL:
                poll_soon(payment)  # next_poll_at now; the poll is enqueued when this commits
    if not updated:
        return False
    # What the UPDATE wrote, without reading the row back.
    for name, value in fields.items():
        setattr(payment, name, value)
    payment.psu_identity, payment.initiation_psu = "", ""
    payment.reconcile_at, payment.updated_at = None, now
    return True


def _store_refused(
    payment: Payment, error: Xs2aError, *, actor, flush_audit, events: tuple[PaymentEvent, ...] = ()
) -> bool:
    """A 4xx: nothing exists at the bank. The bank's messages are kept (the form shows them by field)."""
    now = timezone.now()
    messages_ = _bank_messages(error)
    text = error.text or error.code or (f"HTTP {error.status}" if error.status else error.message)
    with transaction.atomic():
        flush_audit()
        if not payment_move(
            payment.pk,
            source=PaymentState.SUBMITTING,
            target=PaymentState.REFUSED,
            where={"reconcile_attempts": 0},  # the first send only: a replay is never a refusal
            events=[
                *events,
                PaymentEvent(
                    payment=payment, at=now, kind=PaymentEventKind.BANK_ERROR, actor=actor, detail=text[:512]
                ),
            ],
            tpp_messages=messages_,
            psu_identity="",
            initiation_psu="",
            reconcile_at=None,
            updated_at=now,
        ):
            return False
    payment.state, payment.tpp_messages, payment.psu_identity, payment.initiation_psu = (
        PaymentState.REFUSED,
        messages_,
        "",
        "",
    )
    payment.reconcile_at, payment.updated_at = None, now
    return True


def _store_unknown(
    payment: Payment,
    *,
    later: datetime | None,
    detail: str,
    actor,
    flush_audit,
    events: tuple = (),
    not_before: datetime | None = None,
) -> bool:
    """SUBMITTING -> OUTCOME_UNKNOWN: the call ended without an answer. The background looks at it at ``later``
    (the end of the replay window); the user's "check now" may replay from ``not_before``."""
    now = timezone.now()
    with transaction.atomic():
        flush_audit()
        rows = [*events]
        if detail:
            rows.append(
                PaymentEvent(
                    payment=payment, at=now, kind=PaymentEventKind.OUTCOME_UNKNOWN, actor=actor, detail=detail
                )
            )
        updated = payment_move(
            payment.pk,
            source=PaymentState.SUBMITTING,
            target=PaymentState.OUTCOME_UNKNOWN,
            events=rows,
            reconcile_at=later,
            replay_not_before=not_before,
            updated_at=now,
        )
        if updated and later is not None:
            _enqueue_reconcile(payment.pk, countdown=max(0, int((later - now).total_seconds())))
    payment.refresh_from_db()
    return updated


def _enqueue_reconcile(payment_pk: int, *, countdown: int | None = None) -> None:
    """Enqueue a reconciliation (once the transaction commits); beat's dispatcher catches a lost one."""
    delay = int(RECONCILE_DELAYS[0].total_seconds()) if countdown is None else countdown
    dispatch.enqueue(dispatch.RECONCILE, payment_pk, countdown=delay)


def _send(
    payment: Payment, psu: PsuContext, *, actor, replay: bool = False
) -> bank_models.PaymentInitiationResponse:
    """The one initiation call (and its replays): the stored bytes, X-Request-ID, TPP-Session-ID and the
    TPP-Redirect-URI of the SCA state made for it (when the PSU's browser session was known).

    A replay never allows a logical duplicate: a bank that takes the repeated X-Request-ID for a new request then
    refuses it when the first arrived, instead of making a second payment. (The specification promises nothing
    about a repeated X-Request-ID: "identifier unique to the call".)"""
    body = json.loads(payment.body_json)
    with bank_audit_context(user=actor, obj=payment):
        return bank_client().payments.initiate(
            body,
            psu=psu,
            product=payment.product,
            tpp_session_id=payment.tpp_session_id,
            redirect_uri=(
                connection_services.sca_redirect_uri(payment.initiation_sca_state)
                if payment.initiation_sca_state_id
                else None
            ),
            allow_logical_duplicate=False if replay else payment.allow_logical_duplicate,
            redirect_preferred=False if payment.approve_in_app else None,
            request_id=str(payment.request_id),
        )


def _store_unconfirmed(payment: Payment, error: Xs2aError, *, actor, flush_audit) -> bool:
    """The bank refused the replay of a request whose first answer was lost: it may have made the payment the
    first time. SUBMITTING -> UNCONFIRMED, with the bank's messages; never REFUSED, never sent again by itself."""
    now = timezone.now()
    text = error.text or error.code or (f"HTTP {error.status}" if error.status else error.message)
    with transaction.atomic():
        flush_audit()
        updated = payment_move(
            payment.pk,
            source=PaymentState.SUBMITTING,
            target=PaymentState.UNCONFIRMED,
            events=[
                PaymentEvent(
                    payment=payment,
                    at=now,
                    kind=PaymentEventKind.OUTCOME_UNKNOWN,
                    actor=actor,
                    detail=_("The bank refused the repeated request (%(text)s); it may have the payment already.")
                    % {"text": text[:300]},
                ),
                _staff_event(payment, now, STAFF_REASON_REFUSED_REPLAY),
            ],
            tpp_messages=_bank_messages(error),
            psu_identity="",
            initiation_psu="",
            reconcile_at=None,
            staff_flagged_at=now,
            staff_reason=str(STAFF_REASON_REFUSED_REPLAY),
            updated_at=now,
        )
    return updated


def payment_kid(payment: Payment) -> str:
    """The KID the payment was sent with (remittanceInformationStructuredArray), or ""."""
    try:
        body = json.loads(payment.body_json or "{}")
    except ValueError:
        return ""
    for entry in body.get("remittanceInformationStructuredArray") or []:
        if isinstance(entry, dict) and entry.get("referenceType") == "KID" and entry.get("reference"):
            return str(entry["reference"])
    return ""


def unconfirmed_find(*, payment_id: int) -> bool:
    """An UNCONFIRMED payment whose reference (or, for a KID payment, KID and amount) shows in a debit of its
    debtor account (as the bank reported the account's transactions) becomes FOUND: the bank has it, and it
    leaves the staff queue. Reads stored transactions only (no bank call); True when the payment was found now."""
    payment = Payment.objects.filter(pk=payment_id, state=PaymentState.UNCONFIRMED).first()
    if payment is None:
        return False
    submitted = timezone.localdate(payment.submitted_at or payment.created_at)
    since = submitted - timedelta(days=1)  # the bank's booking day may lag the portal's clock by a day
    match = None
    if payment.reference:
        match = account_selectors.debits_mentioning(
            user=payment.user, account_number=payment.debtor_account, text=payment.reference, since=since
        ).first()
    kid = payment_kid(payment)
    if match is None and kid:  # a KID payment usually has no free text: its KID, amount and date find it
        match = account_selectors.debits_with_kid(
            user=payment.user,
            account_number=payment.debtor_account,
            kid=kid,
            amount=payment.amount,
            currency=payment.currency,
            since=since,
        ).first()
    if match is None:
        return False
    now = timezone.now()
    with transaction.atomic():
        updated = payment_move(
            payment.pk,
            source=PaymentState.UNCONFIRMED,
            target=PaymentState.FOUND,
            events=[
                PaymentEvent(
                    payment=payment,
                    at=now,
                    kind=PaymentEventKind.FOUND,
                    detail=_("%(status)s in the account on %(date)s: %(amount)s %(currency)s")
                    % {
                        "status": match.get_status_display(),
                        "date": match.booking_date.isoformat() if match.booking_date else "-",
                        "amount": match.amount,
                        "currency": match.currency,
                    },
                )
            ],
            staff_flagged_at=None,
            staff_reason="",
            updated_at=now,
        )
    return updated


#: An UNCONFIRMED payment is looked for in its account's transactions this long after it was sent (the bank
#: lists 90 days of transactions without a new SCA; an older one stays with the user's word).
FIND_UNCONFIRMED_FOR = timedelta(days=90)


def unconfirmed_find_all(*, limit: int = 500, now: datetime | None = None) -> int:
    """``unconfirmed_find`` for the UNCONFIRMED payments sent in the last FIND_UNCONFIRMED_FOR, newest first (beat,
    every few minutes; old ones never found do not crowd out new ones): how many were found."""
    now = now or timezone.now()
    ids = list(
        Payment.objects.filter(state=PaymentState.UNCONFIRMED, submitted_at__gte=now - FIND_UNCONFIRMED_FOR)
        .order_by("-submitted_at", "-id")
        .values_list("id", flat=True)[:limit]
    )
    return sum(unconfirmed_find(payment_id=payment_id) for payment_id in ids)


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
    try:
        key = uuid.UUID(str(idempotency_key))
    except ValueError:
        raise PaymentNotSubmittable(_("This page is out of date. Please review the payment again.")) from None
    if payment.user_id != user.pk:
        raise PaymentNotSubmittable(_("This payment is not yours."))
    if key != payment.idempotency_key:
        raise PaymentNotSubmittable(_("This page is out of date. Please review the payment again."))
    if payment.state != PaymentState.DRAFT:
        return SubmitOutcome(payment=payment, duplicate_submit=True)
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

    now = timezone.now()
    # The user's TPP-Session-ID: an SCA within it holds for an hour across the portal's roles (never for this
    # payment's own approval, which the bank always asks for). With the PSU's browser session, the initiation
    # also carries the TPP-Redirect-URI of an SCA state (purpose "payment"), so that a bank which starts the
    # approval with the initiation sends the PSU back to the one callback like any other approval.
    sca_state = None
    if session_key:
        sca_state = connection_services.sca_state_create(
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
        reconcile_at=_call_lease(now),
        updated_at=now,
    )
    if not claimed:  # the other submit won: it calls the bank
        if sca_state is not None:
            connection_services.sca_state_spend(state=sca_state)
        payment.refresh_from_db()
        return SubmitOutcome(payment=payment, duplicate_submit=True)
    payment.state, payment.submitted_at, payment.tpp_session_id = PaymentState.SUBMITTING, now, tpp_session_id
    payment.initiation_sca_state, payment.approve_in_app = sca_state, in_app
    submitted = (_submitted_event(payment, user),)

    with bank_audit_deferred() as flush_audit:
        try:
            answer = _send(payment, psu, actor=user)
        except _ANSWER_LOST as error:
            logger.warning(
                "payment initiation outcome unknown",
                extra={"payment_id": payment.pk, "error": type(error).__name__, "x_request_id": error.request_id},
            )
            _store_unknown(
                payment,
                later=replay_window_end(payment),
                # Not at once: a request still on its way (a slow network, a proxy) would meet its own replay.
                not_before=timezone.now() + RECONCILE_DELAYS[0],
                detail=_("The bank's answer was lost (%(error)s); checking with the bank.")
                % {"error": type(error).__name__},
                actor=user,
                flush_audit=flush_audit,
                events=submitted,
            )
            return SubmitOutcome(
                payment=payment,
                message=_(
                    "The bank did not confirm the payment in time. We are checking with the bank whether it "
                    "arrived; it will never be sent twice."
                ),
            )
        except TransportError:  # not delivered: the bank has nothing; the same page may be sent again
            logger.warning("payment initiation not delivered", extra={"payment_id": payment.pk})
            with transaction.atomic():
                flush_audit()
                if sca_state is not None:  # the next submit makes a new one
                    connection_services.sca_state_spend(state=sca_state)
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
        except ClientError as error:
            if sca_state is not None:  # nothing exists at the bank: no approval will follow
                connection_services.sca_state_spend(state=sca_state)
            if not _store_refused(payment, error, actor=user, flush_audit=flush_audit, events=submitted):
                payment.refresh_from_db()
                return SubmitOutcome(payment=payment)
            held = _duplicate_evidence(payment, error, actor=user)
            by_field, general = bank_errors_by_field(payment.tpp_messages)
            if held is not None:
                general = [str(DUPLICATE_EVIDENCE), *general]
            if not by_field and not general:
                general = [_("The bank refused the payment (HTTP %(status)s).") % {"status": error.status}]
            return SubmitOutcome(payment=payment, field_errors=by_field, errors=general)
        except BaseException:
            # Whether the request left is not known: reconciliation finds out (it replays the same request).
            _store_unknown(
                payment,
                later=replay_window_end(payment),
                detail=_("The portal failed while sending the payment; checking with the bank."),
                actor=user,
                flush_audit=flush_audit,
                events=submitted,
            )
            raise
        if not _store_initiated(
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
    return _answered(payment, answer)


def is_logical_duplicate(tpp_messages) -> bool:
    """The bank refused the payment as a logical duplicate (its CONFLICT on allowLogicalDuplicate)."""
    return any(
        m.get("code") == "CONFLICT" and m.get("path") == "allowLogicalDuplicate" for m in tpp_messages or []
    )


def _duplicate_evidence(payment: Payment, error: Xs2aError, *, actor) -> Payment | None:
    """The bank refused ``payment`` as a logical duplicate while the user's payment alike is of unknown outcome:
    that is the bank's word that it holds the earlier one (not approved). The earlier one gets a note saying so;
    nothing is sent for it. Returns the earlier payment, or None."""
    if not is_logical_duplicate(_bank_messages(error)):
        return None
    earlier = payment_selectors.payment_alike_unknown(payment=payment)
    if earlier is None:
        return None
    PaymentEvent.objects.create(
        payment=earlier, kind=PaymentEventKind.NOTE, actor=actor, detail=str(DUPLICATE_EVIDENCE)[:512]
    )
    return earlier


def _answered(payment: Payment, answer: bank_models.PaymentInitiationResponse) -> SubmitOutcome:
    """The outcome of an initiation answer just stored: where the PSU goes next."""
    step = approval_step(sca_redirect=answer.sca_redirect, links=answer.links)
    if step == STEP_REDIRECT:
        return SubmitOutcome(payment=payment, sca_redirect=answer.sca_redirect or "")
    if step == STEP_NONE:
        return SubmitOutcome(payment=payment, message=no_approval_message(payment), approval_skipped=True)
    return SubmitOutcome(payment=payment)


# --- reconciliation ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReconcileOutcome:
    state: str
    message: str = ""
    attempted: bool = True
    #: As SubmitOutcome's: the bank started the approval with the (replayed) initiation, or asked for none.
    sca_redirect: str = ""
    approval_skipped: bool = False


#: How long before the end of the day a replay is no longer sent: a replay the bank processes after midnight would
#: be given the next day as its execution date (the payment form's date is optional) and not match the first.
REPLAY_DAY_MARGIN = timedelta(minutes=5)


def replay_window_end(payment: Payment) -> datetime | None:
    """Until when the lost initiation of ``payment`` may be replayed: PAYMENT_REPLAY_WINDOW after it was sent,
    and never within REPLAY_DAY_MARGIN of the end of that day in Oslo. A bank that takes a repeated X-Request-ID
    for a new request guards against a second payment only by its logical-duplicate check, which compares
    execution dates (an absent one is the bank's day): the replay must reach the bank on the first one's day."""
    sent = payment.submitted_at
    if sent is None:
        return None
    local = timezone.localtime(sent)
    day_end = timezone.make_aware(datetime.combine(local.date() + timedelta(days=1), datetime.min.time()))
    return max(sent, min(sent + settings.PAYMENT_REPLAY_WINDOW, day_end - REPLAY_DAY_MARGIN))


def replay_allowed(payment: Payment, now: datetime) -> bool:
    end = replay_window_end(payment)
    return end is not None and now < end


def _staff_event(payment: Payment | int, now: datetime, reason) -> PaymentEvent:
    payment_id = payment if isinstance(payment, int) else payment.pk
    return PaymentEvent(payment_id=payment_id, at=now, kind=PaymentEventKind.STAFF, detail=str(reason)[:512])


def _replay_backoff(attempts: int, error: Xs2aError | None, now: datetime) -> datetime:
    """When the user's next "check now" may replay: the backoff of the attempts so far, later when the bank
    said when (Retry-After of a 429 or a 503)."""
    later = now + RECONCILE_DELAYS[min(attempts, len(RECONCILE_DELAYS) - 1)]
    reset_at = getattr(error, "reset_at", None)
    retry_after = getattr(error, "retry_after", None)
    if reset_at is not None:
        later = max(later, reset_at)
    elif retry_after is not None:
        later = max(later, now + timedelta(seconds=float(retry_after)))
    return later


def _lease_expired_to_unknown(payment_id: int, now: datetime) -> bool:
    """SUBMITTING whose caller's lease ran out (the process died during its call): its answer, if any, was never
    stored. OUTCOME_UNKNOWN with a note; the background looks again at the end of the replay window."""
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return False
    rows = []
    if not PaymentEvent.objects.filter(payment_id=payment_id, kind=PaymentEventKind.SUBMITTED).exists():
        rows.append(
            PaymentEvent(payment_id=payment_id, at=payment.submitted_at or now, kind=PaymentEventKind.SUBMITTED)
        )
    rows.append(
        PaymentEvent(
            payment_id=payment_id,
            at=now,
            kind=PaymentEventKind.OUTCOME_UNKNOWN,
            detail=_("The portal stopped while waiting for the bank's answer; checking with the bank."),
        )
    )
    end = replay_window_end(payment)
    return payment_move(
        payment_id,
        source=PaymentState.SUBMITTING,
        target=PaymentState.OUTCOME_UNKNOWN,
        where={"reconcile_at__lte": now},
        events=rows,
        reconcile_at=end if end is not None and end > now else now,
        updated_at=now,
    )


def _past_window_to_unconfirmed(payment_id: int, now: datetime) -> bool:
    """OUTCOME_UNKNOWN after the replay window: never replayed again. UNCONFIRMED (looked for in its account's
    transactions) and passed to staff, who settle it with the bank."""
    reason = STAFF_REASON_WINDOW
    moved = payment_move(
        payment_id,
        source=PaymentState.OUTCOME_UNKNOWN,
        target=PaymentState.UNCONFIRMED,
        events=[
            PaymentEvent(
                payment_id=payment_id,
                at=now,
                kind=PaymentEventKind.OUTCOME_UNKNOWN,
                detail=_("The bank did not confirm the payment in time; it is no longer sent again."),
            ),
            _staff_event(payment_id, now, reason),
        ],
        psu_identity="",
        initiation_psu="",
        reconcile_at=None,
        replay_not_before=None,
        staff_flagged_at=now,
        staff_reason=str(reason)[:300],
        updated_at=now,
    )
    if moved:
        unconfirmed_find(payment_id=payment_id)
    return moved


def reconciliation_check(*, payment_id: int, now: datetime | None = None) -> str:
    """The background's look at a payment whose answer was lost (beat and the task at the window's end). It
    never replays (the PSU is not present, and a replay sends presence headers only with the PSU): a caller
    that died becomes OUTCOME_UNKNOWN; OUTCOME_UNKNOWN past the replay window becomes UNCONFIRMED with a staff
    flag; inside the window it waits for the window's end. Returns the payment's state."""
    now = now or timezone.now()
    _lease_expired_to_unknown(payment_id, now)
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return ""
    if payment.state == PaymentState.OUTCOME_UNKNOWN:
        if replay_allowed(payment, now):
            Payment.objects.filter(pk=payment_id, state=PaymentState.OUTCOME_UNKNOWN).update(
                reconcile_at=replay_window_end(payment)
            )
        else:
            _past_window_to_unconfirmed(payment_id, now)
    return Payment.objects.filter(pk=payment_id).values_list("state", flat=True).first() or ""


def _after_the_second_of(last_sent: datetime) -> None:
    """Wait, when needed, until the second after ``last_sent``. A replay is signed over the same X-Request-ID,
    body, PSU-ID and TPP-Redirect-URI as the send before it; only its Date, in whole seconds, tells the two
    apart, and the bank refuses a Signature it has seen (a replayed request). A "check now" in the same second
    as the lost send would be refused as a replay and passed to staff although the bank would have answered."""
    wait = (last_sent.replace(microsecond=0) + timedelta(seconds=1) - timezone.now()).total_seconds()
    if wait > 0:
        time.sleep(wait)


def payment_reconcile(*, payment_id: int, actor=None, presence: PsuContext | None = None) -> ReconcileOutcome:
    """Find out what became of an initiation whose answer was lost: with the PSU present ("check now") and
    inside the replay window, by replaying the very same request (same X-Request-ID and bytes, never allowing
    a logical duplicate); otherwise as ``reconciliation_check`` (no replay).

    One caller at a time per payment: the claim makes the payment SUBMITTING with a lease (a conditional
    UPDATE), as the first submission did.
    """
    now = timezone.now()
    if presence is None:
        state = reconciliation_check(payment_id=payment_id, now=now)
        return ReconcileOutcome(state=state, attempted=False)
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return ReconcileOutcome(state="", attempted=False)
    if payment.state == PaymentState.OUTCOME_UNKNOWN and not replay_allowed(payment, now):
        _past_window_to_unconfirmed(payment_id, now)
        payment.refresh_from_db(fields=["state"])
        return ReconcileOutcome(state=payment.state, message=UNCONFIRMED_MESSAGE, attempted=False)
    if (
        payment.state == PaymentState.OUTCOME_UNKNOWN
        and payment.replay_not_before
        and payment.replay_not_before > now
    ):
        return ReconcileOutcome(
            state=payment.state,
            attempted=False,
            message=_("The bank asked us to wait. Check again after %(time)s.")
            % {"time": timezone.localtime(payment.replay_not_before).strftime("%H:%M:%S")},
        )
    last_sent = payment.updated_at  # stored after the last send ended; the claim below moves it on
    claimed = payment_move(
        payment_id,
        source=PaymentState.OUTCOME_UNKNOWN,
        target=PaymentState.SUBMITTING,
        reconcile_at=_call_lease(now),
        reconcile_attempts=F("reconcile_attempts") + 1,
        updated_at=now,
    )
    if not claimed:
        state = Payment.objects.filter(pk=payment_id).values_list("state", flat=True).first() or ""
        return ReconcileOutcome(state=state, attempted=False)
    payment = Payment.objects.select_related("connection").get(pk=payment_id)
    stored = json.loads(payment.initiation_psu) if payment.initiation_psu else {}
    # The PSU's live request now, with the identity headers of the initiation.
    live = {name: getattr(presence, name) for name in _REPLAY_FIELDS if getattr(presence, name) is not None}
    headers = {
        **{k: v for k, v in stored.items() if k in ("psu_id", "corporate_id", "context")},
        **{k: v for k, v in live.items() if k not in ("psu_id", "corporate_id", "context")},
    }
    psu = PsuContext(**headers, identity=payment.psu_identity or None)
    attempts = payment.reconcile_attempts
    window_end = replay_window_end(payment) or now
    _after_the_second_of(last_sent)
    with bank_audit_deferred() as flush_audit:
        try:
            answer = _send(payment, psu, actor=actor, replay=True)
        except (*_ANSWER_LOST, TransportError, AccessExceededError) as error:
            # No answer, or "not now" (429, 5xx): the outcome is as unknown as before. Checking goes on with
            # backoff (the bank's Retry-After respected) inside the window; the background settles it after.
            not_before = _replay_backoff(attempts, error, now)
            _store_unknown(
                payment,
                later=window_end,
                not_before=not_before,
                detail="",
                actor=actor,
                flush_audit=flush_audit,
            )
            logger.warning(
                "payment reconciliation: no answer",
                extra={"payment_id": payment.pk, "error": type(error).__name__, "attempt": attempts},
            )
            return ReconcileOutcome(
                state=PaymentState.OUTCOME_UNKNOWN,
                message=_("The bank did not answer yet. Check again after %(time)s.")
                % {"time": timezone.localtime(not_before).strftime("%H:%M:%S")},
            )
        except ClientError as error:
            # Whether the first request arrived is still not known: a bank that refuses a repeated request
            # (CONFLICT, a logical duplicate) may hold the payment. Never REFUSED, never sent again by itself.
            logger.warning(
                "payment reconciliation: the replay was refused",
                extra={"payment_id": payment.pk, "error": type(error).__name__, "x_request_id": error.request_id},
            )
            _store_unconfirmed(payment, error, actor=actor, flush_audit=flush_audit)
            payment.refresh_from_db(fields=["state"])
            return ReconcileOutcome(state=payment.state, message=UNCONFIRMED_MESSAGE)
        except BaseException:
            _store_unknown(payment, later=window_end, detail="", actor=actor, flush_audit=flush_audit)
            raise
        # The replay carries the TPP-Redirect-URI of the SCA state made for the first submission (when it had
        # the PSU's browser session): an approval the bank starts now is tied to it.
        sca_state = payment.initiation_sca_state
        stored_answer = _store_initiated(
            payment,
            answer,
            kind=PaymentEventKind.RECONCILED,
            actor=actor,
            flush_audit=flush_audit,
            sca_state=sca_state,
        )
    payment.refresh_from_db(fields=["state"])
    if not stored_answer:
        return ReconcileOutcome(state=payment.state)
    answered = _answered(payment, answer)
    return ReconcileOutcome(
        state=payment.state,
        message=answered.message,
        sca_redirect=answered.sca_redirect,
        approval_skipped=answered.approval_skipped,
    )


def reconciliations_due(*, now=None, limit: int = 200) -> list[int]:
    """OUTCOME_UNKNOWN payments whose background look is due (the end of their replay window), and SUBMITTING
    ones whose caller's lease ran out."""
    now = now or timezone.now()
    return list(
        Payment.objects.filter(
            state__in=(PaymentState.OUTCOME_UNKNOWN, PaymentState.SUBMITTING), reconcile_at__lte=now
        )
        .order_by("reconcile_at", "id")
        .values_list("id", flat=True)[:limit]
    )
