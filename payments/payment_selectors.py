"""Reads of payments for their pages: who may see a payment, its timeline, the list with its filters.

Who may see a payment: the user who initiated it; and, for a corporate payment, another portal user of the
same company (a corporate connection with the same PSU-Corporate-ID, compared by its keyed hash) while the
payment waits for further signatures (PATC) or once that user has signed it. Everyone else gets 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.models import BankConnection, ConnectionState, PsuContextChoice
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind
from payments.status import StatusText, status_text


def company_hashes(user: Any) -> list[str]:
    """The PSU-Corporate-ID hashes of the user's live corporate connections."""
    return list(
        BankConnection.objects.filter(user=user, context=PsuContextChoice.CORPORATE)
        .exclude(state=ConnectionState.DISCONNECTED)
        .exclude(psu_corporate_id_hash="")
        .values_list("psu_corporate_id_hash", flat=True)
    )


def payments_visible_to(user: Any) -> QuerySet[Payment]:
    """Every payment the user may open: their own, and their company's that need or have their signature."""
    if user is None or not user.is_authenticated:
        return Payment.objects.none()
    hashes = company_hashes(user)
    visible = Q(user=user)
    if hashes:
        signed = PaymentAuthorisation.objects.filter(payment=OuterRef("pk"), signer=user)
        visible |= Q(
            context=PsuContextChoice.CORPORATE,
            connection__psu_corporate_id_hash__in=hashes,
        ) & (Q(transaction_status="PATC") | Q(Exists(signed)))
    return Payment.objects.filter(visible)


def payment_for_viewer(*, user: Any, pk: Any) -> Payment:
    """The payment ``pk`` if the user may see it, else Http404 (another user's and a missing one look alike)."""
    try:
        return payments_visible_to(user).select_related("connection", "user").get(pk=int(pk))
    except (Payment.DoesNotExist, ValueError, TypeError):
        raise Http404("no such payment") from None


def payment_owned(*, user: Any, pk: Any) -> Payment:
    """The payment ``pk`` if the user initiated it (cancelling is the initiator's), else Http404."""
    try:
        return Payment.objects.select_related("connection").get(pk=int(pk), user=user)
    except (Payment.DoesNotExist, ValueError, TypeError):
        raise Http404("no such payment") from None


# --- signatures ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    signer: str  # the signer's e-mail address (portal users of the same company see each other's)
    signed_at: datetime | None
    failed_at: datetime | None
    failure: str


def signatures(payment: Payment) -> list[Signature]:
    rows = (
        PaymentAuthorisation.objects.filter(payment=payment).select_related("signer").order_by("started_at", "id")
    )
    return [
        Signature(
            signer=row.signer.email or row.signer.get_username(),
            signed_at=row.completed_at,
            failed_at=row.failed_at,
            failure=row.failure,
        )
        for row in rows
    ]


def may_sign(*, user: Any, payment: Payment) -> bool:
    """Whether ``user`` can give the next signature: a PATC corporate payment of their company, not yet signed
    by them (the initiator signed first, through the initiation)."""
    if payment.transaction_status != "PATC" or payment.context != PsuContextChoice.CORPORATE:
        return False
    if payment.user_id == user.pk or payment.connection is None or not payment.connection.psu_corporate_id_hash:
        return False
    if payment.connection.psu_corporate_id_hash not in company_hashes(user):
        return False
    return not PaymentAuthorisation.objects.filter(
        payment=payment, signer=user, completed_at__isnull=False
    ).exists()


# --- the timeline --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    kind: str
    kind_label: str
    status: StatusText | None
    detail: str
    actor: str


def timeline(payment: Payment) -> list[TimelineEntry]:
    entries = []
    for event in PaymentEvent.objects.filter(payment=payment).select_related("actor").order_by("at", "id"):
        status = None
        if event.kind == PaymentEventKind.STATUS or event.transaction_status:
            status = status_text(event.transaction_status, event.funds_available)
        actor = ""
        if event.actor is not None and event.kind in (PaymentEventKind.SIGNATURE, PaymentEventKind.SCA_DONE):
            actor = event.actor.email or event.actor.get_username()
        entries.append(
            TimelineEntry(
                at=event.at,
                kind=event.kind,
                kind_label=str(event.get_kind_display()),
                status=status,
                detail=event.detail,
                actor=actor,
            )
        )
    return entries


# --- the list ------------------------------------------------------------------------------------------------


class StatusGroup:
    """The list's status filter: groups of the portal's state and the bank's status."""

    IN_PROGRESS = "in_progress"
    NEEDS_ACTION = "needs_action"
    COMPLETED = "completed"
    NOT_COMPLETED = "failed"  # rejected, cancelled or refused

    @staticmethod
    def query(group: str) -> Q:
        return {
            StatusGroup.IN_PROGRESS: ~Q(state__in=["final", "refused", "draft"]),
            StatusGroup.NEEDS_ACTION: Q(state__in=["initiated", "outcome_unknown"]) | Q(transaction_status="PATC"),
            StatusGroup.COMPLETED: Q(transaction_status__in=["ACSC", "ACCC"]),
            StatusGroup.NOT_COMPLETED: Q(transaction_status__in=["RJCT", "CANC"]) | Q(state="refused"),
        }[group]


@dataclass(frozen=True)
class ListFilters:
    group: str = ""
    text: str = ""
    date_from: date | None = None
    date_to: date | None = None
    currency: str = ""


def payments_list(*, user: Any, filters: ListFilters) -> QuerySet[Payment]:
    """The user's payments (and their company's awaiting their signature), newest first, filtered. Drafts
    that were never sent are left out."""
    payments = payments_visible_to(user).exclude(state="draft")
    if filters.group:
        payments = payments.filter(StatusGroup.query(filters.group))
    if filters.text:
        payments = payments.filter(
            Q(creditor_name__icontains=filters.text) | Q(creditor_account__icontains=filters.text.replace(" ", ""))
        )
    if filters.currency:
        payments = payments.filter(currency=filters.currency)
    if filters.date_from:
        payments = payments.filter(created_at__gte=_day_start(filters.date_from))
    if filters.date_to:
        payments = payments.filter(created_at__lt=_day_start(filters.date_to + timedelta(days=1)))
    return payments.order_by("-created_at", "-id")


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())
