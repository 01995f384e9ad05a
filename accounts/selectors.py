"""Reads about bank accounts: the overview, the account and transaction pages, balances over time, the refresh
budget."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import F, Prefetch, Q, QuerySet, Sum
from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _

from accounts.ledger import refresh_budgets
from accounts.models import (
    BALANCE_TYPE_LABELS,
    AccountKind,
    BalanceSnapshot,
    BankAccount,
    Transaction,
    TransactionStatus,
)
from connections.models import ConnectionAccess, ConnectionState
from core.money import minor_units
from users.security import get_owned_or_404


def accounts_overview(*, user: Any, connection_id: int | None = None) -> QuerySet[BankAccount]:
    """The accounts overview: every consented account of the user's live connections (of the connection
    ``connection_id`` only, when given) with the balances of its latest fetch (a constant number of queries,
    whatever the number of accounts)."""
    latest = BalanceSnapshot.objects.filter(fetched_at=F("account__balances_refreshed_at")).order_by(
        "balance_type"
    )
    accounts = BankAccount.objects.filter(connection__user=user, consented=True)
    if connection_id is not None:
        accounts = accounts.filter(connection_id=connection_id)
    return (
        accounts.exclude(connection__state=ConnectionState.DISCONNECTED)
        .select_related("connection")
        .prefetch_related(Prefetch("balance_snapshots", queryset=latest, to_attr="latest_balances"))
        .order_by("connection__created_at", "connection_id", "kind", "name", "pk")
    )


# --- the account pages (accounts/views.py) ----------------------------------------------------------

#: Transactions per page of the account page.
TRANSACTIONS_PAGE_SIZE = 50
#: Days of the balance chart on the account page (the bank's unattended history).
BALANCE_CHART_DAYS = 90
#: The balance the chart follows: the first of these types the latest fetch has. The booked balances count
#: exactly the booked transactions, so the chart can run back from them through the stored transactions.
CHART_BALANCE_TYPES = ("interimBooked", "closingBooked", "openingBooked", "expected", "interimAvailable")
_CHART_BOOKED_TYPES = {"interimBooked", "closingBooked", "openingBooked"}


def _live_accounts(user: Any) -> QuerySet[BankAccount]:
    return BankAccount.objects.filter(connection__user=user, consented=True).exclude(
        connection__state=ConnectionState.DISCONNECTED
    )


#: The overview's one balance per account, best first: what the bank calls available, else what it has booked
#: (Berlin Group balance types; the account page lists every type the bank sent).
HEADLINE_BALANCE_TYPES = ("interimAvailable", "expected", "closingBooked", "interimBooked", "openingBooked")
HEADLINE_EXPLANATIONS = {
    "interimAvailable": _("What the bank says you can use now."),
    "expected": _("The booked balance with the payments on their way counted."),
    "closingBooked": _("Booked at the end of the last day; payments on their way are not counted."),
    "interimBooked": _("Booked so far today; payments on their way are not counted."),
    "openingBooked": _("Booked at the start of the day; later payments are not counted."),
}


@dataclasses.dataclass(frozen=True)
class HeadlineBalance:
    """The one balance the overview shows for an account, and in a few words which one it is."""

    balance: BalanceSnapshot
    explanation: str
    others: int  # how many more balances the account page shows


def headline_balance(*, balances: list[BalanceSnapshot], currency: str = "") -> HeadlineBalance | None:
    """The balance the bank calls available (interimAvailable, expected) or else booked (closingBooked,
    interimBooked, openingBooked), in the account's currency where the bank gave one in it; another type only
    when the bank sent none of these. None without balances."""
    if not balances:
        return None
    in_currency = [b for b in balances if b.currency == currency] or balances
    rank = {balance_type: n for n, balance_type in enumerate(HEADLINE_BALANCE_TYPES)}
    chosen = min(in_currency, key=lambda b: (rank.get(b.balance_type, len(rank)), b.balance_type))
    explanation = HEADLINE_EXPLANATIONS.get(chosen.balance_type, _("As the bank reported it."))
    return HeadlineBalance(balance=chosen, explanation=str(explanation), others=len(balances) - 1)


def accounts_overview_with_budgets(
    *, user: Any, now: datetime | None = None, connection_id: int | None = None
) -> list[BankAccount]:
    """The accounts overview (``accounts_overview``) with each account's unattended-refresh budget on
    ``account.refresh_budget`` and its one headline balance on ``account.headline`` (``headline_balance``):
    four queries, whatever the number of accounts."""
    accounts = list(accounts_overview(user=user, connection_id=connection_id))
    budgets = refresh_budgets(account_ids=[a.pk for a in accounts], now=now)
    for account in accounts:
        account.refresh_budget = budgets.get(account.pk)
        account.headline = headline_balance(balances=account.latest_balances, currency=account.currency)
    return accounts


def balances_at_a_glance(*, user: Any) -> list[BankAccount]:
    """The home page's balances: the accounts overview (``accounts_overview``) with each account's one headline
    balance on ``account.headline``, without the refresh budgets: two queries, whatever the number of
    accounts."""
    accounts = list(accounts_overview(user=user))
    for account in accounts:
        account.headline = headline_balance(balances=account.latest_balances, currency=account.currency)
    return accounts


def account_for(*, user: Any, pk: Any) -> BankAccount:
    """One of the user's consented accounts on a live connection (404 for anyone else's)."""
    return get_owned_or_404(
        _live_accounts(user).select_related("connection"), user=user, owner_field="connection__user", pk=pk
    )


def transaction_for(*, user: Any, pk: Any) -> Transaction:
    """One transaction of one of the user's accounts (404 for anyone else's)."""
    queryset = (
        Transaction.objects.filter(account__consented=True)
        .exclude(account__connection__state=ConnectionState.DISCONNECTED)
        .select_related("account", "account__connection")
    )
    return get_owned_or_404(queryset, user=user, owner_field="account__connection__user", pk=pk)


def debits_mentioning(*, user: Any, account_number: str, text: str, since: date) -> QuerySet[Transaction]:
    """Money out of the user's account ``account_number`` (its IBAN or BBAN) whose message holds ``text``, booked
    on or after ``since`` (or pending, not booked yet), as the bank reported it, booked first, newest first: how
    a payment the bank did not confirm is found."""
    accounts = _live_accounts(user).filter(Q(iban=account_number) | Q(bban=account_number))
    return (
        Transaction.objects.filter(account__in=accounts, amount__lt=0, remittance__icontains=text)
        .filter(Q(booking_date__gte=since) | Q(booking_date__isnull=True))
        .order_by("status", "-booking_date", "-id")
    )


def debits_with_kid(
    *, user: Any, account_number: str, kid: str, amount: Decimal, currency: str, since: date
) -> QuerySet[Transaction]:
    """Money out of the user's account ``account_number`` carrying ``kid`` for exactly ``amount`` in
    ``currency``, booked on or after ``since`` (or pending), booked first, newest first: how a KID payment (which
    usually carries no free text, so no portal reference) the bank did not confirm is found."""
    accounts = _live_accounts(user).filter(Q(iban=account_number) | Q(bban=account_number))
    return (
        Transaction.objects.filter(account__in=accounts, kid=kid, amount=-abs(amount), currency=currency)
        .filter(Q(booking_date__gte=since) | Q(booking_date__isnull=True))
        .order_by("status", "-booking_date", "-id")
    )


@dataclasses.dataclass(frozen=True)
class TransactionFilters:
    """The filters of the transactions list and of its CSV export. ``amount_min``/``amount_max`` bound the size
    of the amount, in or out; ``direction`` ("in"/"out") its sign."""

    status: str = ""
    date_from: date | None = None
    date_to: date | None = None
    text: str = ""
    amount_min: Decimal | None = None
    amount_max: Decimal | None = None
    direction: str = ""


def transactions_filtered(*, account: BankAccount, filters: TransactionFilters) -> QuerySet[Transaction]:
    """The account's transactions matching ``filters`` (not ordered)."""
    rows = Transaction.objects.filter(account=account)
    if filters.status:
        rows = rows.filter(status=filters.status)
    if filters.date_from:
        rows = rows.filter(booking_date__gte=filters.date_from)
    if filters.date_to:
        rows = rows.filter(booking_date__lte=filters.date_to)
    if filters.text:
        text = filters.text
        rows = rows.filter(
            Q(counterparty_name__icontains=text)
            | Q(remittance__icontains=text)
            | Q(counterparty_account__icontains=text.replace(" ", ""))
            | Q(kid__icontains=text.replace(" ", ""))
            | Q(end_to_end_id__icontains=text)
        )
    if filters.direction == "in":
        rows = rows.filter(amount__gt=0)
    elif filters.direction == "out":
        rows = rows.filter(amount__lt=0)
    low, high = filters.amount_min, filters.amount_max
    if low is not None and high is not None:
        rows = rows.filter(Q(amount__gte=low, amount__lte=high) | Q(amount__lte=-low, amount__gte=-high))
    elif low is not None:
        rows = rows.filter(Q(amount__gte=low) | Q(amount__lte=-low))
    elif high is not None:
        rows = rows.filter(amount__lte=high, amount__gte=-high)
    return rows


