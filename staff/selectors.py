"""Reads for the staff dashboard of the bank integration: bank calls of a period and payments waiting on the bank.

Percentiles are nearest-rank (the value at position ceil(p/100 * n) of the n durations in order), computed by
the database with a window function (ROW_NUMBER over each operation), so the same query gives the same figures
on SQLite and PostgreSQL and no duration list is brought into Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Count, F, Min, Q, QuerySet, Window
from django.db.models.functions import RowNumber, TruncHour
from django.utils.translation import gettext_lazy as _

from core import certificates
from core.models import BankCall
from payments.models import Payment, PaymentState

#: Sent to the bank (or being sent) and not yet at a final status.
PAYMENT_WAITING_STATES = (
    PaymentState.SUBMITTING,
    PaymentState.OUTCOME_UNKNOWN,
    PaymentState.UNCONFIRMED,
    PaymentState.INITIATED,
    PaymentState.AUTHORISING,
    PaymentState.AWAITING_STATUS,
)

#: A call counts as an error when the bank refused or failed (4xx, 5xx), did not answer at all, or answered with
#: what the client could not accept (a missing or bad response signature, a malformed or too large answer).
ERROR = Q(status__gte=400) | Q(status__isnull=True) | ~Q(error="")
TOO_MANY_REQUESTS = Q(status=429)
PERCENTILES = (50, 95)


@dataclass
class CallFigures:
    """Bank calls (HTTP attempts) of one operation, or of all of them."""

    operation: str
    calls: int = 0
    errors: int = 0
    too_many: int = 0
    percentiles: dict[int, int] = field(default_factory=dict)  # p -> duration (ms)

    @property
    def error_rate(self) -> Decimal | None:
        """Errors per 100 calls, to one decimal; None without calls."""
        if not self.calls:
            return None
        return (Decimal(self.errors) * 100 / self.calls).quantize(Decimal("0.1"))

    @property
    def median_ms(self) -> int | None:
        return self.percentiles.get(50)

    @property
    def p95_ms(self) -> int | None:
        return self.percentiles.get(95)


@dataclass(frozen=True)
class HourFigures:
    hour: datetime  # start of the hour, UTC
    calls: int
    errors: int


@dataclass(frozen=True)
class WaitingFigures:
    state: str
    label: str
    count: int
    oldest: datetime | None


def _operation(method: str, path: str) -> str:
    return f"{method} {path}"


def _percentile_rows(calls: QuerySet[BankCall], partition: list) -> QuerySet:
    """The rows at the nearest-rank positions of PERCENTILES within each partition (the durations in order)."""
    ranked = calls.annotate(
        position=Window(RowNumber(), partition_by=partition or None, order_by=[F("duration_ms"), F("id")]),
        total=Window(Count("id"), partition_by=partition or None),
    )
    # ceil(p * n / 100) in integer arithmetic, the same on every database: (p * n + 99) / 100.
    wanted = Q()
    for p in PERCENTILES:
        wanted |= Q(position=(F("total") * p + 99) / 100)
    return ranked.filter(wanted).values("method", "path_template", "position", "total", "duration_ms")


def bank_call_figures(*, since: datetime, until: datetime) -> tuple[list[CallFigures], CallFigures]:
    """Per operation (busiest first) and in total: calls, errors, 429s, median and 95th percentile duration."""
    calls = BankCall.objects.filter(started_at__gte=since, started_at__lt=until).order_by()
    counts = {
        "calls": Count("id"),
        "errors": Count("id", filter=ERROR),
        "too_many": Count("id", filter=TOO_MANY_REQUESTS),
    }
    by_operation: dict[str, CallFigures] = {}
    for row in calls.values("method", "path_template").annotate(**counts):
        name = _operation(row["method"], row["path_template"])
        by_operation[name] = CallFigures(name, row["calls"], row["errors"], row["too_many"])
    overall = CallFigures("all operations", **calls.aggregate(**counts))

    for row in _percentile_rows(calls, [F("method"), F("path_template")]):
        figures = by_operation[_operation(row["method"], row["path_template"])]
        _record_percentiles(figures, row["position"], row["total"], row["duration_ms"])
    for row in _percentile_rows(calls, []):
        _record_percentiles(overall, row["position"], row["total"], row["duration_ms"])

    ordered = sorted(by_operation.values(), key=lambda f: (-f.calls, f.operation))
    return ordered, overall


def _record_percentiles(figures: CallFigures, position: int, total: int, duration: int) -> None:
    for p in PERCENTILES:
        if (p * total + 99) // 100 == position:
            figures.percentiles[p] = duration


def bank_calls_per_hour(*, since: datetime, until: datetime) -> list[HourFigures]:
    """Calls and errors in each hour from ``since`` (rounded down to the hour) to ``until``, empty hours too."""
    calls = BankCall.objects.filter(started_at__gte=since, started_at__lt=until).order_by()
    rows = (
        calls.annotate(hour=TruncHour("started_at", tzinfo=UTC))
        .values("hour")
        .annotate(calls=Count("id"), errors=Count("id", filter=ERROR))
    )
    found = {row["hour"].astimezone(UTC): row for row in rows}
    hour = since.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    hours: list[HourFigures] = []
    while hour < until:
        row = found.get(hour)
        hours.append(HourFigures(hour, row["calls"] if row else 0, row["errors"] if row else 0))
        hour += timedelta(hours=1)
    return hours


def payments_waiting() -> list[WaitingFigures]:
    """Payments sent to the bank without a final status yet, by the portal's state (every waiting state)."""
    rows = {
        row["state"]: row
        for row in Payment.objects.filter(state__in=PAYMENT_WAITING_STATES)
        .order_by()
        .values("state")
        .annotate(count=Count("id"), oldest=Min("created_at"))
    }
    return [
        WaitingFigures(
            state=state.value,
            label=str(state.label),
            count=rows[state]["count"] if state in rows else 0,
            oldest=rows[state]["oldest"] if state in rows else None,
        )
        for state in PAYMENT_WAITING_STATES
    ]


