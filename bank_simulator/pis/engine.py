"""The status engine: batch processing five times a day on the bank's business clock.

After SCA a payment is PDNG. Only batches move it on, at the slots of ``BANK_SIM_BATCH_TIMES`` (business
time, UTC like every business date of the simulator, every day of the week):

    PDNG --batch--> ACTC                 execution date still ahead (it waits for that day's first batch)
    PDNG/ACTC --batch--> ACSP            funds available: the amount and fee are reserved (a pending item)
    PDNG/ACTC --batch--> ACCP            funds missing: fundsAvailable false; checked again in every batch
    ACCP --batch--> ACSP                 the funds arrived
    ACCP --batch--> RJCT                 still missing in a batch of a later day than the first check
    ACSP --batch--> ACSC                 settled: the reservation books, the debtor account is debited
                                         (ACCC instead with BANK_SIM_CREDIT_FINAL=ACCC)

Each payment carries ``next_batch_at``, the slot at which a batch next looks at it. ``run_due`` processes
every slot that has passed on the business clock, in order; it runs before every payment operation answers
and in the sandbox controls, so what a TPP reads depends on the clock, never on how often it reads.
``run_now`` is the sandbox's extra, unscheduled batch.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from bank_simulator import selectors as bank_selectors
from bank_simulator.identifiers import opaque_id
from bank_simulator.models import Account, AccountKind, BookingStatus, Transaction
from bank_simulator.pis import tables
from bank_simulator.pis.models import BATCH_STATUSES, Payment, TransactionStatus
from bank_simulator.pis.schedule import first_slot_on, next_slot_after
from bank_simulator.pis.services import payment_move

BANK_NAME = "Sandkasse Bank"
_CHUNK = 200


def run_due(*, now: dt.datetime) -> int:
    """Process every scheduled slot up to ``now``. Returns the number of payment steps taken."""
    if not Payment.objects.filter(next_batch_at__lte=now).exists():
        return 0
    steps = 0
    while True:
        due = list(
            Payment.objects.filter(next_batch_at__lte=now)
            .order_by("next_batch_at", "id")
            .values_list("id", "next_batch_at")[:_CHUNK]
        )
        if not due:
            return steps
        for pk, slot in due:
            steps += _step(pk, slot=slot, expected_slot=slot)


def run_now(*, now: dt.datetime) -> int:
    """The scheduled slots that have passed, then one extra batch at ``now`` over every waiting payment."""
    steps = run_due(now=now)
    waiting = list(
        Payment.objects.filter(status__in=BATCH_STATUSES).order_by("id").values_list("id", "next_batch_at")
    )
    for pk, slot in waiting:
        steps += _step(pk, slot=now, expected_slot=slot)
    return steps


def _step(pk: int, *, slot: dt.datetime, expected_slot: dt.datetime | None) -> int:
    """One batch looks at one payment. Skipped when another process has taken this step already."""
    with transaction.atomic():
        payment = (
            Payment.objects.select_for_update()
            .select_related("debtor_account__owner")
            .filter(pk=pk, next_batch_at=expected_slot, status__in=BATCH_STATUSES)
            .first()
        )
        if payment is None:
            return 0
        _advance(payment, slot)
        return 1


def _advance(payment: Payment, slot: dt.datetime) -> None:
    day = slot.astimezone(dt.UTC).date()
    following = next_slot_after(slot)
    label = f"batch {slot:%Y-%m-%d %H:%M} UTC"
    status = payment.status
    if status == TransactionStatus.ACSP:
        _settle(payment, day)
        payment_move(
            payment,
            to=settings.BANK_SIM_CREDIT_FINAL,
            now=slot,
            reason=f"{label}: settled",
            next_batch_at=None,
            reservation_transaction_id="",
        )
        return
    if status == TransactionStatus.ACTC and payment.execution_date > day:
        return  # an extra batch (run_now) before the execution date: nothing to do yet
    if status == TransactionStatus.PDNG and payment.execution_date > day:
        payment_move(
            payment,
            to=TransactionStatus.ACTC,
            now=slot,
            reason=f"{label}: technically valid, waits for {payment.execution_date.isoformat()}",
            next_batch_at=first_slot_on(payment.execution_date),
        )
        return
    account = payment.debtor_account
    needed = payment.debit_amount + payment.fee_amount
    available = bank_selectors.account_balances(account=account, today=day).interim_available
    if available >= needed:
        reservation = _reserve(payment, day)
        payment_move(
            payment,
            to=TransactionStatus.ACSP,
            now=slot,
            reason=f"{label}: funds reserved, settlement in process",
            next_batch_at=following,
            funds_available=True,
            reservation_transaction_id=reservation.transaction_id,
        )
        return
    if status == TransactionStatus.ACCP and payment.funds_missing_since and day > payment.funds_missing_since:
        payment_move(
            payment,
            to=TransactionStatus.RJCT,
            now=slot,
            reason=f"{label}: funds still missing since {payment.funds_missing_since.isoformat()}",
            next_batch_at=None,
            funds_available=False,
        )
        return
    payment_move(
        payment,
        to=TransactionStatus.ACCP,
        now=slot,
        reason=f"{label}: funds missing ({needed} {account.currency} needed, {available} available)",
        next_batch_at=following,
        funds_available=False,
        funds_missing_since=payment.funds_missing_since or day,
    )


def _remittance(payment: Payment) -> list[str]:
    text = payment.submitted.get("remittanceInformationUnstructured")
    return [text] if text else []


def _kid(payment: Payment) -> str:
    """The KID the payment was sent with (validation.py keeps at most one), shown on its transactions."""
    for entry in payment.submitted.get("remittanceInformationStructuredArray") or []:
        if entry.get("referenceType") == "KID":
            return entry.get("reference", "")
    return ""


def _sequence(account: Account, day: dt.date) -> int:
    return 2000 + Transaction.objects.filter(account=account, booking_date=day).count()


def _reserve(payment: Payment, day: dt.date) -> Transaction:
    account = payment.debtor_account
    return Transaction.objects.create(
        account=account,
        transaction_id=opaque_id(payment.payment_id, "reservation"),
        booking_status=BookingStatus.PENDING,
        booking_date=day,
        books_on=None,  # books when the payment settles, not by date (part 1's transactions_settle_due)
        amount=-(payment.debit_amount + payment.fee_amount),
        currency=account.currency,
        counterparty_name=payment.creditor_name,
        counterparty_iban=payment.creditor_iban,
        counterparty_bban=payment.creditor_bban,
        remittance_lines=["Reservasjon", *_remittance(payment)],
        end_to_end_id=payment.payment_id[:35],
        bank_transaction_code="R_700",
        sequence=_sequence(account, day),
    )


def _settle(payment: Payment, day: dt.date) -> None:
    """Book the payment (and its fee) on the debtor account and debit its balance."""
    account = payment.debtor_account
    if payment.reservation_transaction_id:
        Transaction.objects.filter(account=account, transaction_id=payment.reservation_transaction_id).delete()
    Transaction.objects.create(
        account=account,
        transaction_id=opaque_id(payment.payment_id, "booked"),
        booking_status=BookingStatus.BOOKED,
        booking_date=day,
        value_date=day,
        amount=-payment.debit_amount,
        currency=account.currency,
        counterparty_name=payment.creditor_name,
        counterparty_iban=payment.creditor_iban,
        counterparty_bban=payment.creditor_bban,
        remittance_lines=_remittance(payment) or [f"Betaling til {payment.creditor_name}"[:140]],
        kid=_kid(payment),
        end_to_end_id=payment.payment_id[:35],
        bank_transaction_code="R_700",
        additional_information={"additionalInformationProprietary1": f"paymentId {payment.payment_id}"},
        sequence=_sequence(account, day),
    )
    total = payment.debit_amount
    if payment.fee_amount > Decimal("0"):
        Transaction.objects.create(
            account=account,
            transaction_id=opaque_id(payment.payment_id, "fee"),
            booking_status=BookingStatus.BOOKED,
            booking_date=day,
            value_date=day,
            amount=-payment.fee_amount,
            currency=account.currency,
            counterparty_name=BANK_NAME,
            remittance_lines=["Gebyr betaling"],
            bank_transaction_code="R_790",
            sequence=_sequence(account, day),
        )
        total += payment.fee_amount
    Account.objects.filter(pk=account.pk).update(booked_balance=F("booked_balance") - total)
    _credit_if_ours(payment, day)


def _credit_if_ours(payment: Payment, day: dt.date) -> None:
    """A creditor account of this bank is credited in the same batch (in its own currency)."""
    query = Q()
    if payment.creditor_iban:
        query |= Q(iban=payment.creditor_iban)
    if payment.creditor_bban:
        query |= Q(bban=payment.creditor_bban)
    creditor = (
        Account.objects.filter(query, kind=AccountKind.ACCOUNT).exclude(pk=payment.debtor_account_id).first()
    )
    if creditor is None:
        return
    amount = tables.quantize(
        tables.convert(payment.amount, source=payment.currency, target=creditor.currency), creditor.currency
    )
    Transaction.objects.create(
        account=creditor,
        transaction_id=opaque_id(payment.payment_id, "credit"),
        booking_status=BookingStatus.BOOKED,
        booking_date=day,
        value_date=day,
        amount=amount,
        currency=creditor.currency,
        counterparty_name=payment.debtor_account.owner.name[:70],
        counterparty_iban=payment.debtor_account.iban,
        counterparty_bban=payment.debtor_account.bban,
        remittance_lines=_remittance(payment),
        kid=_kid(payment),
        end_to_end_id=payment.payment_id[:35],
        bank_transaction_code="R_710",
        sequence=_sequence(creditor, day),
    )
    Account.objects.filter(pk=creditor.pk).update(booked_balance=F("booked_balance") + amount)