#: Newest first: pending items without a booking date on top, then by booking date, then by id. The same order as
#: the keyset index (models.Transaction: account, status, -booking_date, -id; PostgreSQL puts NULLs first in a
#: descending index), so a page is one index range scan however deep it is.
NEWEST_FIRST = (F("booking_date").desc(nulls_first=True), F("id").desc())
OLDEST_FIRST = (F("booking_date").asc(nulls_last=True), F("id").asc())


@dataclasses.dataclass(frozen=True)
class Cursor:
    """A position in the newest-first order: the booking date and id of a row (keyset pagination)."""

    booking_date: date | None
    pk: int

    @classmethod
    def of(cls, row: Transaction) -> Cursor:
        return cls(booking_date=row.booking_date, pk=row.pk)

    @property
    def token(self) -> str:
        return f"{self.booking_date.isoformat() if self.booking_date else ''}.{self.pk}"

    @classmethod
    def parse(cls, token: str | None) -> Cursor | None:
        """The cursor of a ``token``; None when it is missing or malformed (the first page is shown)."""
        if not token or len(token) > 40 or token.count(".") != 1:
            return None
        day, _dot, pk = token.partition(".")
        if not pk.isascii() or not pk.isdigit() or len(pk) > 18:
            return None
        try:
            return cls(booking_date=date.fromisoformat(day) if day else None, pk=int(pk))
        except ValueError:
            return None

    def older(self) -> Q:
        """Rows after this one in the newest-first order. The redundant ``booking_date <= d`` is the bound that
        lets the database start the index scan at the cursor instead of filtering every newer row."""
        if self.booking_date is None:
            return Q(booking_date__isnull=True, pk__lt=self.pk) | Q(booking_date__isnull=False)
        return Q(booking_date__lte=self.booking_date) & (Q(booking_date__lt=self.booking_date) | Q(pk__lt=self.pk))

    def newer(self) -> list[Q]:
        """Rows before this one in the newest-first order, as parts to read one after the other in OLDEST_FIRST
        order: the dated rows (bounded by ``booking_date >= d``, one index range), then those without a date. One
        condition with an OR of the two would make the database scan the whole account."""
        if self.booking_date is None:
            return [Q(booking_date__isnull=True, pk__gt=self.pk)]
        return [
            Q(booking_date__gte=self.booking_date) & (Q(booking_date__gt=self.booking_date) | Q(pk__gt=self.pk)),
            Q(booking_date__isnull=True),
        ]


