"""Reads of payments: exchange rates, the NOK equivalent of an amount and whether regulatory reporting is
required; the accounts a payment can be made from; who may see a payment, its timeline, the list with its
filters.

Who may see a payment: the user who initiated it; and, for a corporate payment, another portal user of the
same company (an ACTIVE corporate connection with the same PSU-Corporate-ID, which the bank confirmed for that
user, compared by its keyed hash) while the payment waits for further signatures (PATC) or once that user has
signed it. Everyone else gets 404.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.db.models import Case, Exists, IntegerField, OuterRef, Q, QuerySet, Value, When
from django.http import Http404
from django.utils import timezone

from accounts.models import AccountKind, BankAccount
from connections.models import BankConnection, ConnectionState, PsuContextChoice
from connections.selectors import confirmed_agreement_hashes
from payments.models import (
    UNKNOWN_OUTCOME_STATES,
    ExchangeRate,
    ExchangeRateSource,
    Payment,
    PaymentAuthorisation,
    PaymentEvent,
    PaymentEventKind,
    PaymentState,
)
from payments.spec import NOK
from payments.status import StatusText, status_text

# When several sources have a rate for the same date: staff's word, then Norges Bank, then the seed.
_SOURCE_PRIORITY = Case(
    When(source=ExchangeRateSource.MANUAL, then=Value(0)),
    When(source=ExchangeRateSource.NORGES_BANK, then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)


class ExchangeRateUnavailable(LookupError):
    """No rate of the currency on or before the date."""

    def __init__(self, currency: str, on_date: date) -> None:
        self.currency = currency
        self.on_date = on_date
        super().__init__(f"no exchange rate for {currency} on or before {on_date.isoformat()}")


@dataclass(frozen=True)
class NokEquivalent:
    amount_nok: Decimal  # rounded half-up to øre
    currency: str
    rate: Decimal  # NOK for `unit` units; 1 for NOK
    unit: int
    rate_date: date | None  # None for NOK
    source: str  # ExchangeRateSource value, or "" for NOK


def exchange_rate_latest(*, currency: str, on_date: date, published_only: bool = False) -> ExchangeRate | None:
    """The latest rate of ``currency`` dated on or before ``on_date`` (ties: staff, Norges Bank, seed).

    ``published_only`` leaves out the seed rows: they are plausible figures shipped with the portal before the
    first fetch, not Norges Bank's published rates (the threshold uses them with a larger margin).
    """
    rates = ExchangeRate.objects.filter(currency=currency, rate_date__lte=on_date)
    if published_only:
        rates = rates.exclude(source=ExchangeRateSource.SEED)
    return rates.annotate(source_priority=_SOURCE_PRIORITY).order_by("-rate_date", "source_priority").first()


def nok_equivalent(
    amount: Decimal, currency: str, *, on_date: date, published_only: bool = False
) -> NokEquivalent:
    """``amount`` of ``currency`` in NOK at the latest rate on or before ``on_date``.

    Raises ExchangeRateUnavailable when there is no such rate. NOK converts to itself without a lookup. The
    result may come from a seed rate (``source`` says so: show it as an estimate) unless ``published_only``.
    """
    if isinstance(amount, float):
        raise TypeError("amounts are never floats")
    if currency == NOK:
        return NokEquivalent(
            amount_nok=amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP),
            currency=NOK,
            rate=Decimal(1),
            unit=1,
            rate_date=None,
            source="",
        )
    rate = exchange_rate_latest(currency=currency, on_date=on_date, published_only=published_only)
    if rate is None:
        raise ExchangeRateUnavailable(currency, on_date)
    value = (amount * rate.rate / rate.unit).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return NokEquivalent(
        amount_nok=value,
        currency=currency,
        rate=rate.rate,
        unit=rate.unit,
        rate_date=rate.rate_date,
        source=rate.source,
    )


class ReportingReason(enum.StrEnum):
    NOK_AT_THRESHOLD = "nok-at-threshold"  # a NOK amount of 100 000 or more
    NOK_BELOW_THRESHOLD = "nok-below-threshold"
    EQUIVALENT_NEAR_OR_ABOVE = "equivalent-near-or-above"  # NOK equivalent within the margin or above
    EQUIVALENT_BELOW = "equivalent-below"
    # cannot tell: ask, the bank would refuse a payment that needed them
    NO_RATE = "no-rate"  # no rate of the currency at all
    STALE_RATE = "stale-rate"  # the newest rate is older than EXCHANGE_RATE_MAX_AGE_DAYS


@dataclass(frozen=True)
class ReportingRequirement:
    required: bool
    reason: ReportingReason
    threshold_nok: Decimal
    applied_threshold_nok: Decimal  # the threshold after the margin
    equivalent: NokEquivalent | None
    margin: Decimal = Decimal(0)  # the fraction of the threshold left as margin (0.09 is 9 %)
    rate_age_days: int | None = None  # how old the rate used is, in days, on the payment's date


def regulatory_threshold_nok() -> Decimal:
    return settings.REGULATORY_THRESHOLD_NOK


def regulatory_margin() -> Decimal:
    """The margin for a published rate of the payment's own date."""
    return settings.REGULATORY_MARGIN


