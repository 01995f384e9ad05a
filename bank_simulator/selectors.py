"""Reads of the sandbox bank."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from bank_simulator import hotpath
from bank_simulator.models import (
    Account,
    Agreement,
    AgreementContext,
    BookingStatus,
    Consent,
    Customer,
    PsuIdentity,
    TppSession,
    Transaction,
    UnattendedAccess,
)

UNATTENDED_WINDOW = dt.timedelta(hours=24)
TPP_SESSION_VALIDITY = dt.timedelta(hours=1)


def tpp_session_sca_valid(*, tpp_org_id: str, customer: Customer, tpp_session_id: str, now: dt.datetime) -> bool:
    if not tpp_session_id:
        return False
    return TppSession.objects.filter(
        tpp_org_id=tpp_org_id,
        customer=customer,
        tpp_session_id=tpp_session_id,
        invalidated_at__isnull=True,
        sca_at__gt=now - TPP_SESSION_VALIDITY,
    ).exists()


def latest_consent(*, psu: PsuIdentity, agreement: Agreement) -> Consent | None:
    return Consent.objects.filter(psu=psu, agreement=agreement).order_by("-id").first()


def consented_accounts(*, consent: Consent, kind: str) -> list[Account]:
    return list(consent.accounts.filter(kind=kind).order_by("id"))


def unattended_count(*, tpp_org_id: str, account: Account, kind: str, now: dt.datetime) -> int:
    return UnattendedAccess.objects.filter(
        tpp_org_id=tpp_org_id, account=account, kind=kind, at__gt=now - UNATTENDED_WINDOW
    ).count()


def agreements_usable_by(*, customer: Customer) -> list[Agreement]:
    """What a PSU may choose in the SCA context step: its private agreement first, then companies'."""
    agreements = list(Agreement.objects.filter(users=customer).select_related("owner").order_by("id"))
    return sorted(agreements, key=lambda a: (a.context != AgreementContext.PRIVATE, a.id))


def agreement_accounts(*, agreement: Agreement) -> list[Account]:
    return list(agreement.accounts.order_by("kind", "id"))


@dataclass(frozen=True)
class Balances:
    closing_booked: Decimal  # end of the previous business day
    interim_booked: Decimal  # every booked item so far
    expected: Decimal  # booked plus pending
    interim_available: Decimal  # expected plus the credit limit
    reference_date: dt.date
    due: int = 0  # pending items whose booking day has come (not yet settled)


def account_balances(*, account: Account, today: dt.date) -> Balances:
    sums = hotpath.balance_sums(account=account, today=today)
    booked = account.booked_balance
    expected = booked + sums.pending
    return Balances(
        closing_booked=booked - sums.booked_today,
        interim_booked=booked,
        expected=expected,
        interim_available=expected + account.credit_limit,
        reference_date=today,
        due=sums.due,
    )


@dataclass(frozen=True)
class TransactionPage:
    booked: list[Transaction]
    pending: list[Transaction]
    total: int  # items the filters match (what pagination counts)


def _ordered(qs):  # newest first, stable
    return qs.order_by("-booking_date", "-sequence", "-id")


def transaction_page(
    *,
    account: Account,
    booking_status: str,
    date_from: dt.date | None,
    date_to: dt.date | None,
    limit: int,
    offset: int,
    pending_unfiltered: bool = False,
) -> TransactionPage:
    """One page of transactions. Pending items come first, then booked ones, newest first.

    ``pending_unfiltered`` reproduces the production known issue (spec section 4): every pending item is
    returned whatever dateFrom, dateTo, limit and offset say, and pagination counts booked items only.
    """
    base = Transaction.objects.filter(account=account)
    if date_from:
        base_dated = base.filter(booking_date__gte=date_from)
    else:
        base_dated = base
    if date_to:
        base_dated = base_dated.filter(booking_date__lte=date_to)
    want_booked = booking_status in {"booked", "both", "all"}
    want_pending = booking_status in {"pending", "both", "all"}
    booked_qs = _ordered(base_dated.filter(booking_status=BookingStatus.BOOKED)) if want_booked else None
    if want_pending and pending_unfiltered:
        pending = list(_ordered(base.filter(booking_status=BookingStatus.PENDING)))
        booked = list(booked_qs[offset : offset + limit]) if booked_qs is not None else []
        total = booked_qs.count() if booked_qs is not None else 0
        return TransactionPage(booked=booked, pending=pending, total=total)
    pending_qs = _ordered(base_dated.filter(booking_status=BookingStatus.PENDING)) if want_pending else None
    pending_count = pending_qs.count() if pending_qs is not None else 0
    booked_count = booked_qs.count() if booked_qs is not None else 0
    pending = (
        list(pending_qs[offset : offset + limit]) if pending_qs is not None and offset < pending_count else []
    )
    booked: list[Transaction] = []
    room = limit - len(pending)
    if booked_qs is not None and room > 0:
        start = max(0, offset - pending_count)
        booked = list(booked_qs[start : start + room])
    return TransactionPage(booked=booked, pending=pending, total=pending_count + booked_count)


def customers_list(*, with_accounts: bool, with_agreements: bool) -> list[Customer]:
    qs = Customer.objects.order_by("id")
    if with_accounts:
        qs = qs.prefetch_related("accounts")
    if with_agreements:
        qs = qs.prefetch_related("agreements__accounts")
    return list(qs)
