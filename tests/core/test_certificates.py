"""Certificates of the bank connection: days left and warning levels (30, 14, 7 days), the bank's TLS certificate
read by a handshake, the dashboard and the metric, and an expired certificate stopping bank calls before anything
is sent."""

from __future__ import annotations

import datetime as dt
import logging
import os
import ssl

import pytest
from django.core import checks
from django.urls import reverse
from django.utils import timezone

from core import bank as portal_bank
from core import certificates, metrics, signals
from core.models import CertificateCheck
from core.tasks import check_certificates
from devtools import pki
from tests.bankfake import Answer
from tests.xs2a.server import LocalBank
from tpp_portal.celery import app as celery_app

pytestmark = pytest.mark.django_db


def qseal(days_left: float, ca=None) -> pki.Issued:
    """A QSealC that expires ``days_left`` days from now (negative: already expired)."""
    ca = ca or pki.issue_ca()
    start = timezone.now() - dt.timedelta(days=400)
    return pki.issue_qseal(ca, not_before=start, days=400 + days_left)


def write(path, issued: pki.Issued) -> None:
    path.write_bytes(issued.cert_pem())
    # A new modification time even within the file system's time resolution: the reader caches by it.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def status(days_left: float) -> certificates.CertificateStatus:
    return certificates.CertificateStatus(
        "qsealc", "QSealC", "f.pem", not_after=timezone.now() + dt.timedelta(days=days_left)
    )


@pytest.mark.parametrize(
    ("days_left", "level"),
    [
        (90, certificates.OK),
        (30.5, certificates.OK),
        (29.9, certificates.NOTICE),
        (14.1, certificates.NOTICE),
        (13.9, certificates.WARNING),
        (7.1, certificates.WARNING),
        (6.9, certificates.CRITICAL),
        (0.01, certificates.CRITICAL),
        (-0.01, certificates.EXPIRED),
        (-30, certificates.EXPIRED),
    ],
)
def test_levels_at_30_14_and_7_days_and_expired(days_left, level):
    assert status(days_left).level(timezone.now()) == level


def test_the_file_certificates_are_read_live_and_a_renewed_file_is_seen_at_once(settings, tmp_path):
    path = tmp_path / "qseal.pem"
    write(path, qseal(20))
    settings.BANK_SIGNING_CERT = path
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_TLS_CLIENT_CERT = None
    first = certificates.file_certificate("qsealc")
    assert first.level(timezone.now()) == certificates.NOTICE
    assert 19 < first.days_left(timezone.now()) < 21
    assert "Fjordpay" in first.subject or first.subject  # the subject as RFC 4514
    write(path, qseal(200))
    assert certificates.file_certificate("qsealc").level(timezone.now()) == certificates.OK
    assert [s.name for s in certificates.file_certificates()] == ["qsealc"]  # unset ones are not listed


def test_an_unreadable_certificate_file_is_reported_not_raised(settings, tmp_path):
    path = tmp_path / "broken.pem"
    path.write_text("not a certificate")
    settings.BANK_RESPONSE_CERT = path
    found = certificates.file_certificate("bank_seal")
    assert found.error.startswith("ValueError") and found.level(timezone.now()) == certificates.UNKNOWN


# --- an expired certificate stops bank calls -----------------------------------------------------------------


def test_an_expired_qsealc_refuses_every_bank_call_before_anything_is_sent(
    own_seal_bank_settings, fake_bank, settings
):
    fake_bank.add("GET", "/v1/agreements", Answer(200, {"agreements": []}))
    portal_bank.bank_client().request("GET", "/v1/agreements")  # the QSealC still valid: sent
    assert len(fake_bank.received) == 1

    write(settings.BANK_SIGNING_CERT, qseal(-2))  # the file as it is on the day after it expired
    refused = metrics.BANK_CALLS_REFUSED.labels("qsealc")
    before = refused._value.get()
    for _ in range(3):
        with pytest.raises(certificates.CertificateExpiredError) as raised:
            portal_bank.bank_client().request("GET", "/v1/agreements")
    assert len(fake_bank.received) == 1  # no stream of 400s: nothing reached the bank
    message = str(raised.value)
    assert "QSealC" in message and "BANK_SIGNING_CERT" in message and "expired on" in message
    assert "docs/operations.md" in message
    assert refused._value.get() == before + 3
    # A TransportError: every caller already treats it as "not delivered" (a payment goes back unsent).
    from xs2a.errors import TransportError

    assert isinstance(raised.value, TransportError)
    with pytest.raises(certificates.CertificateExpiredError):
        portal_bank.client_config()  # a client built for one refresh (core.bank.unattended_bank_client) too

    write(settings.BANK_SIGNING_CERT, own_seal_bank_settings)  # renewed in place (its key is the one configured)
    portal_bank.bank_client().request("GET", "/v1/agreements")  # calls go again, without a restart
    assert len(fake_bank.received) == 2


