"""The written-out statements of the transaction listing and the unattended allowance (bank_simulator.hotpath)
give what the ORM gives: every page of every filter of the sandbox's accounts compared with the ORM's answer."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal

import pytest
from django.db.models import Count, Q

from bank_simulator import hotpath, selectors
from bank_simulator.models import AccessKind, Account, BookingStatus, Transaction, UnattendedAccess

pytestmark = pytest.mark.django_db


def _orm_page(account, booking_status, date_from, date_to, limit, offset, pending_unfiltered):
    """The listing as the ORM gave it before the statements were written out (the reference)."""

    def ordered(qs):
        return list(qs.order_by("-booking_date", "-sequence", "-id"))

    base = Transaction.objects.filter(account=account)
    dated = base.filter(**({"booking_date__gte": date_from} if date_from else {}))
    dated = dated.filter(**({"booking_date__lte": date_to} if date_to else {}))
    booked_all = ordered(dated.filter(booking_status=BookingStatus.BOOKED)) if booking_status != "pending" else []
    if booking_status != "booked" and pending_unfiltered:
        pending = ordered(base.filter(booking_status=BookingStatus.PENDING))
        return booked_all[offset : offset + limit], pending, len(booked_all)
    pending_all = ordered(dated.filter(booking_status=BookingStatus.PENDING)) if booking_status != "booked" else []
    pending = pending_all[offset : offset + limit]
    start = max(0, offset - len(pending_all))
    booked = booked_all[start : start + limit - len(pending)] if limit > len(pending) else []
    return booked, pending, len(pending_all) + len(booked_all)


def _busiest_account() -> Account:
    """The sandbox account with the most pending items (and booked ones), so pages cross the two lists."""
    account = (
        Account.objects.annotate(
            pending=Count("transactions", filter=Q(transactions__booking_status=BookingStatus.PENDING)),
            booked=Count("transactions", filter=Q(transactions__booking_status=BookingStatus.BOOKED)),
        )
        .filter(pending__gt=0, booked__gt=3)
        .order_by("-pending", "id")
        .first()
    )
    assert account is not None, "the sandbox's known state holds an account with pending and booked items"
    return account


def test_every_page_of_every_filter_is_the_orms():
    account = _busiest_account()
    days = sorted(set(Transaction.objects.filter(account=account).values_list("booking_date", flat=True)))
    middle = days[len(days) // 2]
    total = Transaction.objects.filter(account=account).count()
    pending_count = Transaction.objects.filter(account=account, booking_status=BookingStatus.PENDING).count()
    # Offsets at the edges: the first page, across the end of the pending list, the end of everything.
    offsets = sorted(
        {0, 1, pending_count - 1, pending_count, pending_count + 1, total - 1, total, total + 1} - {-1}
    )
    compared = 0
    for status, (date_from, date_to), limit, unfiltered in itertools.product(
        ("booked", "pending", "both", "all"),
        ((None, None), (middle, None), (None, middle), (days[0], days[-1]), (middle, middle)),
        (1, 3, 1000),
        (False, True),
    ):
        for offset in offsets:
            got = selectors.transaction_page(
                account=account,
                booking_status=status,
                date_from=date_from,
                date_to=date_to,
                limit=limit,
                offset=offset,
                pending_unfiltered=unfiltered,
            )
            booked, pending, count = _orm_page(account, status, date_from, date_to, limit, offset, unfiltered)
            assert ([t.pk for t in got.booked], [t.pk for t in got.pending], got.total) == (
                [t.pk for t in booked],
                [t.pk for t in pending],
                count,
            ), (status, date_from, date_to, limit, offset, unfiltered)
            compared += 1
    assert compared > 100


def test_rows_are_the_orms_instances():
    account = _busiest_account()
    rows = hotpath.transaction_rows(
        account=account, booking_status=BookingStatus.BOOKED, date_from=None, date_to=None, offset=0, limit=None
    )
    assert rows
    for row in rows:
        stored = Transaction.objects.get(pk=row.pk)
        for field in Transaction._meta.concrete_fields:
            assert getattr(row, field.attname) == getattr(stored, field.attname), field.name
        assert isinstance(row.amount, Decimal) and isinstance(row.booking_date, dt.date)


def test_the_unattended_count_is_per_tpp_kind_and_24_hours():
    account = _busiest_account()
    now = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
    for at in (now - dt.timedelta(hours=24), now - dt.timedelta(hours=23, minutes=59), now):
        hotpath.unattended_insert(tpp_org_id="PSDNO-TEST-1", account=account, kind=AccessKind.BALANCES, at=at)
    hotpath.unattended_insert(tpp_org_id="PSDNO-OTHER", account=account, kind=AccessKind.BALANCES, at=now)
    hotpath.unattended_insert(tpp_org_id="PSDNO-TEST-1", account=account, kind=AccessKind.TRANSACTIONS, at=now)

    def count(tpp: str, kind: str) -> int:
        return selectors.unattended_count(tpp_org_id=tpp, account=account, kind=kind, now=now)

    assert count("PSDNO-TEST-1", AccessKind.BALANCES) == 2  # the one exactly 24 hours old is out of the window
    assert count("PSDNO-OTHER", AccessKind.BALANCES) == 1
    assert count("PSDNO-TEST-1", AccessKind.TRANSACTIONS) == 1
    assert UnattendedAccess.objects.filter(account=account, at=now).count() == 3  # the ORM reads what was written


def test_due_count_is_the_pending_items_whose_day_has_come():
    account = _busiest_account()
    pending = Transaction.objects.filter(account=account, booking_status=BookingStatus.PENDING)
    for day in sorted({d for d in pending.values_list("books_on", flat=True) if d is not None}):
        expected = pending.filter(books_on__lte=day).count()
        assert hotpath.due_count(account=account, today=day) == expected > 0
    assert hotpath.due_count(account=account, today=dt.date(1990, 1, 1)) == 0
