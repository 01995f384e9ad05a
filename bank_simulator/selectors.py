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
    return hotpath.unattended_count(
        tpp_org_id=tpp_org_id, account=account, kind=kind, since=now - UNATTENDED_WINDOW
    )


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
    want_booked = booking_status in {"booked", "both", "all"}
    want_pending = booking_status in {"pending", "both", "all"}
    pending_count, booked_count = hotpath.transaction_counts(account=account, date_from=date_from, date_to=date_to)
    booked_count = booked_count if want_booked else 0
    pending_count = pending_count if want_pending else 0

    def rows(status: str, start: int, count: int | None, dated: bool = True) -> list[Transaction]:
        return hotpath.transaction_rows(
            account=account,
            booking_status=status,
            date_from=date_from if dated else None,
            date_to=date_to if dated else None,
            offset=start,
            limit=count,
        )

    if want_pending and pending_unfiltered:
        pending = rows(BookingStatus.PENDING, 0, None, dated=False)
        booked = rows(BookingStatus.BOOKED, offset, limit) if booked_count > offset else []
        return TransactionPage(booked=booked, pending=pending, total=booked_count)
    pending = rows(BookingStatus.PENDING, offset, limit) if offset < pending_count else []
    booked: list[Transaction] = []
    room = limit - len(pending)
    start = max(0, offset - pending_count)
    if room > 0 and start < booked_count:
        booked = rows(BookingStatus.BOOKED, start, room)
    return TransactionPage(booked=booked, pending=pending, total=pending_count + booked_count)


def customers_list(*, with_accounts: bool, with_agreements: bool) -> list[Customer]:
    qs = Customer.objects.order_by("id")
    if with_accounts:
        qs = qs.prefetch_related("accounts")
    if with_agreements:
        qs = qs.prefetch_related("agreements__accounts")
    return list(qs)