@dataclasses.dataclass(frozen=True)
class TransactionPage:
    rows: list[Transaction]
    older: str | None  # the cursor token of the next (older) page, None on the last page
    newer: str | None  # the cursor token of the previous (newer) page, None on the first page


def transactions_page(
    *,
    account: BankAccount,
    filters: TransactionFilters,
    status: str,
    after: Cursor | None = None,
    before: Cursor | None = None,
    size: int = TRANSACTIONS_PAGE_SIZE,
) -> TransactionPage:
    """One page of the account's ``status`` transactions, newest first: the page after the cursor ``after``
    (older rows), or the page before ``before`` (newer rows), or the first page. One query: keyset (seek)
    pagination, no OFFSET and no COUNT, so a page of an account with 100 000 transactions costs what a page of
    one with 100 costs (a page back towards rows without a booking date may take a second query)."""
    rows = transactions_filtered(account=account, filters=dataclasses.replace(filters, status=status))
    if before is not None:
        found: list[Transaction] = []
        for part in before.newer():  # a second query only when the first ends within the page
            found += rows.filter(part).order_by(*OLDEST_FIRST)[: size + 1 - len(found)]
            if len(found) > size:
                break
        more_newer = len(found) > size
        found = found[:size]
        found.reverse()
        return TransactionPage(
            rows=found,
            older=Cursor.of(found[-1]).token if found else before.token,
            newer=Cursor.of(found[0]).token if found and more_newer else None,
        )
    if after is not None:
        rows = rows.filter(after.older())
    found = list(rows.order_by(*NEWEST_FIRST)[: size + 1])
    more_older = len(found) > size
    found = found[:size]
    return TransactionPage(
        rows=found,
        older=Cursor.of(found[-1]).token if found and more_older else None,
        newer=(Cursor.of(found[0]).token if found else after.token) if after is not None else None,
    )


