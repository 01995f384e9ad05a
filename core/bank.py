"""The portal's bank client, built from settings, and the audit sink that stores one BankCall per attempt.

Every client of the portal is built here (``build_bank_client``). Portal code gets the shared one with
``bank_client()`` and says what a call is about with::

    with bank_audit_context(user=request.user, obj=payment):
        bank_client().payments.initiate(...)

Never call the bank inside ``transaction.atomic``: the audit row is written in its own autocommit statement,
and a network call must not hold a database transaction open.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured

from core import certificates, metrics
from core.models import BankCall
from xs2a.audit import AuditRecord
from xs2a.client import ClientConfig, RetryPolicy, Xs2aClient
from xs2a.credentials import CredentialError, load_certificate, load_private_key

log = logging.getLogger(__name__)

#: The path of the portal that the bank redirects the PSU back to after SCA (TPP-Redirect-URI).
CALLBACK_PATH = "/bank/callback"
#: The query parameter of an SCA's own TPP-Redirect-URI that names its state (connections.ScaState.token).
CALLBACK_STATE = "state"


def callback_uri(*, state: str) -> str:
    """The TPP-Redirect-URI of one SCA: the callback with that SCA's state in its query. The bank sends the PSU
    back to it with its own parameters added (spec section 6), so the callback learns which redirect it was."""
    return settings.PORTAL_BASE_URL.rstrip("/") + CALLBACK_PATH + "?" + urlencode({CALLBACK_STATE: state})


@dataclass(frozen=True)
class AuditContext:
    user: Any = None
    obj: Any = None


_audit_context: ContextVar[AuditContext] = ContextVar("bank_audit_context", default=AuditContext())  # noqa: B039


@contextlib.contextmanager
def bank_audit_context(*, user: Any = None, obj: Any = None) -> Iterator[None]:
    """Bank calls made inside are recorded as made for ``user`` and concerning ``obj`` (any saved model)."""
    token = _audit_context.set(AuditContext(user=user, obj=obj))
    try:
        yield
    finally:
        _audit_context.reset(token)


#: Inside ``bank_audit_deferred()``: the audit records kept back (with their context) until flushed.
_deferred_calls: ContextVar[list[tuple[AuditRecord, AuditContext]] | None] = ContextVar(
    "bank_audit_deferred", default=None
)


class DeferredAudit:
    """The audit rows of the bank calls kept back by :func:`bank_audit_deferred`."""

    def __init__(self) -> None:
        self.pending: list[tuple[AuditRecord, AuditContext]] = []

    def __call__(self) -> None:
        """Write the kept-back rows, in one INSERT (``bulk_create``)."""
        taken = list(self.pending)
        self.pending.clear()
        BankCall.objects.bulk_create(_bank_call(record, context) for record, context in taken)


@contextlib.contextmanager
def bank_audit_deferred() -> Iterator[DeferredAudit]:
    """Bank calls made inside are audited by the ``flush()`` this yields: call it inside the transaction that
    stores the bank's answer, so that the BankCall rows are committed with it (no commit of their own). Rows
    still kept back when the block ends (an exception, an early return) are written then."""
    flush = DeferredAudit()
    token = _deferred_calls.set(flush.pending)
    try:
        yield flush
    finally:
        _deferred_calls.reset(token)
        if flush.pending:
            flush()


def _bank_call(record: AuditRecord, context: AuditContext):
    user = context.user if getattr(context.user, "is_authenticated", False) else None
    obj = context.obj
    return BankCall(
        started_at=record.started_at,
        method=record.method[:8],
        path_template=record.path_template[:200],
        request_id=record.request_id[:100],
        attempt=record.attempt,
        status=record.status,
        duration_ms=max(0, round(record.duration_ms)),
        tpp_message_codes=list(record.tpp_message_codes),
        tpp_message_texts=list(record.tpp_message_texts),
        psu_present=record.psu_present,
        bytes_sent=record.bytes_sent,
        bytes_received=record.bytes_received,
        error=record.error or "",
        refusal_reason=record.refusal_reason[:500],
        will_retry=record.will_retry,
        user=user,
        content_type=ContentType.objects.get_for_model(obj) if obj is not None and obj.pk is not None else None,
        object_id=str(obj.pk) if obj is not None and obj.pk is not None else "",
    )


def record_bank_call(record: AuditRecord) -> None:
    """The client's audit hook: one BankCall row per attempt (kept back inside ``bank_audit_deferred()``), and
    the attempt counted in the metrics."""
    pending = _deferred_calls.get()
    if pending is not None:
        pending.append((record, _audit_context.get()))
    else:
        _bank_call(record, _audit_context.get()).save()
    metrics.observe_bank_call(record)


def client_config() -> ClientConfig:
    """The ClientConfig of the settings (BANK_*); a bad file or passphrase raises ImproperlyConfigured, an
    expired certificate CertificateExpiredError."""
    certificates.refuse_expired()
    try:
        key = load_private_key(settings.BANK_SIGNING_KEY, settings.BANK_SIGNING_KEY_PASSPHRASE)
        certificate = load_certificate(settings.BANK_SIGNING_CERT)
        response_certificate = (
            load_certificate(settings.BANK_RESPONSE_CERT) if settings.BANK_RESPONSE_CERT else None
        )
    except CredentialError as exc:
        raise ImproperlyConfigured(f"bank signing credentials: {exc}") from None

    def optional(path: Any) -> str | None:
        return str(path) if path else None

    try:
        return ClientConfig(
            base_url=settings.BANK_BASE_URL,
            signing_key=key,
            signing_certificate=certificate,
            redirect_uri=settings.PORTAL_BASE_URL.rstrip("/") + CALLBACK_PATH,
            ca_bundle=optional(settings.BANK_CA_BUNDLE),
            tls_client_cert=optional(settings.BANK_TLS_CLIENT_CERT),
            tls_client_key=optional(settings.BANK_TLS_CLIENT_KEY),
            response_certificate=response_certificate,
            response_max_age=settings.BANK_RESPONSE_MAX_AGE,
            timeout=settings.BANK_TIMEOUT,
            max_response_bytes=settings.BANK_MAX_RESPONSE_BYTES,
            accept_fix=tuple(settings.BANK_ACCEPT_FIX),
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"bank client: {exc}") from None


@dataclass(frozen=True)
class _TestBank:
    adapter: requests.adapters.BaseAdapter
    sleep: Any


#: Tests only: the stand-in for the bank that every client built here sends through (see ``use_test_bank``).
#: No setting and no environment variable reaches it; only test code sets it.
_test_bank: _TestBank | None = None


def use_test_bank(adapter: requests.adapters.BaseAdapter | None, *, sleep: Any = None) -> None:
    """Tests only (tests/conftest.py's ``override_bank``): every client built from now on sends through
    ``adapter`` (a requests transport adapter answering in-process, ``Xs2aClient(http_adapter=...)``) instead of
    the network, and waits between attempts with ``sleep`` (a test's clock, not real time); None ends it. The
    shared client is dropped either way, so that the next ``bank_client()`` is built with it. Everything else
    (settings, signing, retries, audit, errors) runs as in production. A production process refuses it."""
    global _test_bank
    if adapter is not None and settings.PRODUCTION:
        raise ImproperlyConfigured("a test stand-in for the bank in a production process")
    _test_bank = None if adapter is None else _TestBank(adapter, sleep)
    bank_client.cache_clear()  # type: ignore[attr-defined]
    unattended_bank_client.cache_clear()


def build_bank_client(*, retry: RetryPolicy | None = None) -> Xs2aClient:
    """A new client from the settings, auditing into BankCall; ``retry`` instead of the default policy (an
    unattended read sends once). The one place that builds the portal's bank clients."""
    config = client_config() if retry is None else dataclasses.replace(client_config(), retry=retry)
    if _test_bank is None:
        return Xs2aClient(config, audit_hook=record_bank_call)
    extra = {"sleep": _test_bank.sleep} if _test_bank.sleep is not None else {}
    return Xs2aClient(config, audit_hook=record_bank_call, http_adapter=_test_bank.adapter, **extra)


def bank_client() -> Xs2aClient:
    """The process-wide client (one pooled session per process). Tests that change settings call
    ``bank_client.cache_clear()``. Refuses (CertificateExpiredError) once a certificate has expired; a renewed
    certificate or key file (a new modification time) gets a new client without a restart."""
    certificates.refuse_expired()
    return _shared_bank_client(certificates.files_signature())


@functools.lru_cache(maxsize=1)
def _shared_bank_client(files: tuple) -> Xs2aClient:
    return build_bank_client()


bank_client.cache_clear = _shared_bank_client.cache_clear  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=1)
def unattended_bank_client() -> Xs2aClient:
    """The client of unattended reads (accounts.refresh), which never repeats a request by itself: each
    unattended request was reserved in the ledger, and a retry the bank also counts (say after a lost answer)
    would be a call nobody reserved."""
    return build_bank_client(retry=RetryPolicy(max_attempts=1))
