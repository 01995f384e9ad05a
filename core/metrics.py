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
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any

from celery import current_app
from kombu.exceptions import ChannelError
from prometheus_client import CollectorRegistry, Counter, Histogram, values
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

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
    """One audited attempt (xs2a.audit.AuditRecord): called from core.bank's audit hook."""
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

#: The parts of the portal's state read at each scrape, by name (the ``source`` label of tpp_metrics_source_up).
#: Each app adds its own in its AppConfig.ready() with :func:`state_source`; core adds the queue and the
#: certificates.
_sources: dict[str, Callable[[], Iterable[GaugeMetricFamily]]] = {}


def state_source(name: str, reader: Callable[[], Iterable[GaugeMetricFamily]]) -> None:
    """Serve the gauges that ``reader`` yields at every scrape, under ``name``."""
    _sources[name] = reader


class PortalStateCollector(Collector):
    """Gauges computed from the database, the broker and the certificate files at each scrape: the state sources
    that the apps registered (or ``sources``).

    Each part is read on its own: a part that fails (the broker down, say) is logged and reported by
    ``tpp_metrics_source_up{source=...} 0`` while the others are still served."""

    def __init__(self, sources: dict[str, Callable[[], Iterable[GaugeMetricFamily]]] | None = None) -> None:
        self.sources = dict(_sources if sources is None else sources)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "tpp_metrics_source_up",
            "1 when this part of the portal's state could be read at this scrape",
            labels=["source"],
        )
        for source, reader in self.sources.items():
            try:
                families = list(reader())
            except Exception:  # one unreadable part must not hide the others; logged with its cause
                logger.exception("metrics: reading %s failed", source)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up


def queue_gauges() -> Iterator[GaugeMetricFamily]:
    """The length of each of QUEUES in the broker of the process's Celery app."""
    length = GaugeMetricFamily(
        "tpp_celery_queue_length", "Tasks waiting in the broker for a worker, by queue", labels=["queue"]
    )
    with current_app.connection_for_read() as connection:
        connection.ensure_connection(max_retries=1, timeout=3)
        channel = connection.default_channel
        for queue in QUEUES:
            try:
                _, count, _ = channel.queue_declare(queue=queue, passive=True)
            except ChannelError:  # not declared yet (Redis keeps no empty list): nothing waits
                count = 0
            length.add_metric([queue], count)
    yield length


def minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


def registry() -> CollectorRegistry:
    """What the metrics address serves: the events of every process (files) and the state of the portal."""
    _multiprocess()
    served = CollectorRegistry()
    MultiProcessCollector(served)
    served.register(PortalStateCollector())
    return served