def regulatory_margin_for(*, rate_date: date, source: str, on_date: date) -> Decimal | None:
    """The margin below the threshold for a rate of ``rate_date`` from ``source``, used on ``on_date``; None when
    the rate is too old to use at all (EXCHANGE_RATE_MAX_AGE_DAYS). The numbers are settings, explained there."""
    age = max((on_date - rate_date).days, 0)
    if age > settings.EXCHANGE_RATE_MAX_AGE_DAYS:
        return None
    margin = settings.REGULATORY_MARGIN + settings.REGULATORY_MARGIN_PER_DAY * age
    if source == ExchangeRateSource.SEED:
        margin += settings.REGULATORY_MARGIN_SEED
    return min(margin, settings.REGULATORY_MARGIN_MAX)


def _applied_threshold(threshold: Decimal, margin: Decimal) -> Decimal:
    return (threshold * (Decimal(1) - margin)).quantize(Decimal("0.01"))


def regulatory_reporting_requirement(*, amount: Decimal, currency: str, on_date: date) -> ReportingRequirement:
    """Whether the regulatory code and information must be given for this payment.

    NOK: from exactly the threshold (100 000). Other currencies: at the newest published rate (staff's or
    Norges Bank's) on or before ``on_date``, else the seed's estimate shipped with the portal, from the
    threshold less a margin that grows with the rate's age (``regulatory_margin_for``: 5 % for a rate of the
    day, 9 % for one 8 days old ...). Without a rate, or with one older than EXCHANGE_RATE_MAX_AGE_DAYS, we
    cannot tell, and require them whatever the amount.
    """
    threshold = regulatory_threshold_nok()
    if currency == NOK:
        equivalent = nok_equivalent(amount, NOK, on_date=on_date)
        reached = amount >= threshold
        return ReportingRequirement(
            required=reached,
            reason=ReportingReason.NOK_AT_THRESHOLD if reached else ReportingReason.NOK_BELOW_THRESHOLD,
            threshold_nok=threshold,
            applied_threshold_nok=threshold,
            equivalent=equivalent,
        )
    try:
        equivalent = nok_equivalent(amount, currency, on_date=on_date, published_only=True)
        assert equivalent.rate_date is not None
        if (
            regulatory_margin_for(rate_date=equivalent.rate_date, source=equivalent.source, on_date=on_date)
            is None
        ):
            raise ExchangeRateUnavailable(currency, on_date)  # too old: a younger seed estimate may still do
    except ExchangeRateUnavailable:
        try:
            equivalent = nok_equivalent(amount, currency, on_date=on_date)
        except ExchangeRateUnavailable:
            return ReportingRequirement(True, ReportingReason.NO_RATE, threshold, threshold, None)
    assert equivalent.rate_date is not None
    age = max((on_date - equivalent.rate_date).days, 0)
    margin = regulatory_margin_for(rate_date=equivalent.rate_date, source=equivalent.source, on_date=on_date)
    if margin is None:
        return ReportingRequirement(
            True, ReportingReason.STALE_RATE, threshold, threshold, equivalent, rate_age_days=age
        )
    applied = _applied_threshold(threshold, margin)
    reached = equivalent.amount_nok >= applied
    return ReportingRequirement(
        required=reached,
        reason=ReportingReason.EQUIVALENT_NEAR_OR_ABOVE if reached else ReportingReason.EQUIVALENT_BELOW,
        threshold_nok=threshold,
        applied_threshold_nok=applied,
        equivalent=equivalent,
        margin=margin,
        rate_age_days=age,
    )


@dataclass(frozen=True)
class ReportingBasis:
    """What the form tells about a currency before anything is typed: the rate it would use, its date and age,
    the margin, and the amount in that currency from which reporting is asked (None: always asked, no usable
    rate; for NOK the threshold itself)."""

    currency: str
    rate: ExchangeRate | None
    age_days: int | None
    margin: Decimal | None
    from_amount: Decimal | None


