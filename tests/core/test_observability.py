"""Traces and error reports: off unless the environment switches them on, and never carrying a PSU identifier,
a signature or personal data. The tests capture what would be exported (an in-memory span exporter behind the
scrubber, a Sentry transport stub) and look for every secret in it; a control run without the scrubber shows
the same secrets do reach the exporter, so the check can fail."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import requests
from django.test import Client
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from sentry_sdk.transport import Transport

from core import observability
from tests.bankfake import Answer
from tests.tpp_portal.test_backup_restore import server_url
from tests.xs2a.server import LocalBank
from tpp_portal.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
PSU_ID = "7f9c2a4e-58b1-4c3d-9e0f-1a2b3c4d5e6f"
PSU_CORPORATE_ID = "0b1c2d3e-4f50-4617-a829-3a4b5c6d7e8f"
NATIONAL_ID = "13039319955"
IBAN = "NO9386011117947"
EMAIL = "alice.example@example.com"
SIGNATURE_VALUE = "c2lnbmF0dXJlLXZhbHVlLXRoYXQtbXVzdC1ub3QtbGVhaw=="
SIGNATURE = (
    f'keyId="SN=1A2B,CA=CN=Test CA",algorithm="rsa-sha256",headers="digest date",signature="{SIGNATURE_VALUE}"'
)
SECRETS = (PSU_ID, PSU_CORPORATE_ID, NATIONAL_ID, IBAN, EMAIL, "alice.example%40example.com", SIGNATURE_VALUE)
PSU_HEADERS = {
    "PSU-ID": PSU_ID,
    "PSU-Corporate-ID": PSU_CORPORATE_ID,
    "X-PSU-IDENTITY": NATIONAL_ID,
    "Signature": SIGNATURE,
}
QUERY = f"?iban={IBAN}&email=alice.example%40example.com&fnr={NATIONAL_ID}"


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_the_scrubber_on_names_and_values():
    attributes = observability.scrub_attributes(
        {
            "http.request.header.psu_id": (PSU_ID,),
            "http.request.header.x_psu_identity": (NATIONAL_ID,),
            "http.request.header.signature": (SIGNATURE,),
            "http.request.header.tpp_signature_certificate": ("MIIB...",),
            "user.email": EMAIL,
            "url.full": f"https://bank.example/v1/accounts{QUERY}",
            "exception.message": f"PSU-ID: {PSU_ID} at {IBAN.lower()} {IBAN}",
            "db.statement": f"SELECT 1 WHERE iban = 'NO93 8601 1117 947' AND n = '{NATIONAL_ID[:6]} "
            f"{NATIONAL_ID[6:]}'",
            "http.status_code": 200,
            "http.route": "accounts/<int:pk>/",
            "messaging.message.id": "0b7c1d2e-aaaa-4bbb-8ccc-123456789012",
        }
    )
    text = json.dumps(attributes)
    assert not leaked(text) and "MIIB" not in text and "NO93 8601" not in text and "131093" not in text
    assert attributes["http.status_code"] == 200 and attributes["http.route"] == "accounts/<int:pk>/"
    assert attributes["messaging.message.id"] == "0b7c1d2e-aaaa-4bbb-8ccc-123456789012"  # ids that are no PSU's
    assert attributes["http.request.header.psu_id"] == observability.REDACTED


PERSON = "Kari Nordmann"
TPP_SESSION = "Wq8Vn3Lp5SessionOfTheTpp"
STATE = "St4teOfTheRedirectQx7Zk2"
CALLBACK = f"/bank/callback?state={STATE}&tpp-session-id={TPP_SESSION}&psu-id={PSU_ID}&context=PRIVATE"
PERSONAL = (PERSON, "Kari", "Nordmann", TPP_SESSION, STATE, PSU_ID, NATIONAL_ID)


def test_the_scrubber_removes_names_the_tpp_session_and_national_identity_numbers():
    """Span attributes and a Sentry event as the instrumentations and the SDK give them: a person's name (named
    fields, JSON bodies, a repr, the search box's q), the TPP-Session-ID (header, callback query, an encoded next=)
    and a national identity number (named, and bare in a message)."""
    attributes = observability.scrub_attributes(
        {
            "http.target": CALLBACK,
            "url.query": CALLBACK.split("?", 1)[1],
            "url.full": f"https://portal.example/auth/sign-in/?next={quote(CALLBACK, safe='')}",
            "http.url": "https://portal.example/accounts/1/?q=Kari+Nordmann&status=booked",
            "http.request.header.tpp_session_id": (TPP_SESSION,),
            "payment.creditor_name": PERSON,
            "http.request.body": json.dumps(
                {"creditorName": PERSON, "ultimateDebtor": PERSON, "remittanceInformationUnstructured": "rent"}
            ),
            "exception.message": f"PaymentInstruction(creditor_name='{PERSON}', amount=10) for {NATIONAL_ID}",
            "code.function": "callback",
        }
    )
    event = observability.sentry_before_send(
        {
            "request": {
                "url": "https://portal.example/bank/callback",
                "query_string": CALLBACK.split("?", 1)[1],
                "headers": {"Tpp-Session-Id": TPP_SESSION, "Referer": f"https://portal.example{CALLBACK}"},
            },
            "exception": {"values": [{"type": "ValueError", "value": f"ownerName: {PERSON}, fnr={NATIONAL_ID}"}]},
            "extra": {
                "creditorName": PERSON,
                "tpp_session_id": TPP_SESSION,
                "note": f"fødselsnummer {NATIONAL_ID}",
            },
            "server_name": "web-1",
        }
    )
    text = json.dumps(attributes) + json.dumps(event)
    assert not [value for value in PERSONAL if value in text], text
    # What is no one's stays: the path, the other parameters, the type, the host.
    assert "/bank/callback?state=" in attributes["http.target"] and "context=PRIVATE" in attributes["url.query"]
    assert "status=booked" in attributes["http.url"] and attributes["code.function"] == "callback"
    assert "rent" in attributes["http.request.body"]
    assert event["exception"]["values"][0]["type"] == "ValueError" and event["server_name"] == "web-1"


@pytest.fixture
def traced(monkeypatch):
    """Tracing switched on as OTEL_EXPORTER_OTLP_ENDPOINT would, exporting into memory; every header captured
    (the widest setting an operator could choose), so the scrubber is what keeps the secrets out."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST", ".*")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST", ".*")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SANITIZE_FIELDS", "")
    exported = InMemorySpanExporter()
    provider = observability.tracing_configure(
        service_name="tpp-portal-test", environment="test", exporter=exported, batch=False, set_global=False
    )
    raw = InMemorySpanExporter()  # the control: the same spans, not scrubbed
    provider.add_span_processor(SimpleSpanProcessor(raw))
    try:
        yield exported, raw
    finally:
        observability.tracing_stop()
        provider.shutdown()


