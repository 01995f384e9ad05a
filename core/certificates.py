"""The certificates of the bank connection: how long each is still valid, and no bank call with an expired one.

Three certificates decide whether the portal can talk to the bank (four with a QWAC):

- the TPP's QSealC (``BANK_SIGNING_CERT``), which signs every request: expired, the bank answers every call with
  a 400 (CERTIFICATE_EXPIRED or a signature error);
- the bank's seal (``BANK_RESPONSE_CERT``), against which the bank's signed answers are verified;
- the QWAC (``BANK_TLS_CLIENT_CERT``), when the bank asks for a client certificate at the TLS layer;
- the bank's TLS certificate, which only a TLS handshake with ``BANK_BASE_URL`` shows (skipped for http).

The portal's own files are read whenever they are needed (memoised by path, size and modification time, so a
renewed file is seen at once without a restart). The bank's TLS certificate is read by ``certificates_check``
(a worker's start and the daily beat task) and its result kept in ``CertificateCheck``.

``refuse_expired()`` runs before every bank call (``core.bank``): with an expired QSealC, seal or QWAC it
raises ``CertificateExpiredError`` naming the certificate and its setting, and nothing is sent. An expired TLS
certificate of the bank needs no such guard: the client's TLS handshake refuses it by itself.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from django.conf import settings
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from core import metrics
from core.models import CertificateCheck
from xs2a.errors import TransportError

logger = logging.getLogger(__name__)

#: name -> (label, the setting that names its file); in the order staff see them.
FILE_CERTIFICATES = {
    "qsealc": ("TPP's QSealC (signs every request)", "BANK_SIGNING_CERT"),
    "bank_seal": ("Bank's seal (verifies the bank's answers)", "BANK_RESPONSE_CERT"),
    "qwac": ("TPP's QWAC (TLS client certificate)", "BANK_TLS_CLIENT_CERT"),
}
BANK_TLS = "bank_tls"
BANK_TLS_LABEL = "Bank's TLS certificate"

#: Levels, most urgent first: what the dashboard shows and the metric's `level` says.
EXPIRED, CRITICAL, WARNING, NOTICE, OK, UNKNOWN = "expired", "7 days", "14 days", "30 days", "ok", "unknown"


class CertificateExpiredError(TransportError):
    """A certificate of the bank connection has expired: the request was not sent (nothing reached the bank).

    A TransportError, so every caller already treats it as "not delivered": a payment goes back to the user
    unsent, a refresh is reported as failed."""


@dataclass(frozen=True)
class CertificateStatus:
    name: str
    label: str
    source: str  # the file, or host:port of the handshake
    subject: str = ""
    not_after: datetime | None = None  # aware UTC
    checked_at: datetime | None = None
    error: str = ""

    def days_left(self, now: datetime) -> float | None:
        if self.not_after is None:
            return None
        return (self.not_after - now).total_seconds() / 86400

    def level(self, now: datetime) -> str:
        """EXPIRED, then CRITICAL (7 days or fewer left), WARNING (14), NOTICE (30), OK; UNKNOWN when unread."""
        days = self.days_left(now)
        if days is None:
            return UNKNOWN
        if days <= 0:
            return EXPIRED
        critical, warning, notice = sorted(settings.CERTIFICATE_WARNING_DAYS)
        if days <= critical:
            return CRITICAL
        if days <= warning:
            return WARNING
        if days <= notice:
            return NOTICE
        return OK


def _subject(certificate: x509.Certificate) -> str:
    return certificate.subject.rfc4514_string()[:500]


@functools.lru_cache(maxsize=16)
def _read_file(path: str, size: int, mtime_ns: int) -> tuple[str, datetime]:
    """(subject, not_after) of the first certificate of a PEM file; cached while the file is unchanged."""
    certificate = x509.load_pem_x509_certificate(Path(path).read_bytes())
    return _subject(certificate), certificate.not_valid_after_utc


def file_certificate(name: str) -> CertificateStatus | None:
    """The status of one of FILE_CERTIFICATES; None when its setting is unset (the certificate is not used)."""
    label, setting = FILE_CERTIFICATES[name]
    path = getattr(settings, setting, None)
    if not path:
        return None
    now = timezone.now()
    try:
        stat = os.stat(path)
        subject, not_after = _read_file(str(path), stat.st_size, stat.st_mtime_ns)
    except (OSError, ValueError) as exc:
        return CertificateStatus(name, label, str(path), checked_at=now, error=_short(exc))
    return CertificateStatus(name, label, str(path), subject, not_after, checked_at=now)


def file_certificates() -> list[CertificateStatus]:
    return [status for name in FILE_CERTIFICATES if (status := file_certificate(name)) is not None]


def files_signature() -> tuple:
    """(path, size, modification time) of every credential file of the bank connection: what the shared bank
    client is cached by, so that a file renewed in place is used from the next call on."""
    found = []
    for setting in (
        "BANK_SIGNING_CERT",
        "BANK_SIGNING_KEY",
        "BANK_RESPONSE_CERT",
        "BANK_TLS_CLIENT_CERT",
        "BANK_TLS_CLIENT_KEY",
        "BANK_CA_BUNDLE",
    ):
        path = getattr(settings, setting, None)
        if not path:
            continue
        try:
            stat = os.stat(path)
        except OSError:
            found.append((str(path), None, None))
        else:
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def bank_tls_address() -> tuple[str, int] | None:
    """(host, port) of BANK_BASE_URL when it is https; None for http (no certificate to check)."""
    parts = urlsplit(settings.BANK_BASE_URL)
    if parts.scheme != "https" or not parts.hostname:
        return None
    return parts.hostname, parts.port or 443


def fetch_tls_certificate(host: str, port: int, *, timeout: float) -> x509.Certificate:
    """The certificate the server presents in a TLS handshake, read whatever its validity.

    Trust and host name are the client's business on every call; here only the dates are read, so the context
    verifies nothing (an expired certificate must still be readable to say since when it expired). The QWAC is
    presented when one is configured, since a bank that asks for it may end the handshake without it.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # reading the dates only (see above); nothing is sent over it
    if settings.BANK_TLS_CLIENT_CERT and settings.BANK_TLS_CLIENT_KEY:
        context.load_cert_chain(str(settings.BANK_TLS_CLIENT_CERT), str(settings.BANK_TLS_CLIENT_KEY))
    with socket.create_connection((host, port), timeout=timeout) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    if not der:
        raise ssl.SSLError("the server sent no certificate")
    return x509.load_der_x509_certificate(der)


