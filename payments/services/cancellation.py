"""Cancelling a payment at the bank (DELETE on the payment; available for all products in the sandbox, spec 4.3)
while the bank still allows it: before settlement begins. The bank decides; its refusal is shown in its words.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext as _

from connections.models import ConnectionState
from core.bank import bank_audit_context, bank_client
from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.services.polling import payment_poll, poll_soon
from payments.status import NOT_CANCELLABLE
from xs2a.errors import Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CancelOutcome:
    ok: bool
    message: str
    status: str = ""


def cancellable(payment: Payment) -> bool:
    """Whether to offer cancelling: the bank has the payment and has not begun to settle it."""
    return bool(payment.payment_id) and payment.transaction_status not in NOT_CANCELLABLE


def _psu(payment: Payment, presence: PsuContext) -> PsuContext:
    connection = payment.connection
    if connection is None or connection.state == ConnectionState.DISCONNECTED or not connection.psu_id:
        return presence
    return dataclasses.replace(
        presence, psu_id=connection.psu_id, corporate_id=connection.psu_corporate_id or None
    )


def payment_cancel(*, payment: Payment, actor, presence: PsuContext) -> CancelOutcome:
    """Ask the bank to cancel ``payment`` (the PSU present), note it on the timeline, and read the new status.

    The request is noted before the bank is called, so the timeline shows it whatever happens next. A refusal
    (for example 409: settlement has begun) leaves the payment as it is, with the bank's text.
    """
    if not cancellable(payment):
        return CancelOutcome(
            ok=False, message=_("This payment can no longer be cancelled."), status=payment.transaction_status
        )
    PaymentEvent.objects.create(
        payment=payment,
        at=timezone.now(),
        kind=PaymentEventKind.CANCEL_REQUESTED,
        transaction_status="",
        actor=actor,
    )
    href = payment.links.get("self") if isinstance(payment.links, dict) else None
    try:
        with bank_audit_context(user=actor, obj=payment):
            answer = bank_client().payments.delete(
                href=href if isinstance(href, str) and href else None,
                payment_id=payment.payment_id,
                product=payment.product,
                psu=_psu(payment, presence),
            )
    except Xs2aError as error:
        text = error.text or error.code or _("The bank did not answer. Please try again later.")
        PaymentEvent.objects.create(
            payment=payment,
            at=timezone.now(),
            kind=PaymentEventKind.BANK_ERROR,
            detail=str(text)[:512],
            actor=actor,
        )
        logger.info(
            "payment cancellation refused",
            extra={"payment_id": payment.pk, "status": error.status, "x_request_id": error.request_id},
        )
        return CancelOutcome(ok=False, message=str(text), status=payment.transaction_status)
    if answer.start_authorisation:
        # The bank wants the cancellation approved with SCA (not the case in the sandbox, which answers 204).
        return CancelOutcome(
            ok=False,
            message=_("The bank asks for the cancellation to be approved; cancel the payment in your bank."),
            status=answer.transaction_status or payment.transaction_status,
        )
    polled = payment_poll(payment_id=payment.pk, actor=actor)
    if polled.skipped:
        poll_soon(payment)
    return CancelOutcome(ok=True, message=_("The payment is cancelled."), status=polled.status)