def transactions_for_export(*, account: BankAccount, filters: TransactionFilters) -> QuerySet[Transaction]:
    """Every transaction matching ``filters``: pending first, then booked, each newest first."""
    return transactions_filtered(account=account, filters=filters).order_by("-status", *NEWEST_FIRST)


@dataclasses.dataclass(frozen=True)
class BalanceHistory:
    """The account page's balance chart and its data table (one row per day, oldest first)."""

    balance_type: str
    type_label: str
    currency: str
    days: list[date]
    computed: list[Decimal | None]  # end-of-day balance run back from the bank's balance through the transactions
    reported: list[Decimal | None]  # the bank's own figure, the last one fetched that day

    @property
    def rows(self) -> list[tuple[date, Decimal | None, Decimal | None]]:
        return list(zip(self.days, self.computed, self.reported, strict=True))

    @property
    def has_computed(self) -> bool:
        return any(v is not None for v in self.computed)

    def chart_data(self, *, computed_name: str, reported_name: str) -> dict[str, Any]:
        """The JSON of static/js/charts.js; amounts as exact decimal strings."""
        series = []
        if self.has_computed:
            series.append({"name": computed_name, "values": [_decimal_text(v) for v in self.computed]})
        series.append({"name": reported_name, "values": [_decimal_text(v) for v in self.reported]})
        labels = [formats.date_format(day, "SHORT_DATE_FORMAT") for day in self.days]
        return {"labels": labels, "series": series, "unit": self.currency}


