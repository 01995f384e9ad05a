"""The home page's reads of payments: the latest payments, and the notices at the top of the page (payments
that need the user or changed lately), from the payments' stored state and events. Two queries and the one of
``payments_visible_to``, whatever the number of payments."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Case, Exists, OuterRef, Q, Value, When
from django.utils import timezone
from django.utils.translation import gettext as _

from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentState
from payments.selectors import payments_visible_to
from payments.status import SETTLED_STATUSES, StatusText, rejection_reason, status_text

#: Payments in the home page's list of the latest ones.
RECENT_PAYMENTS = 5
#: How long a rejected, cancelled or settled payment stays among the notices.
NOTICE_DAYS = 7
#: Notices shown at most (the payments page lists every payment).
NOTICES_SHOWN = 8


class NoticeKind:
    SIGN = "sign"  # a company's payment waits for this user's signature
    OTHER_SIGNER = "other_signer"  # the user's payment (or one they signed) waits for another signer
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    SETTLED = "settled"


@dataclass(frozen=True)
class PaymentNotice:
    payment: Payment
    kind: str  # a NoticeKind
    title: str  # what happened, in a few words
    text: str  # what it means for the user, in plain words (a rejection's reason)
    tone: str  # as StatusText.tone
    at: datetime | None  # when it happened (the final status), None while it waits


@dataclass(frozen=True)
class HomePayments:
    recent: list[tuple[Payment, StatusText]]
    notices: list[PaymentNotice]
    more_notices: bool


def _notice(payment: Payment, *, user: Any) -> PaymentNotice:
    status = payment.transaction_status
    if status == "PATC":
        if payment.user_id != user.pk and not payment.signed_by_user:
            return PaymentNotice(
                payment,
                NoticeKind.SIGN,
                _("Waits for your signature"),
                _("The company's agreement needs your approval before the bank carries it out."),
                "warn",
                None,
            )
        return PaymentNotice(
            payment,
            NoticeKind.OTHER_SIGNER,
            _("Waits for another signer"),
            _("Another signer of the company must approve it in the portal before the bank carries it out."),
            "progress",
            None,
        )
    if status == "RJCT":
        return PaymentNotice(
            payment, NoticeKind.REJECTED, _("Rejected"), rejection_reason(payment), "bad", payment.final_at
        )
    if status == "CANC":
        return PaymentNotice(
            payment,
            NoticeKind.CANCELLED,
            _("Cancelled"),
            _("The payment was cancelled before it was carried out. No money was moved."),
            "bad",
            payment.final_at,
        )
    return PaymentNotice(
        payment,
        NoticeKind.SETTLED,
        _("Paid"),
        _("The payment is settled: the money has left your account."),
        "ok",
        payment.final_at,
    )


def home_payments(*, user: Any, now: datetime | None = None) -> HomePayments:
    """The user's latest payments (their own drafts among them) and the notices: every payment waiting for a
    signer (PATC), and those rejected, cancelled or settled within the last NOTICE_DAYS days."""
    now = now or timezone.now()
    visible = payments_visible_to(user)  # one query: the user's confirmed agreements
    recent = list(
        visible.exclude(Q(state=PaymentState.DRAFT) & ~Q(user=user))
        .select_related("connection")
        .order_by("-created_at", "-id")[:RECENT_PAYMENTS]
    )
    signed = PaymentAuthorisation.objects.filter(payment=OuterRef("pk"), signer=user, completed_at__isnull=False)
    lacked = PaymentEvent.objects.filter(payment=OuterRef("pk"), funds_available=False)
    since = now - timedelta(days=NOTICE_DAYS)
    changed = Q(transaction_status__in=["RJCT", "CANC", *sorted(SETTLED_STATUSES)], final_at__gte=since)
    waiting = Q(transaction_status="PATC")
    rows = list(
        visible.filter(waiting | changed)
        .annotate(signed_by_user=Exists(signed), lacked_funds=Exists(lacked))
        .annotate(
            priority=Case(  # what the user can act on first, then what happened, by its gravity
                When(waiting & ~Q(user=user) & Q(signed_by_user=False), then=Value(0)),
                When(waiting, then=Value(1)),
                When(transaction_status="RJCT", then=Value(2)),
                When(transaction_status="CANC", then=Value(3)),
                default=Value(4),
            )
        )
        .select_related("connection")
        .order_by("priority", "-final_at", "-created_at", "-id")[: NOTICES_SHOWN + 1]
    )
    notices = [_notice(p, user=user) for p in rows]
    return HomePayments(
        recent=[(p, status_text(p.transaction_status, p.funds_available)) for p in recent],
        notices=notices[:NOTICES_SHOWN],
        more_notices=len(notices) > NOTICES_SHOWN,
    )
