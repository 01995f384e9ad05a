"""Reads of the sandbox bank (the ORM; every account-information request goes through these).

The balance read, the simulator's benchmark, is three queries: the PSU's latest consent with the clock's offset
and the PSU's TPP-session SCA from ``psu_context``, the consented account from ``consented_account``, and the
items that change its balance from ``account_balances`` (tests/bank_simulator/test_balance_read_cost.py counts
them, with the INSERT of the replay check). Rows the bank never updates are kept by each process (``_kept``,
``_covered``), so that the ORM builds fewer and smaller statements.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import F, Model, OuterRef, Q, QuerySet, Subquery

from bank_simulator.models import (
    Account,
    Agreement,
    AgreementContext,
    BookingStatus,
    Consent,
    Customer,
    PsuIdentity,
    SimulatorClock,
    TppSession,
    Transaction,
    UnattendedAccess,
)

UNATTENDED_WINDOW = dt.timedelta(hours=24)
TPP_SESSION_VALIDITY = dt.timedelta(hours=1)
NEWEST_FIRST = ("-booking_date", "-sequence", "-id")  # listings; Transaction's tx_listing_idx ends the same way
LISTING_ORDER = ("-booking_status", *NEWEST_FIRST)  # pending ("pending" > "booked") first: tx_listing_idx's order


def tpp_session_sca_valid(*, tpp_org_id: str, customer: Customer, tpp_session_id: str, now: dt.datetime) -> bool:
    if not tpp_session_id:
        return False
    return session_sca_in_force(
        TppSession.objects.filter(
            tpp_org_id=tpp_org_id, customer=customer, tpp_session_id=tpp_session_id, invalidated_at__isnull=True
        )
        .values_list("sca_at", flat=True)
        .first(),
        now=now,
    )


def session_sca_in_force(sca_at: dt.datetime | None, *, now: dt.datetime) -> bool:
    """Whether a TPP session's SCA at ``sca_at`` (None: none, or ended by a newer session's) is still valid."""
    return sca_at is not None and sca_at > now - TPP_SESSION_VALIDITY


def _session_sca_at(tpp_org_id: str, tpp_session_id: str, customer: OuterRef) -> Subquery:
    """The SCA of ``customer`` in this TPP-Session-ID not ended by a newer session's, as a column of another query
    (NULL: none; tpp_session_unique makes it one row at most)."""
    return Subquery(
        TppSession.objects.filter(
            tpp_org_id=tpp_org_id, customer=customer, tpp_session_id=tpp_session_id, invalidated_at__isnull=True
        ).values("sca_at")[:1]
    )


def _clock_offset() -> Subquery:
    """The business clock's offset in seconds, as a column of another query (NULL before the first move)."""
    return Subquery(SimulatorClock.objects.filter(pk=1).values("offset_seconds")[:1])


def _offset(seconds: int | None) -> dt.timedelta:
    return dt.timedelta(seconds=seconds or 0)


# A PSU's identity, its customer and their private agreement, kept by each process: the bank never updates these
# rows (a sandbox reset deletes them and makes new ones, under new primary keys), so a copy read once stays true
# while its row exists. Keyed by the PSU-ID, the TPP and the primary keys the consent's own row names, so a copy
# is used only for the rows of this very request; a reset's new rows are read anew.
_KEPT_MAX = 4096
_kept_lock = threading.Lock()
_kept: dict[tuple[str, str, int, int], tuple[tuple, tuple, tuple]] = {}


def _values(instance: Model) -> tuple:
    return tuple(getattr(instance, f.attname) for f in instance._meta.concrete_fields)


def _kept_key(consent: Consent, psu_id: str, tpp_org_id: str) -> tuple[str, str, int, int]:
    return (psu_id, tpp_org_id, consent.psu_id, consent.agreement_id)


def _keep(consent: Consent, psu_id: str, tpp_org_id: str) -> None:
    rows = (_values(consent.psu), _values(consent.psu.customer), _values(consent.agreement))
    with _kept_lock:
        if len(_kept) >= _KEPT_MAX:
            _kept.clear()
        _kept[_kept_key(consent, psu_id, tpp_org_id)] = rows


