"""The mails that let a user follow a payment without keeping its page open: when it needs another signer, is
rejected (with the reason in plain words), is cancelled or is settled.

- **Recorded with the status.** ``payment_move`` (lifecycle.py) calls :func:`payment_mail_record` in the
  transaction that stores the bank's status: one ``PaymentMail`` per payment, event and user (a unique
  constraint), so a status read twice, or by two pollers at once, is one row (the poller that loses its lease
  rolls its row back with the rest). The owner is mailed; a payment that needs another signer also goes to the
  company's other signers in the portal who have not signed. Nothing is recorded for a user who turned the
  payment mails off ("My account").
- **Sent after the commit**, by the worker (``payments.send_payment_mails``, enqueued on commit; beat's
  ``payments.dispatch_payment_mails`` picks up whatever waits, every 5 minutes). :func:`payment_mails_send`
  claims all of the user's waiting rows in one conditional UPDATE under a lock of the user's row, so that no row
  goes in two mails, renders one mail in the user's language and sends it; ``sent_at`` records it.
- **Rate limit.** At most ``PAYMENT_MAILS_PER_HOUR`` mails per user in any 60 minutes: beyond that the events
  wait and go together in the next mail once the hour allows.
- **At most once.** A mail the server refused (``OSError``) releases its rows and is tried again; a worker killed
  between sending and recording leaves its rows claimed and never resends them: a lost mail rather than a twice
  sent one (the payment's page and list show the status in any case).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from connections.selectors import agreement_users
from core.templatetags.portal_format import money
from payments.models import Payment, PaymentAuthorisation, PaymentMail, PaymentMailKind
from payments.services import dispatch
from payments.status import rejection_reason
from users.selectors import confirmed_address, mail_settings

logger = logging.getLogger(__name__)

K = PaymentMailKind
SEND_TASK = "payments.send_payment_mails"
HOUR = timedelta(hours=1)

#: The bank's statuses a user is mailed about, and the event each one is.
MAILED_STATUSES: dict[str, str] = {
    "PATC": K.NEEDS_SIGNER,
    "RJCT": K.REJECTED,
    "CANC": K.CANCELLED,
    "ACSC": K.SETTLED,
    "ACCC": K.SETTLED,
}


@dataclass(frozen=True)
class MailRun:
    """What one :func:`payment_mails_send` did: ``events`` mailed in one mail (0: none sent), or ``wait_until``
    when the hour's limit held them back."""

    events: int = 0
    wait_until: datetime | None = None


def payment_mail_record(payment_id: int, status: str, *, now: datetime | None = None) -> bool:
    """Record that the payment reached ``status`` for the mails of those who follow it (within the caller's
    transaction) and enqueue the mails after the commit. False when the status is not mailed, the event is
    recorded already or nobody wants the mail."""
    kind = MAILED_STATUSES.get(status)
    if kind is None or PaymentMail.objects.filter(payment_id=payment_id, kind=kind).exists():
        return False
    payment = Payment.objects.select_related("connection").filter(pk=payment_id).first()
    if payment is None:
        return False
    at = now or timezone.now()
    users = [user_id for user_id in _recipients(payment, kind) if mail_settings(user_id).payment_mails]
    rows = [
        PaymentMail(payment_id=payment_id, user_id=user_id, kind=kind, transaction_status=status, created_at=at)
        for user_id in users
    ]
    PaymentMail.objects.bulk_create(rows, ignore_conflicts=True)  # a concurrent writer's rows stand
    for user_id in users:
        dispatch.enqueue(SEND_TASK, user_id)
    return bool(users)


def _recipients(payment: Payment, kind: str) -> list[int]:
    """The owner; for another signature, also the company's other signers in the portal who have not signed
    (the users who may sign it: payments.selectors.may_sign)."""
    users = [payment.user_id]
    connection = payment.connection
    if kind == K.NEEDS_SIGNER and payment.context == "CORPORATE" and connection is not None:
        signed = set(
            PaymentAuthorisation.objects.filter(payment=payment, completed_at__isnull=False).values_list(
                "signer_id", flat=True
            )
        )
        others = agreement_users(psu_corporate_id_hash=connection.psu_corporate_id_hash)
        users += [user_id for user_id in others if user_id != payment.user_id and user_id not in signed]
    return users


