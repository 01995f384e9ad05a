"""Reads: exchange rates, the NOK equivalent of an amount, and whether regulatory reporting is required."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db.models import Case, IntegerField, Value, When

from payments.models import ExchangeRate, ExchangeRateSource
from payments.spec import NOK

# The bank's rule (spec 2.1 and 8): regulatory code and information are required from 100 000 NOK.
DEFAULT_THRESHOLD_NOK = Decimal("100000")
# Safety margin for amounts in other currencies: the bank converts at its own rate and time, which differ
# from the published middle rate we use by its spread and by the day's movement. From 5 % below the
# threshold (95 000 NOK equivalent) we ask for the reporting fields, so a payment is not refused by the bank
# for lacking them. A NOK amount needs no conversion: the threshold is exact for it.
DEFAULT_MARGIN = Decimal("0.05")
# A rate older than this (on the date of the payment) is not trusted to decide: reporting is then required.
# 7 days covers weekends and Easter, when Norges Bank publishes nothing.
DEFAULT_RATE_MAX_AGE_DAYS = 7

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

    ``published_only`` leaves out the seed rows: they are plausible figures shipped with the portal for display
    before the first fetch, not Norges Bank's published rates, and must not decide anything.
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
    result may come from a seed rate (``source`` says so; show it as an estimate) unless ``published_only``.
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
    # cannot tell (no rate, or only a seed rate): ask, the bank would refuse a payment that needed them
    NO_RATE = "no-rate"
    STALE_RATE = "stale-rate"  # the newest rate is too old to trust near the threshold


@dataclass(frozen=True)
class ReportingRequirement:
    required: bool
    reason: ReportingReason
    threshold_nok: Decimal
    applied_threshold_nok: Decimal  # the threshold after the margin
    equivalent: NokEquivalent | None


def regulatory_threshold_nok() -> Decimal:
    return Decimal(str(getattr(settings, "REGULATORY_THRESHOLD_NOK", DEFAULT_THRESHOLD_NOK)))


def regulatory_margin() -> Decimal:
    margin = Decimal(str(getattr(settings, "REGULATORY_MARGIN", DEFAULT_MARGIN)))
    if not Decimal(0) <= margin < Decimal(1):
        raise ValueError(f"REGULATORY_MARGIN must be a fraction from 0 up to 1, got {margin}")
    return margin


def regulatory_reporting_requirement(*, amount: Decimal, currency: str, on_date: date) -> ReportingRequirement:
    """Whether the regulatory code and information must be given for this payment.

    NOK: from exactly the threshold (100 000). Other currencies: from the threshold less the margin
    (95 000 NOK equivalent with the default 5 %), at the latest rate on or before ``on_date``; when there is
    no rate, or it is older than EXCHANGE_RATE_MAX_AGE_DAYS, we cannot tell, and require them. Seed rates
    (ExchangeRateSource.SEED: shipped with the portal, not Norges Bank's published figures) never decide: with
    only a seed rate the answer is NO_RATE, and ``equivalent`` then carries the seed estimate for display, its
    ``source`` saying "seed".
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
    applied = (threshold * (Decimal(1) - regulatory_margin())).quantize(Decimal("0.01"))
    try:
        equivalent = nok_equivalent(amount, currency, on_date=on_date, published_only=True)
    except ExchangeRateUnavailable:
        try:
            estimate = nok_equivalent(amount, currency, on_date=on_date)  # a seed rate, for display only
        except ExchangeRateUnavailable:
            estimate = None
        return ReportingRequirement(True, ReportingReason.NO_RATE, threshold, applied, estimate)
    max_age = int(getattr(settings, "EXCHANGE_RATE_MAX_AGE_DAYS", DEFAULT_RATE_MAX_AGE_DAYS))
    assert equivalent.rate_date is not None
    if on_date - equivalent.rate_date > timedelta(days=max_age):
        return ReportingRequirement(True, ReportingReason.STALE_RATE, threshold, applied, equivalent)
    reached = equivalent.amount_nok >= applied
    return ReportingRequirement(
        required=reached,
        reason=ReportingReason.EQUIVALENT_NEAR_OR_ABOVE if reached else ReportingReason.EQUIVALENT_BELOW,
        threshold_nok=threshold,
        applied_threshold_nok=applied,
        equivalent=equivalent,
    )


# --- the accounts a payment can be made from (payments.views_initiation) -------------------------------------


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
    from accounts.models import AccountKind, BankAccount, ConnectionState

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
        company = f" - {account.connection.agreement_name}" if account.connection.agreement_name else ""
        choices.append(
            DebtorChoice(
                account_id=account.pk,
                connection_id=account.connection_id,
                context=account.connection.context,
                key=str(account.pk),
                label=f"{account.name or account.product or number} ({number}, {account.currency}){company}",
                currency=account.currency,
                iban=account.iban,
                bban="" if account.iban else account.bban,
            )
        )
    return choices


def payment_connection_for_typed_account(*, user):
    """For a payment from a typed account: the user's private connection with a PSU-ID (the latest SCA), or
    None (single SCA with the national identity number)."""
    from accounts.models import BankConnection, ConnectionState, PsuContextChoice

    return (
        BankConnection.objects.filter(user=user, context=PsuContextChoice.PRIVATE)
        .exclude(state=ConnectionState.DISCONNECTED)
        .exclude(psu_id_hash="")
        .order_by("-sca_at", "-pk")
        .first()
    )