def _attach_kept(consent: Consent, psu_id: str, tpp_org_id: str) -> bool:
    """Give ``consent`` its PSU (with its customer) and its agreement from this process's copies (fresh instances,
    never shared between requests); False when they are not kept yet."""
    rows = _kept.get(_kept_key(consent, psu_id, tpp_org_id))
    if rows is None:
        return False
    db = consent._state.db
    psu = PsuIdentity.from_db(db, None, rows[0])
    psu.customer = Customer.from_db(db, None, rows[1])
    consent.psu = psu
    consent.agreement = Agreement.from_db(db, None, rows[2])
    return True


def forget_kept_rows() -> None:
    """Drop this process's copies (tests; the copies need no invalidation, see ``_kept`` and ``_covered``)."""
    with _kept_lock:
        _kept.clear()
        _covered.clear()


@dataclass
class PsuContext:
    psu: PsuIdentity  # with its customer
    agreement: Agreement | None  # the agreement in force; None: PSU-Corporate-ID names none the PSU may use
    consent: Consent | None  # the latest consent of the PSU for ``agreement`` (any status)
    offset: dt.timedelta  # the business clock's offset, read in the same query
    # The PSU's SCA in the TPP-Session-ID psu_context was given (see _session_sca_at), read in the same query.
    session_sca_at: dt.datetime | None = None


def _consents(psu_id: str, tpp_org_id: str, tpp_session_id: str) -> QuerySet[Consent]:
    """The PSU's consents at this TPP, newest first, with the clock's offset and (given a TPP-Session-ID) the
    PSU's SCA in that session."""
    consents = Consent.objects.filter(psu__psu_id=psu_id, psu__tpp_org_id=tpp_org_id).annotate(
        clock_offset=_clock_offset()
    )
    if tpp_session_id:
        consents = consents.annotate(
            session_sca_at=_session_sca_at(tpp_org_id, tpp_session_id, OuterRef("psu__customer"))
        )
    return consents.order_by("-id")


def _context(consent: Consent) -> PsuContext:
    return PsuContext(
        consent.psu,
        consent.agreement,
        consent,
        _offset(consent.clock_offset),  # type: ignore[attr-defined]
        getattr(consent, "session_sca_at", None),
    )


def psu_context(
    *, psu_id: str, tpp_org_id: str, corporate_id: str | None, tpp_session_id: str = ""
) -> PsuContext | None:
    """The PSU of PSU-ID at this TPP with its customer, the agreement in force and its latest consent, and with
    ``tpp_session_id`` the PSU's SCA in that TPP session (``PsuContext.session_sca_at``).

    The agreement is the private one of a private customer, or the corporate agreement of PSU-Corporate-ID when
    the customer is one of its users. None when the PSU-ID is unknown for this TPP. A PSU with a consent (every
    account read) costs one query; without one, three.

    Without PSU-Corporate-ID the first query asks for the PSU's latest private consent, its PSU, customer and
    agreement taken from this process's copies (``_kept``; read with a second query the first time), and checks
    in Python that its agreement is the PSU's own (a private agreement has its owner as its only user), which
    spares the ORM the join of the agreement's owner to the PSU's customer. No private consent at all means none
    in force either; should the check fail, the general query answers.
    """
    consent: Consent | None = None
    ask_in_force = bool(corporate_id)
    if not corporate_id:
        private = _consents(psu_id, tpp_org_id, tpp_session_id).filter(agreement__context=AgreementContext.PRIVATE)
        consent = private.first()
        if consent is not None and not _attach_kept(consent, psu_id, tpp_org_id):
            consent = private.select_related("psu__customer", "agreement").first()
            if consent is not None:
                _keep(consent, psu_id, tpp_org_id)
        ask_in_force = consent is not None and consent.agreement.owner_id != consent.psu.customer_id
    if ask_in_force:
        if corporate_id:
            in_force = Q(
                agreement__agreement_id=corporate_id,
                agreement__context=AgreementContext.CORPORATE,
                agreement__users=F("psu__customer"),
            )
        else:
            in_force = Q(agreement__owner=F("psu__customer"), agreement__context=AgreementContext.PRIVATE)
        consent = (
            _consents(psu_id, tpp_org_id, tpp_session_id)
            .select_related("psu__customer", "agreement")
            .filter(in_force)
            .first()
        )
    if consent is not None:
        return _context(consent)
    psu = PsuIdentity.objects.select_related("customer").filter(psu_id=psu_id, tpp_org_id=tpp_org_id)
    psu = psu.annotate(clock_offset=_clock_offset())
    if tpp_session_id:
        psu = psu.annotate(session_sca_at=_session_sca_at(tpp_org_id, tpp_session_id, OuterRef("customer")))
    found = psu.first()
    if found is None:
        return None
    agreements = Agreement.objects.filter(owner=found.customer, context=AgreementContext.PRIVATE)
    if corporate_id:
        agreements = Agreement.objects.filter(
            agreement_id=corporate_id, context=AgreementContext.CORPORATE, users=found.customer
        )
    return PsuContext(
        found,
        agreements.first(),
        None,
        _offset(found.clock_offset),  # type: ignore[attr-defined]
        getattr(found, "session_sca_at", None),
    )