def bank_tls_certificate() -> CertificateStatus | None:
    """The last recorded check of the bank's TLS certificate (None for an http bank)."""
    address = bank_tls_address()
    if address is None:
        return None
    source = f"{address[0]}:{address[1]}"
    row = CertificateCheck.objects.filter(name=BANK_TLS).first()
    if row is None or row.source != source:
        return CertificateStatus(BANK_TLS, BANK_TLS_LABEL, source, error="not checked yet")
    return CertificateStatus(
        BANK_TLS, BANK_TLS_LABEL, source, row.subject, row.not_after, row.checked_at, row.error
    )


def certificates_status() -> list[CertificateStatus]:
    """Every certificate of the bank connection as known now: files read, the TLS one as last checked."""
    statuses = file_certificates()
    if (tls := bank_tls_certificate()) is not None:
        statuses.append(tls)
    return statuses


def certificates_check() -> list[CertificateStatus]:
    """Start-up and daily: read the bank's TLS certificate by a handshake and record it; log every certificate
    within the warning days (warning) or expired (error). Returns every status."""
    address = bank_tls_address()
    if address is not None:
        host, port = address
        now = timezone.now()
        fields = {"source": f"{host}:{port}", "checked_at": now, "subject": "", "not_after": None, "error": ""}
        try:
            certificate = fetch_tls_certificate(host, port, timeout=settings.BANK_TIMEOUT)
        except (OSError, ValueError) as exc:  # refused, timed out, TLS failure, unreadable certificate
            fields["error"] = _short(exc)
        else:
            fields.update(subject=_subject(certificate), not_after=certificate.not_valid_after_utc)
        CertificateCheck.objects.update_or_create(name=BANK_TLS, defaults=fields)
    statuses = certificates_status()
    now = timezone.now()
    for status in statuses:
        level = status.level(now)
        if status.error:
            logger.error("certificate %s (%s) could not be read: %s", status.name, status.source, status.error)
        elif level == EXPIRED:
            logger.error(
                "certificate %s (%s) EXPIRED on %s: bank calls stop until it is renewed",
                status.name,
                status.source,
                status.not_after.isoformat() if status.not_after else "?",
            )
        elif level != OK:
            logger.warning(
                "certificate %s (%s) expires on %s, in %.1f days",
                status.name,
                status.source,
                status.not_after.isoformat() if status.not_after else "?",
                status.days_left(now) or 0,
            )
    return statuses


def refuse_expired(*, now: datetime | None = None) -> None:
    """Raise CertificateExpiredError when a certificate the portal sends or relies on has expired.

    Called before every bank call: a stat of each configured file, the parsing cached while the file is
    unchanged. An unreadable file is left to the client, which reports it when it is built."""
    now = now or datetime.now(UTC)
    for status in file_certificates():
        if status.not_after is not None and status.not_after <= now:
            metrics.bank_call_refused(status.name)
            setting = FILE_CERTIFICATES[status.name][1]
            raise CertificateExpiredError(
                f"the {status.label.split(' (')[0]} ({setting}, {status.subject}) expired on "
                f"{status.not_after:%Y-%m-%d %H:%M} UTC: no request is sent to the bank until it is renewed "
                f"(docs/operations.md, Certificates)"
            )


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def gauges() -> Iterator[GaugeMetricFamily]:
    """The metrics of each certificate of the bank connection (a state source of core.metrics)."""
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
    for status in certificates_status():
        readable.add_metric([status.name], 0 if status.error or status.not_after is None else 1)
        if status.not_after is not None:
            days.add_metric([status.name], round(status.days_left(now) or 0.0, 3))
            until.add_metric([status.name], status.not_after.timestamp())
    yield days
    yield until
    yield readable