def everything(spans) -> str:
    return "\n".join(span.to_json() for span in spans)


@pytest.mark.django_db
@pytest.mark.urls("tests.core.observability_urls")
def test_traces_of_django_requests_and_celery_hold_no_personal_data(traced):
    exported, raw = traced
    client = Client(raise_request_exception=False)
    headers = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in PSU_HEADERS.items()}
    assert client.get(f"/boom/{QUERY}", **headers).status_code == 500
    client.get(f"/healthz{QUERY}", **headers)

    with LocalBank() as bank:
        bank.add("GET", "/v1/accounts", Answer(200, {"accounts": []}))
        requests.get(f"{bank.base_url}/v1/accounts{QUERY}", headers=PSU_HEADERS, timeout=10)

    @celery_app.task(name="tests.observability.traced_task")
    def traced_task(address):
        return len(address)

    traced_task.apply(args=[EMAIL])

    spans = exported.get_finished_spans()
    kinds = {(span.kind, span.instrumentation_scope.name.rsplit(".", 1)[-1]) for span in spans}
    assert (SpanKind.SERVER, "django") in kinds
    assert (SpanKind.CLIENT, "requests") in kinds
    assert any(scope == "celery" for _, scope in kinds)
    assert any(event.name == "exception" for span in spans for event in span.events)  # the failing view

    assert leaked(everything(raw.get_finished_spans())), "the control saw no secret: the test would prove nothing"
    text = everything(spans)
    assert not leaked(text), f"exported spans hold {leaked(text)}"
    assert "[redacted]" in text


@pytest.mark.postgres
def test_traces_of_psycopg_hold_no_personal_data(traced):
    """The psycopg traces, on the PostgreSQL server of DATABASE_URL only (skipped without one: no test reaches a
    server the user did not name)."""
    exported, raw = traced
    server = server_url()
    try:
        with psycopg.connect(f"{server}/postgres", connect_timeout=5) as connection:
            connection.execute(f"SELECT %s::text, '{EMAIL}', '{IBAN}', '{NATIONAL_ID}'", (PSU_ID,)).fetchone()
    except psycopg.OperationalError as exc:
        pytest.fail(f"this test needs the PostgreSQL server at {server} for the psycopg traces: {exc}")

    spans = exported.get_finished_spans()
    assert any(span.instrumentation_scope.name.rsplit(".", 1)[-1] == "psycopg" for span in spans)
    assert leaked(everything(raw.get_finished_spans())), "the control saw no secret: the test would prove nothing"
    text = everything(spans)
    assert not leaked(text), f"exported spans hold {leaked(text)}"