def latest_consent(*, psu: PsuIdentity, agreement: Agreement) -> Consent | None:
    return Consent.objects.filter(psu=psu, agreement=agreement).order_by("-id").first()


def consented_accounts(*, consent: Consent, kind: str) -> list[Account]:
    return list(consent.accounts.filter(kind=kind).order_by("id"))


def unattended_count(*, tpp_org_id: str, account: Account, kind: str, now: dt.datetime, up_to: int) -> int:
    """Requests of ``kind`` without the PSU by this TPP on ``account`` in the 24 hours before ``now``, counted up
    to ``up_to`` (the limit: whether it is reached is all the caller asks). Reads at most ``up_to`` ids, which
    costs the ORM less than building a COUNT."""
    return len(
        UnattendedAccess.objects.filter(
            tpp_org_id=tpp_org_id, account=account, kind=kind, at__gt=now - UNATTENDED_WINDOW
        ).values_list("pk", flat=True)[:up_to]
    )


def agreements_usable_by(*, customer: Customer) -> list[Agreement]:
    """What a PSU may choose in the SCA context step: its private agreement first, then companies'."""
    agreements = list(Agreement.objects.filter(users=customer).select_related("owner").order_by("id"))
    return sorted(agreements, key=lambda a: (a.context != AgreementContext.PRIVATE, a.id))


def agreement_accounts(*, agreement: Agreement) -> list[Account]:
    return list(agreement.accounts.order_by("kind", "id"))


# --- balances -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Balances:
    closing_booked: Decimal  # end of the previous business day
    interim_booked: Decimal  # every booked item so far
    expected: Decimal  # booked plus pending
    interim_available: Decimal  # expected plus the credit limit
    reference_date: dt.date
    due: int = 0  # pending items whose booking day has come (not yet settled)


def account_balances(*, account: Account, today: dt.date) -> Balances:
    """From ``account.booked_balance`` and the few items that change it: the pending ones and those booked today
    (one query by tx_listing_idx; summed here, which costs the ORM less than three filtered aggregates)."""
    pending = booked_today = Decimal("0")
    due = 0
    rows = Transaction.objects.filter(  # the account in both branches: each one a range of tx_listing_idx
        Q(account=account, booking_status=BookingStatus.PENDING)
        | Q(account=account, booking_status=BookingStatus.BOOKED, booking_date__gte=today)
    ).values_list("booking_status", "amount", "books_on")
    for status, amount, books_on in rows:
        if status == BookingStatus.PENDING:
            pending += amount
            due += books_on is not None and books_on <= today
        else:
            booked_today += amount
    booked = account.booked_balance
    expected = booked + pending
    return Balances(
        closing_booked=booked - booked_today,
        interim_booked=booked,
        expected=expected,
        interim_available=expected + account.credit_limit,
        reference_date=today,
        due=due,
    )


