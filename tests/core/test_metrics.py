"""The portal's metrics: what a scrape of ``manage.py serve_metrics`` gives, checked against known events and rows.

Counters are compared before and after (the multiprocess folder keeps the counts of earlier processes, as it
does in production until it is emptied); gauges are compared with the rows each test makes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import timezone
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from accounts.models import RefreshCall, RefreshKind
from connections.models import ConnectionState
from core import bank as portal_bank
from core import metrics
from payments.models import PaymentState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.bankfake import Answer
from tests.payments.payment_factories import PaymentFactory
from tpp_portal.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docker/grafana/tpp-portal.json"

pytestmark = pytest.mark.django_db


def scrape() -> dict[tuple[str, frozenset], float]:
    """Every sample of one scrape of the served registry, by name and labels."""
    text = generate_latest(metrics.registry()).decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


# --- events -------------------------------------------------------------------------------------------------


def test_bank_calls_are_counted_by_operation_and_status_with_their_duration(own_seal_bank_settings, fake_bank):
    fake_bank.add("GET", "/v1/agreements", Answer(200, {"agreements": []}))
    fake_bank.add(
        "GET", "/v1/users", Answer(429, {"tppMessages": [{"category": "ERROR", "code": "ACCESS_EXCEEDED"}]})
    )
    before = scrape()
    client = portal_bank.bank_client()
    client.request("GET", "/v1/agreements")
    client.request("GET", "/v1/agreements")
    client.request("GET", "/v1/users")
    after = scrape()
    attempts_429 = sum(1 for r in fake_bank.received if r.path == "/v1/users")
    assert attempts_429 >= 1

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("tpp_bank_calls_total", operation="GET /v1/agreements", status="200") == 2
    assert delta("tpp_bank_calls_total", operation="GET /v1/users", status="429") == attempts_429
    assert delta("tpp_bank_rate_limited_total", operation="GET /v1/users", psu_present="false") == attempts_429
    assert delta("tpp_bank_call_duration_seconds_count", operation="GET /v1/agreements") == 2
    assert delta("tpp_bank_call_duration_seconds_bucket", operation="GET /v1/agreements", le="+Inf") == 2
    assert delta("tpp_bank_call_duration_seconds_sum", operation="GET /v1/agreements") > 0


def test_a_metrics_folder_that_cannot_be_written_never_fails_a_bank_call(
    own_seal_bank_settings, fake_bank, monkeypatch, caplog
):
    from core.models import BankCall

    def unwritable():
        raise PermissionError(13, "Permission denied", "/var/lib/tpp-metrics")

    monkeypatch.setattr(metrics, "_multiprocess", unwritable)
    fake_bank.add("GET", "/v1/agreements", Answer(200, {"agreements": []}))
    portal_bank.bank_client().request("GET", "/v1/agreements")
    assert BankCall.objects.filter(path_template="/v1/agreements", status=200).count() == 1  # audited all the same
    assert "observe_bank_call not counted" in caplog.text


def test_counts_of_other_processes_are_added_up(tmp_path):
    """A second process (as a gunicorn worker or a Celery pool process is) counts into its own file; one scrape
    gives the sum."""
    task = f"tests.metrics.other-process-{uuid.uuid4().hex[:8]}"
    metrics.task_failed(task)
    script = (
        "import django; django.setup()\n"
        "from core import metrics\n"
        f"metrics.task_failed({task!r}); metrics.task_failed({task!r}); metrics.task_retried({task!r})\n"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "tpp_portal.settings"}
    environment["METRICS_DIR"] = str(django_settings.METRICS_DIR)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    samples = scrape()
    assert value(samples, "tpp_celery_task_failures_total", task=task) == 3
    assert value(samples, "tpp_celery_task_retries_total", task=task) == 1
    # Each process has files of its own, named by host and process id.
    assert any(
        re.fullmatch(rf"counter_.+-{os.getpid()}\.db", p.name) for p in django_settings.METRICS_DIR.iterdir()
    )


def test_a_failing_celery_task_is_counted():
    name = f"tests.metrics.fails-{uuid.uuid4().hex[:8]}"

    @celery_app.task(name=name)
    def fails():
        raise ValueError("boom")

    before = value(scrape(), "tpp_celery_task_failures_total", task=name)
    result = fails.apply()
    assert result.failed()
    assert value(scrape(), "tpp_celery_task_failures_total", task=name) == before + 1


# --- state --------------------------------------------------------------------------------------------------


def test_the_state_gauges_match_the_rows(django_assert_max_num_queries):
    now = timezone.now()
    fresh = BankAccountFactory(next_refresh_at=now + timedelta(hours=1))
    late = BankAccountFactory(next_refresh_at=now - timedelta(hours=1))  # overdue
    BankAccountFactory(next_refresh_at=now - timedelta(minutes=5))  # due, within the planner's slack
    BankAccountFactory(
        next_refresh_at=now - timedelta(hours=1), refresh_blocked_until=now + timedelta(hours=2)
    )  # blocked after a 429: not overdue
    BankAccountFactory(
        next_refresh_at=now - timedelta(hours=1), connection__state=ConnectionState.NEEDS_RECONNECT
    )  # not refreshed in the background at all
    # The ledger: `late` has spent all 4 balance calls, `fresh` 1 balance and 2 transaction calls; older ones
    # are outside the window.
    for _ in range(4):
        RefreshCall.objects.create(
            account=late, resource_key=RefreshCall.key_for(late), kind=RefreshKind.BALANCES, reserved_at=now
        )
    for kind in (RefreshKind.BALANCES, RefreshKind.TRANSACTIONS, RefreshKind.TRANSACTIONS):
        RefreshCall.objects.create(
            account=fresh, resource_key=RefreshCall.key_for(fresh), kind=kind, reserved_at=now
        )
    RefreshCall.objects.create(
        account=fresh,
        resource_key=RefreshCall.key_for(fresh),
        kind=RefreshKind.BALANCES,
        reserved_at=now - timedelta(hours=25),
    )
    # Payments: one poll 10 minutes late, one due a minute ago (not yet overdue), one reconciliation late.
    PaymentFactory(state=PaymentState.AWAITING_STATUS, next_poll_at=now - timedelta(minutes=10))
    PaymentFactory(state=PaymentState.AWAITING_STATUS, next_poll_at=now - timedelta(minutes=1))
    PaymentFactory(state=PaymentState.OUTCOME_UNKNOWN, reconcile_at=now - timedelta(minutes=30), next_poll_at=None)
    # Consents: expiring in 5, 10 and 20 days, one long valid, one expired but still active.
    for days in (5, 10, 20, 90):
        BankConnectionFactory(consent_valid_until=now + timedelta(days=days))
    BankConnectionFactory(consent_valid_until=now - timedelta(hours=1))

    collector = metrics.PortalStateCollector()
    with django_assert_max_num_queries(12):
        families = {f.name: f for f in collector.collect()}

    def gauge(name, **labels):
        (found,) = [s.value for s in families[name].samples if s.labels == labels]
        return found

    assert gauge("tpp_refreshable_bank_accounts") == 4
    assert gauge("tpp_unattended_calls_left", kind="balances") == 4 * 4 - 5
    assert gauge("tpp_unattended_calls_left", kind="transactions") == 4 * 4 - 2
    assert gauge("tpp_unattended_budget_exhausted_accounts", kind="balances") == 1
    assert gauge("tpp_unattended_budget_exhausted_accounts", kind="transactions") == 0
    assert gauge("tpp_accounts_refresh_overdue") == 1
    assert gauge("tpp_payments_status_overdue", check="poll") == 1
    assert gauge("tpp_payments_status_overdue", check="reconcile") == 1
    # The accounts' connections (consents of 180 days) count too: only the ones made here expire soon.
    assert gauge("tpp_consents_expiring", within_days="7") == 1
    assert gauge("tpp_consents_expiring", within_days="14") == 2
    assert gauge("tpp_consents_expiring", within_days="30") == 3
    assert gauge("tpp_consents_expired_active") == 1
    assert {s.labels["source"]: s.value for s in families["tpp_metrics_source_up"].samples} == {
        "refresh": 1,
        "payments": 1,
        "consents": 1,
        "queue": 1,
        "certificates": 1,
    }


def test_the_queue_length_counts_what_waits_in_the_broker(monkeypatch):
    queue = f"tpp-ops2-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(metrics, "QUEUES", (queue,))

    def lengths():
        return {s.labels["queue"]: s.value for f in metrics.queue_gauges() for s in f.samples}

    assert lengths() == {queue: 0}
    for _ in range(3):
        celery_app.send_task("tpp_portal.ping", args=["metrics"], queue=queue)
    try:
        assert lengths() == {queue: 3}
    finally:
        with celery_app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)
            connection.default_channel.queue_delete(queue)


def test_a_part_that_cannot_be_read_is_reported_and_the_rest_still_served(monkeypatch):
    def broken():
        raise ConnectionError("broker down")

    collector = metrics.PortalStateCollector()
    collector.sources.update(queue=broken, refresh=lambda: iter(()), payments=lambda: iter(()))
    collector.sources.update(consents=lambda: iter(()))
    families = {f.name: f for f in collector.collect()}
    up = {s.labels["source"]: s.value for s in families["tpp_metrics_source_up"].samples}
    assert up["queue"] == 0 and up["certificates"] == 1
    assert "tpp_certificate_days_left" in families


# --- the address --------------------------------------------------------------------------------------------


@pytest.fixture
def metrics_server():
    """``manage.py serve_metrics`` as its own process, on a free loopback port."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve_metrics", "--bind", "127.0.0.1:0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"http://([\d.]+):(\d+)/metrics", line)
        assert match, f"serve_metrics said {line!r}: {process.stderr.read() if process.poll() is not None else ''}"
        yield match.group(1), int(match.group(2))
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_the_metrics_process_serves_every_metric_on_loopback_only(metrics_server):
    import requests

    host, port = metrics_server
    assert host == "127.0.0.1"  # bound to loopback: not reachable from another machine
    answer = requests.get(f"http://{host}:{port}/metrics", timeout=30)
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("text/plain")
    families = {family.name: family for family in text_string_to_metric_families(answer.text)}
    # Every part of the state is reported (this process's database is not the test database: the gauges
    # themselves are checked in this process by test_the_state_gauges_match_the_rows).
    up = {sample.labels["source"] for sample in families["tpp_metrics_source_up"].samples}
    assert up == {"refresh", "payments", "consents", "queue", "certificates"}
    assert "tpp_certificate_days_left" in families and "tpp_celery_queue_length" in families
    assert requests.get(f"http://{host}:{port}/", timeout=10).status_code == 404