def _decimal_text(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def _trimmed(value: Decimal | None, currency: str) -> Decimal | None:
    """``value`` without the padding zeros of its column beyond the currency's minor units (never rounded)."""
    if value is None:
        return None
    try:
        places = minor_units(currency)
    except KeyError:
        places = 2
    exponent = value.normalize().as_tuple().exponent
    digits = max(places, -exponent if isinstance(exponent, int) and exponent < 0 else 0)
    return value.quantize(Decimal(1).scaleb(-digits))


def balance_history(
    *, account: BankAccount, days: int = BALANCE_CHART_DAYS, today: date | None = None
) -> BalanceHistory | None:
    """The balance over the last ``days`` days, from the stored balance snapshots and transactions (two
    queries); None when no balance was fetched in that time.

    "Reported" is the bank's figure on the days it was fetched. "Computed" starts from the latest booked balance
    and adds (after it) or takes away (before it) each day's booked transactions in the same currency; it is
    given only once the transactions have been read from the bank.
    """
    today = today or timezone.localdate()
    start = today - timedelta(days=days - 1)
    zone = timezone.get_current_timezone()
    since = timezone.make_aware(datetime.combine(start, time.min), zone)
    snapshots = list(
        BalanceSnapshot.objects.filter(
            account=account, fetched_at__gte=since, balance_type__in=CHART_BALANCE_TYPES
        ).order_by("fetched_at", "balance_type")
    )
    if not snapshots:
        return None
    latest_fetch = snapshots[-1].fetched_at
    latest = {s.balance_type: s for s in snapshots if s.fetched_at == latest_fetch}
    balance_type = next(t for t in CHART_BALANCE_TYPES if t in latest)
    anchor = latest[balance_type]
    day_list = [start + timedelta(days=n) for n in range(days)]

    reported: dict[date, Decimal] = {}
    for snapshot in snapshots:
        if snapshot.balance_type == balance_type and snapshot.currency == anchor.currency:
            reported[timezone.localtime(snapshot.fetched_at, zone).date()] = snapshot.amount

    computed: list[Decimal | None] = [None] * len(day_list)
    if balance_type in _CHART_BOOKED_TYPES and account.transactions_refreshed_at is not None:
        fetched_day = timezone.localtime(anchor.fetched_at, zone).date()
        if balance_type == "interimBooked":
            anchor_day = fetched_day  # everything booked up to the fetch
        elif balance_type == "closingBooked":
            anchor_day = anchor.reference_date or fetched_day  # the end of its reference day
        else:  # openingBooked: the start of its day, i.e. the end of the day before
            anchor_day = (anchor.reference_date or fetched_day) - timedelta(days=1)
        sums = dict(
            Transaction.objects.filter(
                account=account,
                status=TransactionStatus.BOOKED,
                currency=anchor.currency,
                booking_date__gte=min(start, anchor_day),
                booking_date__lte=max(today, anchor_day),
            )
            .values("booking_date")
            .annotate(total=Sum("amount"))
            .order_by()
            .values_list("booking_date", "total")
        )
        lowest = min(min(sums, default=start), start, anchor_day)
        highest = max(max(sums, default=today), today, anchor_day)
        # End-of-day balances over the whole span of the sums, from the anchor outwards.
        end_of_day = {anchor_day: anchor.amount}
        running = anchor.amount
        day = anchor_day
        while day < highest:
            day += timedelta(days=1)
            running += sums.get(day, Decimal(0))
            end_of_day[day] = running
        running = anchor.amount
        day = anchor_day
        while day > lowest:
            running -= sums.get(day, Decimal(0))
            day -= timedelta(days=1)
            end_of_day[day] = running
        computed = [end_of_day.get(d) for d in day_list]
    return BalanceHistory(
        balance_type=balance_type,
        type_label=str(BALANCE_TYPE_LABELS.get(balance_type, balance_type)),
        currency=anchor.currency,
        days=day_list,
        computed=[_trimmed(v, anchor.currency) for v in computed],
        reported=[_trimmed(reported.get(d), anchor.currency) for d in day_list],
    )


def latest_balances(*, account: BankAccount) -> list[BalanceSnapshot]:
    """The balances of the account's latest fetch (the account page's header)."""
    if account.balances_refreshed_at is None:
        return []
    return list(
        BalanceSnapshot.objects.filter(account=account, fetched_at=account.balances_refreshed_at).order_by(
            "balance_type"
        )
    )


# --- the account a payment is made from (payments' review page) -----------------------------------------------


def payable_account(*, user: Any, number: str, connection_id: int | None = None) -> BankAccount | None:
    """The user's consented account (not a card account) numbered ``number`` (IBAN or BBAN; spaces and letter
    case ignored) on an active account-information connection, that of ``connection_id`` first; None when no
    consent of the user covers it."""
    number = "".join(number.split()).upper()
    if not number:
        return None
    accounts = (
        BankAccount.objects.filter(
            Q(iban=number) | Q(bban=number),
            connection__user=user,
            connection__state=ConnectionState.ACTIVE,
            connection__access=ConnectionAccess.ACCOUNTS,
            kind=AccountKind.ACCOUNT,
            consented=True,
        )
        .select_related("connection")
        .order_by("pk")
    )
    found = list(accounts)
    return next((a for a in found if a.connection_id == connection_id), found[0] if found else None)