def test_tracing_and_sentry_stay_off_without_their_variables():
    """A process started without OTEL_EXPORTER_OTLP_ENDPOINT and SENTRY_DSN has no tracer provider, no
    instrumentation and no Sentry client."""
    script = (
        "import django; django.setup()\n"
        "from opentelemetry import trace\n"
        "import sentry_sdk\n"
        "from core import observability\n"
        "assert type(trace.get_tracer_provider()).__name__ == 'ProxyTracerProvider', trace.get_tracer_provider()\n"
        "assert not any(i.is_instrumented_by_opentelemetry for i in observability.instrumentors())\n"
        "assert not sentry_sdk.get_client().is_active()\n"
        "print('off')\n"
    )
    environment = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OTEL_", "SENTRY_"))} | {
        "DJANGO_SETTINGS_MODULE": "tpp_portal.settings"
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "off", done.stderr


def test_tracing_and_sentry_are_switched_on_by_their_variables():
    script = (
        "import django; django.setup()\n"
        "from opentelemetry import trace\n"
        "import sentry_sdk\n"
        "from core import observability\n"
        "assert type(trace.get_tracer_provider()).__name__ == 'TracerProvider'\n"
        "assert all(i.is_instrumented_by_opentelemetry for i in observability.instrumentors())\n"
        "client = sentry_sdk.get_client()\n"
        "assert client.is_active() and client.options['data_collection']['user_info'] is False\n"
        "assert client.options['before_send'] is observability.sentry_before_send\n"
        "print('on')\n"
    )
    environment = dict(__import__("os").environ) | {
        "DJANGO_SETTINGS_MODULE": "tpp_portal.settings",
        # Loopback addresses where nothing listens: nothing is sent in this short run (and it could not leave).
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "SENTRY_DSN": "http://public@127.0.0.1:9/1",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "on", done.stderr


class CapturingTransport(Transport):
    """A Sentry transport that keeps the envelopes instead of sending them."""

    envelopes: list = []

    def capture_envelope(self, envelope):
        CapturingTransport.envelopes.append(envelope)


def sentry_payloads() -> str:
    texts = []
    for envelope in CapturingTransport.envelopes:
        for item in envelope.items:
            texts.append(item.payload.get_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


@pytest.fixture
def sentry():
    import sentry_sdk

    CapturingTransport.envelopes = []

    def start():
        observability.sentry_configure(
            dsn="https://public@sentry.invalid/1",
            environment="test",
            traces_sample_rate=1.0,
            transport=CapturingTransport,
        )

    yield start
    sentry_sdk.get_client().close()
    sentry_sdk.init()  # no DSN: inactive again


def send_errors():
    client = Client(raise_request_exception=False)
    headers = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in PSU_HEADERS.items()}
    assert client.get(f"/boom/{QUERY}", HTTP_COOKIE=f"sessionid=abc; email={EMAIL}", **headers).status_code == 500
    logging.getLogger("accounts.refresh").error(
        "refresh failed for psu_id=%s iban %s, customer %s",
        PSU_ID,
        IBAN,
        EMAIL,
        extra={"psu_corporate_id": PSU_CORPORATE_ID},
    )
    import sentry_sdk

    sentry_sdk.flush(timeout=5)


@pytest.mark.django_db
@pytest.mark.urls("tests.core.observability_urls")
def test_sentry_events_hold_no_personal_data(sentry):
    sentry()
    send_errors()
    text = sentry_payloads()
    assert '"ValueError"' in text and "refresh failed for" in text  # the error and the log line were reported
    assert '"transaction"' in text  # and the request's transaction (before_send_transaction)
    assert not leaked(text), f"Sentry events hold {leaked(text)}"


@pytest.mark.django_db
@pytest.mark.urls("tests.core.observability_urls")
def test_the_control_without_the_scrubber_does_leak(sentry, monkeypatch):
    """The same events with before_send doing nothing: the secrets are there, so the test above can fail."""
    monkeypatch.setattr(observability, "sentry_before_send", lambda event, hint=None: event)
    monkeypatch.setattr(observability, "sentry_before_breadcrumb", lambda crumb, hint=None: crumb)
    sentry()
    send_errors()
    assert leaked(sentry_payloads())