def payment_mails_send(user_id: int, *, now: datetime | None = None) -> MailRun:
    """Mail the user everything that waits for them, in one mail in their language, unless the hour's limit is
    reached. Raises ``OSError`` when the mail server refused it (the rows wait for the next try)."""
    now = now or timezone.now()
    with transaction.atomic():
        # One sender per user at a time: the count of the hour's mails and the claim are one step.
        user = get_user_model().objects.select_for_update().filter(pk=user_id).first()
        waiting = PaymentMail.objects.filter(user_id=user_id, claimed_at__isnull=True, dropped_at__isnull=True)
        chosen = mail_settings(user_id)
        address = confirmed_address(user) if user is not None else None
        if not chosen.payment_mails or not address:
            waiting.update(dropped_at=now)
            return MailRun()
        if not waiting.exists():
            return MailRun()
        this_hour = PaymentMail.objects.filter(user_id=user_id, claimed_at__gt=now - HOUR).exclude(claim="")
        claims = sorted(set(this_hour.values_list("claimed_at", "claim")))
        mails = {claim for _at, claim in claims}
        if len(mails) >= settings.PAYMENT_MAILS_PER_HOUR:
            oldest = claims[0][0]
            return MailRun(wait_until=oldest + HOUR)
        token = uuid.uuid4().hex
        waiting.update(claim=token, claimed_at=now)
    rows = list(PaymentMail.objects.filter(claim=token).select_related("payment").order_by("created_at", "pk"))
    with translation.override(chosen.language):
        subject, body = _render(rows)
    try:
        send_mail(subject, body, None, [address])
    except OSError:
        logger.warning("payment mail not sent; tried again", extra={"user_id": user_id})
        PaymentMail.objects.filter(claim=token, sent_at__isnull=True).update(claim="", claimed_at=None)
        raise
    PaymentMail.objects.filter(claim=token).update(sent_at=timezone.now())
    logger.info("payment mail sent", extra={"user_id": user_id, "events": len(rows)})
    return MailRun(events=len(rows))


def users_with_waiting_mails() -> list[int]:
    """The users whose payment mails wait (beat's dispatcher enqueues a sender for each)."""
    waiting = PaymentMail.objects.filter(claimed_at__isnull=True, dropped_at__isnull=True)
    return sorted(set(waiting.values_list("user_id", flat=True)))


# --- the words ------------------------------------------------------------------------------------------------
def _event_text(row: PaymentMail) -> str:
    payment = row.payment
    words = {"amount": money(payment.amount, payment.currency), "creditor": payment.creditor_name}
    if row.kind == K.NEEDS_SIGNER and row.user_id != payment.user_id:
        return (
            _(
                "A payment of your company, %(amount)s to %(creditor)s, needs your signature. Open it and choose "
                "to sign it at the bank."
            )
            % words
        )
    if row.kind == K.NEEDS_SIGNER:
        return (
            _(
                "The payment of %(amount)s to %(creditor)s needs another signature. Someone else who signs for "
                "the account must approve it at the bank before it can be carried out."
            )
            % words
        )
    if row.kind == K.REJECTED:
        # Why, in the words of the payment page and the home page (each says that no money was moved).
        lacked = payment.events.filter(funds_available=False).exists()
        return " ".join(
            [
                _("The bank rejected the payment of %(amount)s to %(creditor)s.") % words,
                rejection_reason(payment, lacked_funds=lacked),
            ]
        )
    if row.kind == K.CANCELLED:
        return _("The payment of %(amount)s to %(creditor)s was cancelled. No money was moved.") % words
    return _("The payment of %(amount)s to %(creditor)s is settled: the money has left your account.") % words


def _subject(rows: list[PaymentMail]) -> str:
    if len(rows) > 1:
        return _("Fjordpay: news about your payments")
    subjects = {
        K.NEEDS_SIGNER: _("Fjordpay: a payment needs another signature"),
        K.REJECTED: _("Fjordpay: a payment was rejected"),
        K.CANCELLED: _("Fjordpay: a payment was cancelled"),
        K.SETTLED: _("Fjordpay: a payment is settled"),
    }
    return subjects[rows[0].kind]


def _render(rows: list[PaymentMail]) -> tuple[str, str]:
    base = settings.PORTAL_BASE_URL.rstrip("/")
    events = [
        {
            "text": _event_text(row),
            "reference": row.payment.reference,
            "link": base + reverse("payment-detail", kwargs={"pk": row.payment_id}),
        }
        for row in rows
    ]
    context = {"events": events, "account_link": base + reverse("account")}
    return _subject(rows), render_to_string("payments/email/payment_news.txt", context)
