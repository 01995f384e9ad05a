"""Payment drafts: a reviewed, unsent payment (its idempotency key, X-Request-ID and frozen body are made
here), one payment per intent of the payment form, and the deletion of a draft never sent.
"""

from __future__ import annotations

import logging
import uuid
from decimal import Decimal

from django.db import IntegrityError, transaction

from connections.models import BankConnection, PsuContextChoice
from payments.instructions import PaymentInstruction, initiation_body_json, new_reference, with_reference
from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentProduct, PaymentState
from payments.selectors import NokEquivalent
from payments.services.errors import PaymentServiceError

logger = logging.getLogger(__name__)


class IntentAlreadySent(PaymentServiceError):
    """The payment form was posted before (Back, reload, a second tab, a double click): ``payment`` is the one
    made from it, shown instead of a new one."""

    def __init__(self, payment: Payment) -> None:
        super().__init__(f"intent already used by payment {payment.pk}")
        self.payment = payment


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
