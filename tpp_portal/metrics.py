"""The portal's metrics in the Prometheus format: events counted by every process, state read at scrape time.

Two kinds, two ways (docs/operations.md, Metrics, lists every metric):

- **Events** (bank calls by operation and status with their duration, 429 answers, calls refused for an expired
  certificate, Celery task failures and retries) happen in many processes: gunicorn's workers, the Celery
  worker's pool processes, possibly several containers of each. Each process counts into files of its own in
  ``METRICS_DIR`` (prometheus-client's multiprocess mode, the files named by host and process id so that
  containers sharing the folder never write to one file); the metrics process adds them up at each scrape.
  Counting where the event happens is exact and costs a memory write; counting from the audit table instead
  would miss rows committed out of order and fall back when old rows are pruned.
- **State** (the unattended budget left, accounts overdue for refresh, payments overdue for a status check,
  consents expiring, the Celery queue's length, certificate days left) is read from the database, the broker
  and the certificate files when Prometheus scrapes (``PortalStateCollector``, a handful of aggregate queries):
  always current, one source of truth, nothing to keep in step, and no gauge left behind by a dead process.

``manage.py serve_metrics`` serves both on METRICS_BIND (loopback by default; in docker/compose.yaml the
``metrics`` service on the compose network, never published and never routed by the proxy). The portal's own
web server has no metrics address.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from kombu.exceptions import ChannelError
from prometheus_client import CollectorRegistry, Counter, Histogram, values
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

#: Accounts whose planned refresh is this late (the planner runs every 5 minutes) count as overdue.
REFRESH_OVERDUE_AFTER = timedelta(minutes=15)
#: Payments whose status check is this late (the dispatcher runs every minute) count as overdue.
POLL_OVERDUE_AFTER = timedelta(minutes=5)
#: Consents expiring within these days are counted (the reminders go out at 14, 7 and 1).
CONSENT_EXPIRY_DAYS = (30, 14, 7)
#: The queues whose length is reported (the portal uses Celery's default queue only).
QUEUES = ("celery",)

_lock = threading.Lock()
_ready = False


@functools.cache
def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:60] or "host"


def _process_identifier() -> str:
    """Distinct across every process writing into METRICS_DIR, containers included (their pids may repeat).
    Called at every count (prometheus-client notices a fork by it), so only the pid is read each time."""
    return f"{_host()}-{os.getpid()}"


def _multiprocess() -> None:
    """Switch prometheus-client to per-process files in METRICS_DIR, once per process, before the first value.

    Values of labelled metrics are created at their first ``labels()``, which reads ``values.ValueClass`` then, so
    the module-level metrics below may be defined before this runs (and before Django's settings are loaded)."""
    global _ready
    if _ready:
        return
    with _lock:
        if _ready:
            return
        from django.conf import settings

        folder = settings.METRICS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
        values.ValueClass = values.MultiProcessValue(process_identifier=_process_identifier)
        _ready = True


# --- events -------------------------------------------------------------------------------------------------

_registry = CollectorRegistry(auto_describe=True)  # never served: the serving registry reads the files
BANK_CALLS = Counter(
    "tpp_bank_calls",
    "HTTP attempts to the bank, by operation (method and path template) and HTTP status ('none': no answer)",
    ["operation", "status"],
    registry=_registry,
)
BANK_CALL_DURATION = Histogram(
    "tpp_bank_call_duration_seconds",
    "Duration of each HTTP attempt to the bank, by operation",
    ["operation"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0),
    registry=_registry,
)
BANK_RATE_LIMITED = Counter(
    "tpp_bank_rate_limited",
    "429 answers of the bank, by operation and whether the PSU was present (false: an unattended call)",
    ["operation", "psu_present"],
    registry=_registry,
)
BANK_CALLS_REFUSED = Counter(
    "tpp_bank_calls_refused",
    "Bank calls not sent because a certificate of the bank connection has expired, by certificate",
    ["certificate"],
    registry=_registry,
)
TASK_FAILURES = Counter(
    "tpp_celery_task_failures", "Celery tasks that ended in an exception, by task", ["task"], registry=_registry
)
TASK_RETRIES = Counter("tpp_celery_task_retries", "Celery task retries, by task", ["task"], registry=_registry)


def _never_failing(count):
    """Counting is never a reason for a bank call, an audit row or a task to fail: a metrics folder that cannot be
    written (full, read-only) is logged, and the event goes uncounted."""

    @functools.wraps(count)
    def counted(*args: Any) -> None:
        try:
            _multiprocess()
            count(*args)
        except (OSError, ValueError):
            logger.exception("metrics: %s not counted (METRICS_DIR writable?)", count.__name__)

    return counted


@_never_failing
def observe_bank_call(record: Any) -> None:
    """One audited attempt (xs2a.audit.AuditRecord): called from tpp_portal.bank's audit hook."""
    operation = f"{record.method} {record.path_template}"
    status = str(record.status) if record.status is not None else "none"
    BANK_CALLS.labels(operation, status).inc()
    BANK_CALL_DURATION.labels(operation).observe(max(0.0, record.duration_ms) / 1000)
    if record.status == 429:
        BANK_RATE_LIMITED.labels(operation, "true" if record.psu_present else "false").inc()


@_never_failing
def bank_call_refused(certificate: str) -> None:
    BANK_CALLS_REFUSED.labels(certificate).inc()


@_never_failing
def task_failed(task_name: str) -> None:
    TASK_FAILURES.labels(task_name).inc()


@_never_failing
def task_retried(task_name: str) -> None:
    TASK_RETRIES.labels(task_name).inc()


# --- state, read at scrape time -----------------------------------------------------------------------------


class PortalStateCollector(Collector):
    """Gauges computed from the database, the broker and the certificate files at each scrape.

    Each part is read on its own: a part that fails (the broker down, say) is logged and reported by
    ``tpp_metrics_source_up{source=...} 0`` while the others are still served."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "tpp_metrics_source_up",
            "1 when this part of the portal's state could be read at this scrape",
            labels=["source"],
        )
        for source, reader in (
            ("refresh", self._refresh),
            ("payments", self._payments),
            ("consents", self._consents),
            ("queue", self._queue),
            ("certificates", self._certificates),
        ):
            try:
                families = list(reader())
            except Exception:  # one unreadable part must not hide the others; logged with its cause
                logger.exception("metrics: reading %s failed", source)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up

    def _refresh(self) -> Iterator[GaugeMetricFamily]:
        from django.db.models import Count, Q
        from django.utils import timezone

        from accounts.models import (
            UNATTENDED_CALLS_PER_DAY,
            UNATTENDED_WINDOW,
            BankAccount,
            RefreshCall,
            RefreshKind,
        )
        from connections.models import ConnectionAccess, ConnectionState

        now = timezone.now()
        refreshable = BankAccount.objects.filter(
            consented=True, connection__state=ConnectionState.ACTIVE, connection__access=ConnectionAccess.ACCOUNTS
        )
        # The bank counts per bank account: portal accounts of two connections on one bank account share it.
        bank_accounts = refreshable.order_by().values("kind", "resource_id").distinct().count()
        window = RefreshCall.objects.filter(reserved_at__gt=now - UNATTENDED_WINDOW).order_by()
        used = {row["kind"]: row["n"] for row in window.values("kind").annotate(n=Count("id"))}
        exhausted: dict[str, int] = {}
        for kind in (
            window.values("resource_key", "kind")
            .annotate(n=Count("id"))
            .filter(n__gte=UNATTENDED_CALLS_PER_DAY)
            .values_list("kind", flat=True)
        ):
            exhausted[kind] = exhausted.get(kind, 0) + 1
        left = GaugeMetricFamily(
            "tpp_unattended_calls_left",
            "Unattended bank calls still allowed in the rolling 24 hours, summed over the refreshable bank "
            "accounts",
            labels=["kind"],
        )
        spent = GaugeMetricFamily(
            "tpp_unattended_budget_exhausted_accounts",
            "Bank accounts that have used all their unattended calls of the rolling 24 hours",
            labels=["kind"],
        )
        for kind in RefreshKind.values:
            left.add_metric([kind], max(0, UNATTENDED_CALLS_PER_DAY * bank_accounts - used.get(kind, 0)))
            spent.add_metric([kind], exhausted.get(kind, 0))
        yield left
        yield spent
        yield GaugeMetricFamily(
            "tpp_refreshable_bank_accounts", "Bank accounts refreshed in the background", value=bank_accounts
        )
        overdue = (
            refreshable.filter(next_refresh_at__lt=now - REFRESH_OVERDUE_AFTER)
            .filter(
                Q(connection__consent_valid_until__isnull=True) | Q(connection__consent_valid_until__gt=now),
                Q(refresh_blocked_until__isnull=True) | Q(refresh_blocked_until__lte=now),
            )
            .count()
        )
        yield GaugeMetricFamily(
            "tpp_accounts_refresh_overdue",
            f"Accounts whose planned background refresh is more than {_minutes(REFRESH_OVERDUE_AFTER)} minutes "
            "late",
            value=overdue,
        )

    def _payments(self) -> Iterator[GaugeMetricFamily]:
        from django.db.models import Count, Q
        from django.utils import timezone

        from payments.models import Payment

        now = timezone.now()
        late = now - POLL_OVERDUE_AFTER
        figures = Payment.objects.order_by().aggregate(
            poll=Count("id", filter=Q(next_poll_at__lt=late)),
            reconcile=Count("id", filter=Q(reconcile_at__lt=late)),
        )
        overdue = GaugeMetricFamily(
            "tpp_payments_status_overdue",
            f"Payments whose status check is more than {_minutes(POLL_OVERDUE_AFTER)} minutes late "
            "(check: a status poll; reconcile: finding out a lost initiation answer)",
            labels=["check"],
        )
        overdue.add_metric(["poll"], figures["poll"])
        overdue.add_metric(["reconcile"], figures["reconcile"])
        yield overdue

    def _consents(self) -> Iterator[GaugeMetricFamily]:
        from django.db.models import Count, Q
        from django.utils import timezone

        from connections.models import BankConnection, ConnectionAccess, ConnectionState

        now = timezone.now()
        figures = (
            BankConnection.objects.filter(state=ConnectionState.ACTIVE, access=ConnectionAccess.ACCOUNTS)
            .order_by()
            .aggregate(
                **{
                    f"d{days}": Count(
                        "id",
                        filter=Q(consent_valid_until__gt=now, consent_valid_until__lte=now + timedelta(days=days)),
                    )
                    for days in CONSENT_EXPIRY_DAYS
                },
                expired=Count("id", filter=Q(consent_valid_until__lte=now)),
            )
        )
        expiring = GaugeMetricFamily(
            "tpp_consents_expiring",
            "Active connections whose consent expires within the given number of days",
            labels=["within_days"],
        )
        for days in CONSENT_EXPIRY_DAYS:
            expiring.add_metric([str(days)], figures[f"d{days}"])
        yield expiring
        yield GaugeMetricFamily(
            "tpp_consents_expired_active",
            "Connections still active although their consent has expired (the hourly expiry has not run yet)",
            value=figures["expired"],
        )

    def _queue(self) -> Iterator[GaugeMetricFamily]:
        from tpp_portal.celery import app

        length = GaugeMetricFamily(
            "tpp_celery_queue_length", "Tasks waiting in the broker for a worker, by queue", labels=["queue"]
        )
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=3)
            channel = connection.default_channel
            for queue in QUEUES:
                try:
                    _, count, _ = channel.queue_declare(queue=queue, passive=True)
                except ChannelError:  # not declared yet (Redis keeps no empty list): nothing waits
                    count = 0
                length.add_metric([queue], count)
        yield length

    def _certificates(self) -> Iterator[GaugeMetricFamily]:
        from django.utils import timezone

        from tpp_portal import certificates

        now = timezone.now()
        days = GaugeMetricFamily(
            "tpp_certificate_days_left",
            "Days until a certificate of the bank connection expires (negative: expired)",
            labels=["certificate"],
        )
        until = GaugeMetricFamily(
            "tpp_certificate_not_after_seconds",
            "When a certificate of the bank connection expires (Unix time)",
            labels=["certificate"],
        )
        readable = GaugeMetricFamily(
            "tpp_certificate_readable",
            "1 when the certificate could be read (file parsed, TLS handshake made), else 0",
            labels=["certificate"],
        )
        for status in certificates.certificates_status():
            readable.add_metric([status.name], 0 if status.error or status.not_after is None else 1)
            if status.not_after is not None:
                days.add_metric([status.name], round(status.days_left(now) or 0.0, 3))
                until.add_metric([status.name], status.not_after.timestamp())
        yield days
        yield until
        yield readable


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


def registry() -> CollectorRegistry:
    """What the metrics address serves: the events of every process (files) and the state of the portal."""
    _multiprocess()
    served = CollectorRegistry()
    MultiProcessCollector(served)
    served.register(PortalStateCollector())
    return served
