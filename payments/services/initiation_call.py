"""The initiation call (the first send and its replays) and what its answer is stored as.

Shared by the submission (payments.services.submission) and the reconciliation of a lost answer
(payments.services.reconciliation):

- No bank call runs inside ``transaction.atomic``. What a call came to (the answer, the timeline events and
  the audit row of the call) is stored in one transaction after it, by a conditional move of the payment
  (payments.services.lifecycle.payment_move): of two writers of one answer only one stores it.
- A replay sends the same request: the same X-Request-ID, the same bytes, the same TPP-Session-ID and PSU
  headers, and never allows a logical duplicate.
- The national identity number (single SCA) and the PSU headers are kept, encrypted, only while the answer is
  unknown; they are erased as soon as it is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from connections import sca as connection_sca
from connections.models import ScaState
from core.bank import bank_audit_context, bank_client
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import dispatch
from payments.services.approval_steps import (
    ENDED_UNSIGNED,
    NO_APPROVAL_DETAIL,
    STEP_NONE,
    STEP_REDIRECT,
    approval_step,
    no_approval_message,
    state_without_approval,
)
from payments.services.lifecycle import payment_move
from payments.services.polling import poll_soon
from xs2a import models as bank_models
from xs2a.errors import (
    OutcomeUnknownError,
    ResponseSignatureError,
    ServerError,
    UnexpectedResponseError,
    Xs2aError,
)
from xs2a.psu import HEADER_FIELDS, PsuContext

#: A reconciler holds the payment this long (a conditional UPDATE of reconcile_at claims it).
RECONCILE_LEASE = timedelta(minutes=2)

# The PSU headers kept for a replay: PsuContext fields, as sent (the X-PSU-IDENTITY of a single-SCA payment and
# the TPP-Session-ID are the payment's own).
REPLAY_FIELDS = tuple(name for name in HEADER_FIELDS if name not in ("identity", "tpp_session_id"))


def bank_messages(error: Xs2aError) -> list[dict[str, Any]]:
    return [{"category": m.category, "code": m.code, "path": m.path, "text": m.text} for m in error.tpp_messages]


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
ANSWER_LOST = (OutcomeUnknownError, ServerError, ResponseSignatureError, UnexpectedResponseError)
#: Left as they are by a call that got its answer: a lost answer or a crashed caller (the lease ran out).
_CALLING_STATES = (PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN)


def call_lease(now: datetime) -> datetime:
    """Until when a caller holds a SUBMITTING payment (``reconcile_at``): longer than any one initiation call
    can last. After it, the caller is taken for dead (process killed) and reconciliation takes over."""
    timeout = float(settings.BANK_TIMEOUT)
    lease = settings.PAYMENT_CALL_LEASE  # only the fault tests' faster clock sets it
    if lease is None:
        return now + max(RECONCILE_LEASE, timedelta(seconds=2 * timeout + 60))
    return now + max(lease, timedelta(seconds=2 * timeout))  # never shorter than a connect and a read


def store_initiated(
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
    step = approval_step(sca_redirect=answer.sca_redirect, links=answer.links)
    rows = _answer_events(payment, fields, kind=kind, actor=actor, now=now, events=events)
    authorisation = _step_fields(payment, fields, rows, step=step, actor=actor, now=now, sca_state=sca_state)
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
                connection_sca.sca_state_spend(state=sca_state, now=now)
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


def _answer_events(
    payment: Payment, fields: dict[str, Any], *, kind: str, actor, now: datetime, events: tuple[PaymentEvent, ...]
) -> list[PaymentEvent]:
    """The timeline events of an answer: ``events`` first, "the bank confirmed" (unless ``kind`` is STATUS),
    then the bank's status."""
    rows = [*events]
    if kind != PaymentEventKind.STATUS:
        confirmed = _("The bank confirmed the payment.")
        rows.append(PaymentEvent(payment=payment, at=now, kind=kind, actor=actor, detail=confirmed))
    rows.append(
        PaymentEvent(
            payment=payment,
            at=now,
            kind=PaymentEventKind.STATUS,
            transaction_status=fields["transaction_status"],
            detail=fields["psu_message"],
        )
    )
    return rows


def _step_fields(
    payment: Payment,
    fields: dict[str, Any],
    rows: list[PaymentEvent],
    *,
    step: str,
    actor,
    now: datetime,
    sca_state: ScaState | None,
) -> PaymentAuthorisation | None:
    """Add to ``fields`` (the state among them) and ``rows`` what the answer's next ``step`` writes; the
    initiator's authorisation to save with them, when the step makes one."""
    status = fields["transaction_status"]
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
        if status not in ENDED_UNSIGNED:  # the bank counts the initiator's signature
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
    return authorisation


def store_refused(
    payment: Payment, error: Xs2aError, *, actor, flush_audit, events: tuple[PaymentEvent, ...] = ()
) -> bool:
    """A 4xx: nothing exists at the bank. The bank's messages are kept (the form shows them by field)."""
    now = timezone.now()
    messages_ = bank_messages(error)
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


def store_unknown(
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


def _enqueue_reconcile(payment_pk: int, *, countdown: int) -> None:
    """Enqueue a reconciliation (once the transaction commits); beat's dispatcher catches a lost one."""
    dispatch.enqueue(dispatch.RECONCILE, payment_pk, countdown=countdown)


def send(
    payment: Payment, psu: PsuContext, *, actor, replay: bool = False
) -> bank_models.PaymentInitiationResponse:
    """The one initiation call (and its replays): the stored bytes, X-Request-ID, TPP-Session-ID and the
    TPP-Redirect-URI of the SCA state made for it (when the PSU's browser session was known).

    A replay never allows a logical duplicate: a bank that takes the repeated X-Request-ID for a new request then
    refuses it when the first arrived, instead of making a second payment. (The specification promises nothing
    about a repeated X-Request-ID: "identifier unique to the call".)"""
    with bank_audit_context(user=actor, obj=payment):
        return bank_client().payments.initiate(
            payment.body_json.encode("utf-8"),
            psu=psu,
            product=payment.product,
            tpp_session_id=payment.tpp_session_id,
            redirect_uri=(
                connection_sca.sca_redirect_uri(payment.initiation_sca_state)
                if payment.initiation_sca_state_id
                else None
            ),
            allow_logical_duplicate=False if replay else payment.allow_logical_duplicate,
            redirect_preferred=False if payment.approve_in_app else None,
            request_id=str(payment.request_id),
        )


@dataclass(frozen=True)
class NextStep:
    """Where the PSU goes after an initiation answer just stored: to the bank's ``sca_redirect`` (the bank
    started the approval with the initiation), nowhere with ``message`` (``approval_skipped``: the bank asked for
    no approval; its status is read at once), or on to the approval (all empty: startAuthorisation follows)."""

    message: str = ""
    sca_redirect: str = ""
    approval_skipped: bool = False


def next_step(payment: Payment, answer: bank_models.PaymentInitiationResponse) -> NextStep:
    """The next step of an initiation answer just stored."""
    step = approval_step(sca_redirect=answer.sca_redirect, links=answer.links)
    if step == STEP_REDIRECT:
        return NextStep(sca_redirect=answer.sca_redirect or "")
    if step == STEP_NONE:
        return NextStep(message=no_approval_message(payment), approval_skipped=True)
    return NextStep()