#: The certificates' names on the dashboard, in the staff member's language (core.certificates keeps the English
#: ones for the logs and metrics).
CERTIFICATE_LABELS = {
    "qsealc": _("TPP's QSealC (signs every request)"),
    "bank_seal": _("Bank's seal (verifies the bank's answers)"),
    "qwac": _("TPP's QWAC (TLS client certificate)"),
    certificates.BANK_TLS: _("Bank's TLS certificate"),
}
#: The warning levels said in the staff member's language.
LEVEL_LABELS = {
    certificates.CRITICAL: _("7 days"),
    certificates.WARNING: _("14 days"),
    certificates.NOTICE: _("30 days"),
}


@dataclass(frozen=True)
class CertificateFigures:
    name: str
    label: str
    source: str
    subject: str
    not_after: datetime | None
    days_left: int | None  # whole days, rounded down (negative: expired)
    level: str  # certificates.EXPIRED, CRITICAL, WARNING, NOTICE, OK or UNKNOWN
    checked_at: datetime | None
    error: str

    @property
    def needs_attention(self) -> bool:
        return self.level != certificates.OK

    @property
    def level_shown(self) -> str:
        return str(LEVEL_LABELS.get(self.level, self.level))


def certificate_figures(*, now: datetime) -> list[CertificateFigures]:
    """Every certificate of the bank connection with its days left and warning level (30, 14, 7 days, expired)."""
    found = []
    for status in certificates.certificates_status():
        days = status.days_left(now)
        found.append(
            CertificateFigures(
                name=status.name,
                label=str(CERTIFICATE_LABELS.get(status.name, status.label)),
                source=status.source,
                subject=status.subject,
                not_after=status.not_after,
                days_left=None if days is None else int(days // 1),
                level=status.level(now),
                checked_at=status.checked_at,
                error=status.error,
            )
        )
    return found