def test_a_certificate_renewed_in_place_is_sent_from_the_next_call_on(own_seal_bank_settings, fake_bank, settings):
    """The shared client is rebuilt when a credential file changes: the renewed QSealC is what the bank gets."""
    import base64

    from cryptography import x509

    fake_bank.add("GET", "/v1/agreements", Answer(200, {"agreements": []}))

    def sent_certificate() -> x509.Certificate:
        header = fake_bank.received[-1].headers["tpp-signature-certificate"]
        return x509.load_der_x509_certificate(base64.b64decode(header))

    portal_bank.bank_client().request("GET", "/v1/agreements")
    first = sent_certificate()
    ca = pki.issue_ca()
    renewed = pki.issue_qseal(ca, key=own_seal_bank_settings.key, days=365)
    write(settings.BANK_SIGNING_CERT, renewed)
    portal_bank.bank_client().request("GET", "/v1/agreements")
    assert sent_certificate().serial_number == renewed.certificate.serial_number != first.serial_number
    assert len(fake_bank.received) == 2


def test_a_payment_sent_with_an_expired_qsealc_goes_back_to_the_user_unsent(
    own_seal_bank_settings, fake_bank, settings, alice
):
    from payments.models import PaymentEvent, PaymentState
    from tests.bank_factories import BankConnectionFactory
    from tests.payments.test_initiation import _draft, _submit

    draft = _draft(alice, BankConnectionFactory(user=alice))
    write(settings.BANK_SIGNING_CERT, qseal(-1))
    outcome = _submit(draft, alice)
    assert outcome.payment.state == PaymentState.DRAFT and outcome.message  # may be sent again once renewed
    assert fake_bank.received == []
    assert PaymentEvent.objects.filter(payment=draft).exists()  # the timeline says it was not sent


def test_an_expired_bank_seal_refuses_bank_calls_too(own_seal_bank_settings, fake_bank, settings, tmp_path):
    settings.BANK_RESPONSE_CERT = tmp_path / "seal.pem"
    write(settings.BANK_RESPONSE_CERT, qseal(-1))
    portal_bank.bank_client.cache_clear()
    with pytest.raises(certificates.CertificateExpiredError, match="BANK_RESPONSE_CERT"):
        portal_bank.bank_client()
    assert fake_bank.received == []


def test_no_background_refresh_is_planned_while_a_certificate_has_expired(settings, tmp_path, caplog, monkeypatch):
    from accounts import tasks

    planned = []
    monkeypatch.setattr(tasks, "refresh_plan", lambda: planned.append(1) or 5)
    settings.BANK_SIGNING_CERT = tmp_path / "qseal.pem"
    write(settings.BANK_SIGNING_CERT, qseal(-1))
    with caplog.at_level(logging.ERROR):
        assert tasks.plan_refreshes() == 0
    assert planned == [] and "no background refresh planned" in caplog.text
    write(settings.BANK_SIGNING_CERT, qseal(100))
    assert tasks.plan_refreshes() == 5


# --- the bank's TLS certificate -----------------------------------------------------------------------------


@pytest.fixture
def tls_bank(tmp_path):
    """A bank on https://127.0.0.1 whose TLS certificate expires in 10 days."""
    ca = pki.issue_ca()
    server = pki.issue_tls_server(ca, days=10)
    (tmp_path / "tls.pem").write_bytes(server.cert_pem())
    (tmp_path / "tls.key").write_bytes(server.key_pem())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.pem", tmp_path / "tls.key")
    with LocalBank(ssl_context=context) as bank:
        yield bank, server


def test_the_daily_check_reads_the_banks_tls_certificate_by_a_handshake(settings, tls_bank, caplog):
    bank, server = tls_bank
    settings.BANK_BASE_URL = bank.base_url
    with caplog.at_level(logging.WARNING):
        assert check_certificates() >= 2  # the QSealC file and the TLS certificate
    row = CertificateCheck.objects.get(name=certificates.BANK_TLS)
    assert row.not_after == server.certificate.not_valid_after_utc
    assert row.source == f"127.0.0.1:{bank.port}" and row.error == "" and row.subject == "CN=localhost"
    tls = certificates.bank_tls_certificate()
    assert tls.level(timezone.now()) == certificates.WARNING  # 10 days left
    assert "certificate bank_tls" in caplog.text and "expires on" in caplog.text
    assert bank.received == []  # a handshake only: no request


