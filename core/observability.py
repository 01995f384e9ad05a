"""Traces (OpenTelemetry) and error reports (Sentry), switched on by the environment only, scrubbed on the way out.

- ``OTEL_EXPORTER_OTLP_ENDPOINT`` set: Django requests, outgoing requests (the bank, Norges Bank), Celery tasks
  and psycopg queries are traced and exported over OTLP (``OTEL_EXPORTER_OTLP_PROTOCOL``, headers and the like
  from the SDK's own ``OTEL_*`` variables). Unset: no tracer provider, no instrumentation, nothing patched.
- ``SENTRY_DSN`` set: unhandled exceptions and ERROR log lines of web, worker and beat go to Sentry, without
  request bodies, local variables or the user's details (``send_default_pii`` off).

Both pass through one scrubber before anything is exported: an attribute, header or field whose name says PSU
identifier (PSU-ID, PSU-Corporate-ID, X-PSU-IDENTITY, PSU-IP-Address ...), TPP-Session-ID, a person's name
(creditorName, ownerName, first_name ...), signature, certificate, password, token, cookie or e-mail loses its
value; every other text loses IBANs, e-mail addresses, 11-digit numbers (Norwegian national identity numbers, and
account numbers with them), PEM blocks, ``name=value`` secrets and names, and the values of the query parameters
state, q, tpp-session-id, psu-id and the like, also in an encoded ``next=`` (the log redaction of
``core.logging``). For traces this is ``ScrubbingSpanExporter``, which hands the
exporter scrubbed copies of the finished spans; for Sentry, ``before_send`` and ``before_send_transaction``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from core.logging import redact

logger = logging.getLogger(__name__)

REDACTED = "[redacted]"

# Names (of span attributes, headers, event fields), compared in lower case with '-', '.' and ' ' as '_'.
_SECRET_NAME = re.compile(
    r"psu_?id|psu_?corporate|psu_?identity|x_psu|psu_ip|psu_geo|psu_device|psu_user_agent"
    r"|signature|certificate|authorization|cookie|password|passphrase|secret|token|api_?key|csrf|sessionid"
    r"|national_?id|identity_?number|fodselsnummer|personnummer|ssn|e_?mail|iban|enduser|tpp_?session"
    # people's names: creditorName, creditor_name, ultimateDebtor, ownerName, first_name ...
    r"|(?:first|last|full|given|family|middle|sur|creditor|debtor|counterparty|owner|holder|customer|payee|payer"
    r"|beneficiary|person|display)_?name|ultimate_?(?:creditor|debtor)|account_?holder"
)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+(?:@|%40)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# 11 digits, optionally as 6+5 (a Norwegian national identity or D-number, or an 11-digit account number).
_ELEVEN_DIGITS = re.compile(r"(?<![\d.])\d{6}[ .]?\d{5}(?![\d])")


def secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(re.sub(r"[-. ]", "_", name.lower())))


def scrub_text(text: str) -> str:
    text = redact(text)
    text = _EMAIL.sub(REDACTED, text)
    text = _IBAN.sub(REDACTED, text)
    return _ELEVEN_DIGITS.sub(REDACTED, text)


def scrub_value(value: Any) -> Any:
    """Strings scrubbed, sequences item by item, mappings by name and value; numbers and booleans as they are."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, bytes):
        return scrub_text(value.decode("utf-8", "replace"))
    if isinstance(value, dict):
        return {key: (REDACTED if secret_name(str(key)) else scrub_value(item)) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_value(item) for item in value)
    return value


def scrub_attributes(attributes: Any) -> dict[str, Any]:
    items = dict(attributes or {}).items()
    return {key: (REDACTED if secret_name(key) else scrub_value(value)) for key, value in items}


# --- traces -------------------------------------------------------------------------------------------------


