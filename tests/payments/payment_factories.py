"""Payments as the initiation leaves them (identifiers made up; the bank does not know them)."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import factory
from django.utils import timezone

from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentProduct, PaymentState
from tests.factories import UserFactory


def _body(payment) -> str:
    return json.dumps(
        {
            "instructedAmount": {"currency": payment.currency, "amount": str(payment.amount)},
            "creditorName": payment.creditor_name,
            "creditorAccount": {"iban": payment.creditor_account},
            "debtorAccount": {"bban": payment.debtor_account},
        },
        separators=(",", ":"),
    )


class PaymentFactory(factory.django.DjangoModelFactory):
    """A cross-border payment the bank has accepted (RCVD) and the PSU is approving."""

    class Meta:
        model = Payment

    user = factory.SubFactory(UserFactory)
    product = PaymentProduct.CROSS_BORDER
    context = "PRIVATE"
    state = PaymentState.AUTHORISING
    idempotency_key = factory.LazyFunction(uuid.uuid4)
    request_id = factory.LazyFunction(uuid.uuid4)
    amount = Decimal("150000.00")
    currency = "NOK"
    debtor_account = "12345678903"
    creditor_name = "Müller Maschinenbau GmbH"
    creditor_account = "DE89370400440532013000"
    body_json = factory.LazyAttribute(_body)
    payment_id = factory.Sequence(lambda n: f"enc!!payment{n:04d}=")
    transaction_status = "RCVD"
    fee_amount = Decimal("50.00")
    fee_currency = "NOK"
    fee_indicator = True
    submitted_at = factory.LazyFunction(timezone.now)


def status_event(payment: Payment, status: str, *, at=None, funds_available=None) -> PaymentEvent:
    return PaymentEvent.objects.create(
        payment=payment,
        at=at or timezone.now(),
        kind=PaymentEventKind.STATUS,
        transaction_status=status,
        funds_available=funds_available,
    )