# The accounts each consent covers, kept by each process: a consent's accounts are set once, in the transaction
# that creates it (services.consent_grant), and never changed; keyed by the consent's primary key and its
# consent_id, so a copy serves that very consent only.
_covered: dict[tuple[int, str], dict[tuple[str, str], int]] = {}


def _covered_accounts(consent: Consent) -> dict[tuple[str, str], int]:
    """(resource_id, kind) -> primary key of every account ``consent`` covers (read once per process)."""
    key = (consent.pk, consent.consent_id)
    covered = _covered.get(key)
    if covered is None:
        covered = {(rid, kind): pk for rid, kind, pk in consent.accounts.values_list("resource_id", "kind", "pk")}
        with _kept_lock:
            if len(_covered) >= _KEPT_MAX:
                _covered.clear()
            _covered[key] = covered
    return covered


def consented_account(*, consent: Consent, resource_id: str, kind: str) -> Account | None:
    """The account ``resource_id`` when ``consent`` covers it (read by its primary key, the consent's accounts
    being kept: ``_covered``)."""
    pk = _covered_accounts(consent).get((resource_id, kind))
    if pk is None:
        return None
    try:
        return Account.objects.get(pk=pk)
    except Account.DoesNotExist:  # a sandbox reset since the consent was read
        return None


# --- transactions ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransactionPage:
    booked: list[Transaction]
    pending: list[Transaction]
    more: bool  # items the filters match lie beyond this page (what the ``next`` link says)


def _dated(qs: QuerySet[Transaction], date_from: dt.date | None, date_to: dt.date | None) -> QuerySet[Transaction]:
    if date_from:
        qs = qs.filter(booking_date__gte=date_from)
    if date_to:
        qs = qs.filter(booking_date__lte=date_to)
    return qs


def _split(rows: list[Transaction]) -> tuple[list[Transaction], list[Transaction]]:
    booked = [t for t in rows if t.booking_status == BookingStatus.BOOKED]
    return booked, [t for t in rows if t.booking_status == BookingStatus.PENDING]


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

    One query in the order of ``tx_listing_idx`` (pending sorts after booked, so descending puts it first),
    reading one item past the page: that item says whether a next page exists, so nothing is counted.
    ``pending_unfiltered`` reproduces the production known issue (spec section 4): every pending item is
    returned whatever dateFrom, dateTo, limit and offset say, and pagination pages through booked items only
    (a second query).
    """
    if pending_unfiltered and booking_status != "booked":
        pending = list(transaction_listing(account=account, booking_status=BookingStatus.PENDING))
        booked: list[Transaction] = []
        if booking_status != "pending":
            listing = transaction_listing(
                account=account, booking_status=BookingStatus.BOOKED, date_from=date_from, date_to=date_to
            )
            booked = list(listing[offset : offset + limit + 1])
        return TransactionPage(booked=booked[:limit], pending=pending, more=len(booked) > limit)
    listing = transaction_listing(
        account=account, booking_status=booking_status, date_from=date_from, date_to=date_to
    )
    rows = list(listing[offset : offset + limit + 1])
    booked, pending = _split(rows[:limit])
    return TransactionPage(booked=booked, pending=pending, more=len(rows) > limit)


def transaction_listing(
    *, account: Account, booking_status: str, date_from: dt.date | None = None, date_to: dt.date | None = None
) -> QuerySet[Transaction]:
    """The account's items of ``booking_status`` (booked, pending, both or all) in the order of ``tx_listing_idx``:
    pending before booked (``"pending" > "booked"``), each newest first. Both and all filter no status, so the
    statement reads one range of the index in its own order, with no sort."""
    listing = Transaction.objects.filter(account=account).order_by(*LISTING_ORDER)
    if booking_status in {BookingStatus.BOOKED, BookingStatus.PENDING}:
        listing = listing.filter(booking_status=booking_status)
    return _dated(listing, date_from, date_to)


def customers_list(*, with_accounts: bool, with_agreements: bool) -> list[Customer]:
    qs = Customer.objects.order_by("id")
    if with_accounts:
        qs = qs.prefetch_related("accounts")
    if with_agreements:
        qs = qs.prefetch_related("agreements__accounts")
    return list(qs)