def reporting_bases(*, on_date: date, currencies: list[str] | tuple[str, ...]) -> dict[str, ReportingBasis]:
    """The ReportingBasis of each of ``currencies`` on ``on_date``, in one query (the newest rate of each that
    is young enough to use; ties as in exchange_rate_latest)."""
    threshold = regulatory_threshold_nok()
    oldest = on_date - timedelta(days=settings.EXCHANGE_RATE_MAX_AGE_DAYS)
    newest: dict[str, ExchangeRate] = {}
    rows = (
        ExchangeRate.objects.filter(currency__in=currencies, rate_date__lte=on_date, rate_date__gte=oldest)
        .annotate(source_priority=_SOURCE_PRIORITY)
        .order_by("currency", "-rate_date", "source_priority")
    )
    for row in rows:  # a published rate of the period before a seed estimate, as regulatory_reporting_requirement
        current = newest.get(row.currency)
        if current is None or (
            current.source == ExchangeRateSource.SEED and row.source != ExchangeRateSource.SEED
        ):
            newest[row.currency] = row
    bases = {}
    for currency in currencies:
        if currency == NOK:
            bases[currency] = ReportingBasis(NOK, None, None, Decimal(0), threshold)
            continue
        rate = newest.get(currency)
        if rate is None:
            bases[currency] = ReportingBasis(currency, None, None, None, None)
            continue
        margin = regulatory_margin_for(rate_date=rate.rate_date, source=rate.source, on_date=on_date)
        assert margin is not None  # younger than the limit: the query says so
        applied = _applied_threshold(threshold, margin)
        # The smallest amount whose equivalent reaches the applied threshold, to whole units of the currency.
        from_amount = (applied * rate.unit / rate.rate).quantize(Decimal(1), rounding=ROUND_CEILING)
        bases[currency] = ReportingBasis(currency, rate, (on_date - rate.rate_date).days, margin, from_amount)
    return bases


# --- the accounts a payment can be made from (the payment form) -------------------------------------


@dataclass(frozen=True)
class DebtorChoice:
    """One consented account the user can pay from, with the connection (PSU-ID) that pays from it."""

    account_id: int
    connection_id: int
    context: str
    key: str
    label: str
    currency: str
    iban: str
    bban: str


def debtor_choices(*, user, currency: str | None = None) -> list[DebtorChoice]:
    """The user's consented accounts (not card accounts) of live connections with a PSU-ID, in one query;
    ``currency`` keeps only accounts in it (the domestic product pays from NOK accounts)."""
    accounts = (
        BankAccount.objects.filter(
            connection__user=user,
            connection__state__in=(ConnectionState.ACTIVE, ConnectionState.PENDING),
            kind=AccountKind.ACCOUNT,
            consented=True,
        )
        .exclude(connection__psu_id_hash="")
        .exclude(iban="", bban="")
        .select_related("connection")
        .order_by("connection_id", "name", "id")
    )
    if currency:
        accounts = accounts.filter(currency=currency)
    choices = []
    for account in accounts:
        number = account.iban or account.bban
        # Two companies' accounts may both be "Driftskonto": the company stands right beside the name.
        company = f" · {account.company}" if account.company else ""
        choices.append(
            DebtorChoice(
                account_id=account.pk,
                connection_id=account.connection_id,
                context=account.connection.context,
                key=str(account.pk),
                label=f"{account.name or account.product or number}{company} ({number}, {account.currency})",
                currency=account.currency,
                iban=account.iban,
                bban="" if account.iban else account.bban,
            )
        )
    return choices


def payment_connection_for_typed_account(*, user):
    """For a payment from a typed account: the user's private connection with a PSU-ID (the latest SCA), or
    None (single SCA with the national identity number)."""
    return (
        BankConnection.objects.filter(user=user, context=PsuContextChoice.PRIVATE)
        .exclude(state=ConnectionState.DISCONNECTED)
        .exclude(psu_id_hash="")
        .order_by("-sca_at", "-pk")
        .first()
    )


# --- the funds on the review page ------------------------------------------------------------------------


@dataclass(frozen=True)
class FundsCheck:
    """The debtor account's available balance on the review page, and whether the payment (with the fees known
    so far) is more than it. ``comparable`` False: the amounts are in currencies the portal cannot compare.
    ``estimate``: the payment was converted to the account's currency at the portal's exchange rate."""

    available: Decimal
    currency: str
    read_at: datetime | None
    needed: Decimal | None  # the payment plus the known fees, in the account's currency
    comparable: bool
    estimate: bool
    fees_included: bool

    @property
    def short(self) -> bool:
        return self.comparable and self.needed is not None and self.needed > self.available


def funds_check(
    *, payment: Payment, available: Decimal, currency: str, read_at: datetime | None = None
) -> FundsCheck:
    """Compare the payment (plus its fee, where the bank has told it in the same currency) with an available
    balance of ``available`` ``currency``: in the same currency as it is; a payment in another currency against
    a NOK account at its NOK equivalent (the one reckoned for the form, else at the latest rate); anything else
    is not compared."""
    needed: Decimal | None = None
    estimate = False
    if payment.currency == currency:
        needed = payment.amount
    elif currency == NOK:
        needed = payment.nok_equivalent
        if needed is None:
            try:
                needed = nok_equivalent(payment.amount, payment.currency, on_date=timezone.localdate()).amount_nok
            except ExchangeRateUnavailable:
                needed = None
        estimate = needed is not None
    fees_included = False
    if needed is not None and payment.fee_amount is not None and payment.fee_currency == currency:
        needed += payment.fee_amount
        fees_included = True
    return FundsCheck(
        available=available,
        currency=currency,
        read_at=read_at,
        needed=needed,
        comparable=needed is not None,
        estimate=estimate,
        fees_included=fees_included,
    )