def test_the_portal_itself_has_no_metrics_address(client):
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics/").status_code == 404


# --- the Grafana dashboard ----------------------------------------------------------------------------------


def test_the_grafana_dashboard_uses_only_metrics_the_portal_serves():
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", []) if "expr" in target
    ]
    assert expressions
    counters = (
        metrics.BANK_CALLS,
        metrics.BANK_RATE_LIMITED,
        metrics.BANK_CALLS_REFUSED,
        metrics.TASK_FAILURES,
        metrics.TASK_RETRIES,
    )
    served = {f"{counter._name}_total" for counter in counters}
    served |= {f"{metrics.BANK_CALL_DURATION._name}_{part}" for part in ("bucket", "count", "sum")}
    sources = ("core/metrics.py", "core/certificates.py", "accounts/metrics.py", "connections/metrics.py")
    source = "".join((ROOT / path).read_text() for path in (*sources, "payments/metrics.py"))
    served |= set(re.findall(r'"(tpp_[a-z_]+)"', source)) - {"tpp_bank_call_duration_seconds"}
    used = {name for expr in expressions for name in re.findall(r"\btpp_[a-z_]+", expr)}
    assert used <= served, f"the dashboard uses metrics the portal does not serve: {sorted(used - served)}"
    # Every kind of metric the issue asks for has a panel.
    for name in (
        "tpp_bank_calls_total",
        "tpp_bank_call_duration_seconds_bucket",
        "tpp_bank_rate_limited_total",
        "tpp_unattended_calls_left",
        "tpp_accounts_refresh_overdue",
        "tpp_payments_status_overdue",
        "tpp_consents_expiring",
        "tpp_celery_queue_length",
        "tpp_celery_task_failures_total",
        "tpp_certificate_days_left",
    ):
        assert name in used, f"no panel shows {name}"


def test_every_metric_is_explained_in_the_operations_guide():
    guide = (ROOT / "docs/operations.md").read_text()
    sources = ("core/metrics.py", "core/certificates.py", "accounts/metrics.py", "connections/metrics.py")
    source = "".join((ROOT / path).read_text() for path in (*sources, "payments/metrics.py"))
    for name in set(re.findall(r'"(tpp_[a-z_]+)"', source)):
        assert f"`{name}" in guide, f"docs/operations.md does not explain {name}"