def _scrubbing_exporter_class():
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import Status

    class ScrubbingSpanExporter(SpanExporter):
        """Exports scrubbed copies of the finished spans (name, attributes, events, links, status) through
        ``inner``: what leaves the process never holds a PSU identifier or personal data."""

        def __init__(self, inner: SpanExporter) -> None:
            self.inner = inner

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return self.inner.export([self.scrubbed(span) for span in spans])

        @staticmethod
        def scrubbed(span: ReadableSpan) -> ReadableSpan:
            events = [
                Event(event.name, scrub_attributes(event.attributes), timestamp=event.timestamp)
                for event in span.events
            ]
            links = [type(link)(link.context, scrub_attributes(link.attributes)) for link in span.links]
            status = span.status
            if status.description:
                status = Status(status.status_code, scrub_text(status.description))
            return ReadableSpan(
                name=scrub_text(span.name),
                context=span.context,
                parent=span.parent,
                resource=span.resource,
                attributes=scrub_attributes(span.attributes),
                events=events,
                links=links,
                kind=span.kind,
                status=status,
                start_time=span.start_time,
                end_time=span.end_time,
                instrumentation_scope=span.instrumentation_scope,
            )

        def shutdown(self) -> None:
            self.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return self.inner.force_flush(timeout_millis)

    return ScrubbingSpanExporter


def scrubbing_exporter(inner: Any) -> Any:
    return _scrubbing_exporter_class()(inner)


def _otlp_exporter(protocol: str) -> Any:
    # The exporters read OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT ...) themselves.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter()


def instrumentors() -> list[Any]:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.requests import RequestsInstrumentor

    return [DjangoInstrumentor(), RequestsInstrumentor(), CeleryInstrumentor(), PsycopgInstrumentor()]


def tracing_configure(
    *, service_name: str, environment: str, exporter: Any, batch: bool = True, set_global: bool = True
) -> Any:
    """A tracer provider exporting scrubbed spans through ``exporter``, and the four instrumentations on it.
    Returns the provider (tests pass an in-memory exporter, ``batch=False`` and ``set_global=False``)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name, "deployment.environment.name": environment})
    )
    processor = BatchSpanProcessor if batch else SimpleSpanProcessor
    provider.add_span_processor(processor(scrubbing_exporter(exporter)))
    if set_global:
        trace.set_tracer_provider(provider)
    for instrumentor in instrumentors():
        if instrumentor.is_instrumented_by_opentelemetry:
            continue
        options: dict[str, Any] = {"tracer_provider": provider}
        if type(instrumentor).__name__ == "PsycopgInstrumentor":
            options.update(enable_commenter=False, capture_parameters=False)
        instrumentor.instrument(**options)
    return provider


def tracing_stop() -> None:
    for instrumentor in instrumentors():
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()


# --- error reports ------------------------------------------------------------------------------------------


def sentry_before_send(event: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sentry's before_send and before_send_transaction: the whole event scrubbed (names and values)."""
    return scrub_value(event)


def sentry_before_breadcrumb(crumb: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    return scrub_value(crumb)


def sentry_configure(*, dsn: str, environment: str, traces_sample_rate: float, transport: Any = None) -> None:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    options: dict[str, Any] = {}
    if transport is not None:
        options["transport"] = transport
    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        # What the integrations collect at all: no user, cookies, request bodies (forms carry identity and account
        # numbers), frame variables (they may hold a PSU identifier) or query data; headers and query parameters
        # are collected, and scrubbed by before_send like everything else.
        data_collection={
            "user_info": False,
            "cookies": {"mode": "off"},
            "http_bodies": [],
            "stack_frame_variables": False,
            "database_query_data": False,
        },
        traces_sample_rate=traces_sample_rate,
        before_send=sentry_before_send,
        before_send_transaction=sentry_before_send,
        before_breadcrumb=sentry_before_breadcrumb,
        **options,
    )


_configured = False


def configure() -> None:
    """From the settings, once per process (the portal app's ready()): tracing when OTEL_EXPORTER_OTLP_ENDPOINT
    is set, Sentry when SENTRY_DSN is set, else nothing at all."""
    global _configured
    if _configured:
        return
    _configured = True
    from django.conf import settings

    if settings.OTEL_EXPORTER_OTLP_ENDPOINT:
        tracing_configure(
            service_name=settings.OTEL_SERVICE_NAME,
            environment=settings.DJANGO_ENV,
            exporter=_otlp_exporter(settings.OTEL_EXPORTER_OTLP_PROTOCOL),
        )
        logger.info("traces exported over OTLP (%s)", settings.OTEL_EXPORTER_OTLP_PROTOCOL)
    if settings.SENTRY_DSN:
        sentry_configure(
            dsn=settings.SENTRY_DSN,
            environment=settings.SENTRY_ENVIRONMENT,
            traces_sample_rate=settings.SENTRY_TRACES_SAMPLE_RATE,
        )
        logger.info("errors reported to Sentry")