# --- who may see a payment -------------------------------------------------------------------------------


def payments_visible_to(user: Any) -> QuerySet[Payment]:
    """Every payment the user may open: their own, and their company's that need or have their signature."""
    if user is None or not user.is_authenticated:
        return Payment.objects.none()
    hashes = confirmed_agreement_hashes(user=user)
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
    if payment.connection.psu_corporate_id_hash not in confirmed_agreement_hashes(user=user):
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
    funds_available: bool | None = None  # the bank's word on the funds with this status


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
                funds_available=event.funds_available,
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
    DRAFT = "draft"  # saved and reviewed, never sent

    @staticmethod
    def query(group: str) -> Q:
        return {
            StatusGroup.IN_PROGRESS: ~Q(state__in=["final", "refused", "draft"]),
            StatusGroup.NEEDS_ACTION: Q(state__in=["initiated", "outcome_unknown", "unconfirmed"])
            | Q(transaction_status="PATC"),
            StatusGroup.COMPLETED: Q(transaction_status__in=["ACSC", "ACCC"]),
            StatusGroup.NOT_COMPLETED: Q(transaction_status__in=["RJCT", "CANC"]) | Q(state="refused"),
            StatusGroup.DRAFT: Q(state="draft"),
        }[group]


@dataclass(frozen=True)
class ListFilters:
    group: str = ""
    text: str = ""
    date_from: date | None = None
    date_to: date | None = None
    currency: str = ""


def payments_list(*, user: Any, filters: ListFilters, drafts: bool = True) -> QuerySet[Payment]:
    """The user's payments (and their company's awaiting their signature), newest first, filtered. The user's
    own drafts (saved, never sent) are in it unless ``drafts`` is False (the CSV export lists sent payments)."""
    payments = payments_visible_to(user)
    if drafts:
        payments = payments.exclude(Q(state="draft") & ~Q(user=user))
    else:
        payments = payments.exclude(state="draft")
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


# --- payments alike (one intent, one payment) -------------------------------------------------------------


def _alike(payment: Payment) -> Q:
    """The user's other payments with the same debtor, creditor, amount and currency (what the bank's logical
    duplicate check compares, with the day)."""
    return ~Q(pk=payment.pk) & Q(
        user_id=payment.user_id,
        debtor_account=payment.debtor_account,
        creditor_account=payment.creditor_account,
        amount=payment.amount,
        currency=payment.currency,
    )


def payments_alike(*, payment: Payment) -> QuerySet[Payment]:
    """The user's other payments with the same debtor, creditor, amount and currency (:func:`_alike`), drafts left
    out, newest first."""
    return (
        Payment.objects.filter(_alike(payment)).exclude(state=PaymentState.DRAFT).order_by("-submitted_at", "-id")
    )


def payments_alike_unknown(*, payment: Payment) -> QuerySet[Payment]:
    """The user's payments alike whose outcome is not known (sent, perhaps at the bank, not settled): while one
    exists, ``payment`` is not sent."""
    # One filter() (each further filter or exclude clones the query; this one is compiled on every submit),
    # unordered: there are no drafts among those states.
    return Payment.objects.filter(_alike(payment), state__in=UNKNOWN_OUTCOME_STATES)


def payment_alike_unknown(*, payment: Payment) -> Payment | None:
    """The newest of :func:`payments_alike_unknown`, or None."""
    return payments_alike_unknown(payment=payment).order_by("-submitted_at", "-id").first()


#: A payment alike in one of these is over: paying "again" cannot meet it half-way.
_OVER_STATES = (PaymentState.FINAL, PaymentState.REFUSED, PaymentState.NOT_AT_BANK)


def payment_alike_open(*, payment: Payment) -> Payment | None:
    """The user's payment alike that is not over (of unknown outcome, awaiting approval, processing, found in
    the account without a final status): shown instead of offering to pay again."""
    return payments_alike(payment=payment).exclude(state__in=_OVER_STATES).first()


def payment_alike_final(*, payment: Payment) -> Payment | None:
    """The newest of the user's payments alike that the bank carried out or still holds as final: the one a
    "pay it again" would duplicate (None: the bank's duplicate is none of the portal's)."""
    return (
        payments_alike(payment=payment)
        .filter(state=PaymentState.FINAL)
        .exclude(transaction_status__in=("RJCT", "CANC"))
        .first()
    )