def test_an_unreachable_bank_is_recorded_as_not_read(settings):
    settings.BANK_BASE_URL = "https://127.0.0.1:9"  # discard port: nothing listens
    settings.BANK_TIMEOUT = 2.0
    check_certificates()
    row = CertificateCheck.objects.get(name=certificates.BANK_TLS)
    assert row.not_after is None and row.error
    assert certificates.bank_tls_certificate().level(timezone.now()) == certificates.UNKNOWN


def test_an_http_bank_has_no_tls_certificate_to_check(settings):
    settings.BANK_BASE_URL = "http://127.0.0.1:8001"
    check_certificates()
    assert not CertificateCheck.objects.exists()
    assert [s.name for s in certificates.certificates_status()] == [
        s.name for s in certificates.file_certificates()
    ]


def test_a_worker_start_checks_the_certificates(monkeypatch):
    sent = []
    monkeypatch.setattr(celery_app, "send_task", lambda name, **kw: sent.append(name))
    signals._check_certificates_at_start(sender=None)
    assert sent == ["tpp_portal.check_certificates"]


def test_the_check_runs_daily_from_the_beat_schedule(settings):
    entries = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "tpp_portal.check_certificates"]
    assert len(entries) == 1
    assert entries[0]["schedule"].is_due(timezone.now() - dt.timedelta(days=1))[0]


# --- staff see it: dashboard, metric, system check ----------------------------------------------------------


def test_the_dashboard_warns_staff_14_days_before_and_lists_every_certificate(settings, tmp_path, support_client):
    settings.BANK_SIGNING_CERT = tmp_path / "qseal.pem"
    write(settings.BANK_SIGNING_CERT, qseal(12.5))
    settings.BANK_RESPONSE_CERT = tmp_path / "seal.pem"
    write(settings.BANK_RESPONSE_CERT, qseal(300))
    settings.BANK_TLS_CLIENT_CERT = None
    settings.BANK_BASE_URL = "http://127.0.0.1:8001"
    page = " ".join(support_client.get(reverse("staff-dashboard")).content.decode().split())
    assert 'id="certificate-alerts"' in page
    assert "TPP&#x27;s QSealC (signs every request): expires on" in page and "in 12 days" in page
    assert 'data-certificate="qsealc" data-level="14 days"' in page
    assert 'data-certificate="bank_seal" data-level="ok"' in page
    assert "Bank&#x27;s seal" not in page.split('id="certificate-alerts"')[1].split("</div>")[0]


def test_no_alert_when_every_certificate_has_more_than_30_days(settings, tmp_path, support_client):
    settings.BANK_SIGNING_CERT = tmp_path / "qseal.pem"
    write(settings.BANK_SIGNING_CERT, qseal(31))
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_TLS_CLIENT_CERT = None
    settings.BANK_BASE_URL = "http://127.0.0.1:8001"
    page = " ".join(support_client.get(reverse("staff-dashboard")).content.decode().split())
    assert 'id="certificate-alerts"' not in page
    assert 'data-certificate="qsealc" data-level="ok"' in page


def test_an_expired_certificate_is_shown_as_stopping_bank_calls(settings, tmp_path, support_client):
    settings.BANK_SIGNING_CERT = tmp_path / "qseal.pem"
    write(settings.BANK_SIGNING_CERT, qseal(-3))
    settings.BANK_BASE_URL = "http://127.0.0.1:8001"
    page = " ".join(support_client.get(reverse("staff-dashboard")).content.decode().split())
    assert "bank calls are refused until it is renewed" in page
    assert 'data-certificate="qsealc" data-level="expired"' in page


def test_the_metric_gives_the_days_left(settings, tmp_path):
    settings.BANK_SIGNING_CERT = tmp_path / "qseal.pem"
    write(settings.BANK_SIGNING_CERT, qseal(6.5))
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_TLS_CLIENT_CERT = None
    settings.BANK_BASE_URL = "http://127.0.0.1:8001"
    families = {f.name: f for f in certificates.gauges()}
    (days,) = families["tpp_certificate_days_left"].samples
    assert days.labels == {"certificate": "qsealc"} and 6.4 < days.value < 6.6
    (readable,) = families["tpp_certificate_readable"].samples
    assert readable.value == 1


def test_the_system_check_warns_within_30_days(settings, tmp_path):
    settings.BANK_SIGNING_CERT = tmp_path / "qseal.pem"
    write(settings.BANK_SIGNING_CERT, qseal(25))
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_TLS_CLIENT_CERT = None
    found = [m for m in checks.run_checks() if m.id == "tpp_portal.W001"]
    assert len(found) == 1 and "expires on" in found[0].msg and found[0].level == checks.WARNING
    write(settings.BANK_SIGNING_CERT, qseal(60))
    assert not [m for m in checks.run_checks() if m.id == "tpp_portal.W001"]
