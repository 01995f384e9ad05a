"""What staff settle by hand: the payments the portal could not settle by itself (the staff queue).

A payment lands there (``staff_flagged_at``) when its answer was lost and the replay window passed, when the bank
refused the replay of a lost answer (it may hold the payment), or when no final status came within the poll
horizon. Staff ask the bank (its support, the account's statements) and record what it said; the user's payments
alike are held back until then (payments.services.submission: a payment alike of unknown outcome). A payment
flagged at the horizon leaves the queue once a status read ("Poll the bank's status now") finds it final.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext as _

from core import bank as portal_bank
from payments.models import FINAL_TRANSACTION_STATUSES, Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services.lifecycle import payment_move
from payments.services.polling import poll_soon
from xs2a.errors import Xs2aError


def payment_staff_settle(*, payment_id: int, staff_user, at_bank: bool) -> bool:
    """A payment the bank did not confirm (UNCONFIRMED), settled by staff with the bank: FOUND (the bank has it)
    or NOT_AT_BANK (it does not: the user may pay anew). True when this call settled it."""
    now = timezone.now()
    detail = (
        _("Our staff checked with the bank: the bank has this payment.")
        if at_bank
        else _("Our staff checked with the bank: the bank does not have this payment. It was not paid.")
    )
    return payment_move(
        payment_id,
        source=PaymentState.UNCONFIRMED,
        target=PaymentState.FOUND if at_bank else PaymentState.NOT_AT_BANK,
        events=[
            PaymentEvent(
                payment_id=payment_id,
                at=now,
                kind=PaymentEventKind.STAFF_RESOLVED,
                actor=staff_user,
                detail=detail,
            )
        ],
        staff_flagged_at=None,
        staff_reason="",
        updated_at=now,
    )


@dataclass(frozen=True)
class AttachOutcome:
    ok: bool
    message: str


def _same_payment(payment: Payment, details) -> str:
    """Why the bank's payment ``details`` is not ``payment`` (amount, currency, debtor, creditor), or ""."""
    order = details.payment
    ours = (payment.amount, payment.currency, payment.debtor_account, payment.creditor_account)
    theirs = (
        order.instructed_amount.amount,
        order.instructed_amount.currency,
        order.debtor_account.iban or order.debtor_account.bban,
        order.creditor_account.iban or order.creditor_account.bban,
    )
    if ours != theirs:
        return _("the bank's payment is for another amount, currency or account")
    text = order.remittance_information_unstructured or ""
    if payment.reference and payment.reference not in text:
        return _("the bank's payment does not carry this payment's reference")
    return ""


def payment_staff_attach(*, payment_id: int, staff_user, bank_payment_id: str) -> AttachOutcome:
    """Staff learned from the bank (its support, or its duplicate refusal naming it) the paymentId of an
    unconfirmed payment the bank holds. The portal believes it only when the bank confirms it: it reads that
    payment (GET) and compares amount, currency, accounts and the portal's reference. Then the payment is
    followed again (its status read at once) and the payer can approve it in the portal, instead of it
    lapsing at the bank."""
    payment = Payment.objects.filter(pk=payment_id, state=PaymentState.UNCONFIRMED).first()
    if payment is None:
        return AttachOutcome(False, _("only a payment the bank did not confirm is attached this way."))
    bank_payment_id = bank_payment_id.strip()
    if not bank_payment_id:
        return AttachOutcome(False, _("give the bank's paymentId."))
    try:
        with portal_bank.bank_audit_context(user=staff_user, obj=payment):
            details = portal_bank.bank_client().payments.get(payment_id=bank_payment_id, product=payment.product)
    except Xs2aError as error:
        return AttachOutcome(
            False,
            _("the bank did not confirm that payment: %(text)s") % {"text": error.text or error.code or error},
        )
    mismatch = _same_payment(payment, details)
    if mismatch:
        return AttachOutcome(False, _("not attached: %(reason)s.") % {"reason": mismatch})
    status = (details.transaction_status or "")[:4]
    if status in FINAL_TRANSACTION_STATUSES:
        target = PaymentState.FINAL
    elif status in ("", "RCVD", "PATC"):
        target = PaymentState.INITIATED
    else:
        target = PaymentState.AWAITING_STATUS
    now = timezone.now()
    links = {name: link.href for name, link in details.links.items()}
    moved = payment_move(
        payment.pk,
        source=PaymentState.UNCONFIRMED,
        target=target,
        events=[
            PaymentEvent(
                payment=payment,
                at=now,
                kind=PaymentEventKind.STAFF_RESOLVED,
                actor=staff_user,
                detail=_("Our staff found this payment at the bank; it is followed again."),
            ),
            PaymentEvent(payment=payment, at=now, kind=PaymentEventKind.STATUS, transaction_status=status),
        ],
        payment_id=bank_payment_id[:200],
        transaction_status=status,
        links=links,
        staff_flagged_at=None,
        staff_reason="",
        final_at=now if target == PaymentState.FINAL else None,
        updated_at=now,
    )
    if not moved:
        return AttachOutcome(False, _("it was settled meanwhile."))
    if target != PaymentState.FINAL:
        poll_soon(payment)
    return AttachOutcome(
        True, _("attached to the bank's payment (status %(status)s).") % {"status": status or "-"}
    )
