"""The attacks of the trust-boundary issue on the line between the portal and the bank, as they were tried:

9. the bank client read any answer whole (a 300 MB answer took the process from 45 to 650 MB), and a foreign
   ``_links`` href raised ``ValueError``, outside the client's own errors, so callers catching ``Xs2aError``
   crashed on it;
10. the sandbox bank accepted a signature that did not cover ``(request-target)``, ``psu-id`` or
    ``psu-corporate-id`` (a captured signed GET could be re-aimed at /v1/accounts with an unsigned PSU-ID added),
    and an identical signed request replayed within the 60-second Date window.

The client's side runs against a loopback server of the test's own; the bank's against the sandbox bank running
as a real process, with requests signed by the TPP's own key, exactly as an attacker holding a captured request
would send them.
"""

from __future__ import annotations

import http.server
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.conf import settings

from xs2a import errors
from xs2a.client import ClientConfig, Xs2aClient
from xs2a.signing import (
    certificate_header,
    imf_fixdate,
    key_id,
    sign_request,
    signature_for,
    signature_header,
)

# --- 9. the client: answers read within a cap, every failure its own --------------------------------------


class _Huge(http.server.BaseHTTPRequestHandler):
    sent = 0

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        chunk = b" " * 65536
        try:
            for _ in range(300 * 16):  # 300 MB, never announced by Content-Length
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


class _ForeignLink(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"_links": {"scaRedirect": {"href": "https://bank.example/sca"}}}'
        if self.path.startswith("/v1/accounts"):
            body = (
                b'{"account": {}, "transactions": {"booked": [], "pending": [],'
                b' "_links": {"next": {"href": "https://evil.example/v1/accounts/x/transactions?page=2"}}}}'
            )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def serving() -> Iterator:
    servers = []

    def serve(handler) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def _client(base_url: str, **overrides) -> Xs2aClient:
    from core.bank import client_config

    config = client_config()
    values = {f: getattr(config, f) for f in config.__dataclass_fields__}
    return Xs2aClient(ClientConfig(**{**values, "base_url": base_url, **overrides}))


def test_a_huge_answer_is_refused_after_the_cap_not_read_whole(serving):
    base = serving(_Huge)
    with _client(base, max_response_bytes=1024 * 1024) as client, pytest.raises(errors.ResponseTooLargeError):
        client.consents.users()
    assert _Huge.sent < 64 * 1024 * 1024  # the client stopped reading: far from the 300 MB sent
    assert settings.BANK_MAX_RESPONSE_BYTES == 10 * 1024 * 1024  # the portal's cap, 10 MB unless set


def test_a_foreign_link_is_an_error_of_the_client_not_a_crash(serving):
    from xs2a.psu import PsuContext

    base = serving(_ForeignLink)
    psu = PsuContext(psu_id=str(uuid.uuid4()), ip_address="192.0.2.1")
    with _client(base) as client, pytest.raises(errors.Xs2aError):
        for _page in client.accounts.transaction_pages("acc", psu=psu, booking_status="both"):
            pass


# --- 10. the sandbox bank: what a signature must cover, and no replay ------------------------------------


def _tpp(pki) -> tuple:
    certificate = x509.load_pem_x509_certificate((pki / "tpp-qseal.pem").read_bytes())
    key = load_pem_private_key((pki / "tpp-qseal.key").read_bytes(), password=None)
    return key, certificate


def _headers() -> dict[str, str]:
    return {
        "Date": imf_fixdate(datetime.now(UTC)),
        "X-Request-ID": str(uuid.uuid4()),
        "TPP-Redirect-URI": "http://127.0.0.1/bank/callback",
        "Accept": "application/json",
    }


def _signed_over(names: list[str], path: str, headers: dict[str, str], key, certificate) -> dict[str, str]:
    """``headers`` signed over exactly ``names`` (what an attacker's captured request could carry)."""
    signature = signature_for(names, method="GET", target=path, headers=headers, key=key)
    return {
        **headers,
        "TPP-Signature-Certificate": certificate_header(certificate),
        "Signature": signature_header(key_id=key_id(certificate), header_names=names, signature=signature),
    }


@pytest.fixture
def pki():
    return settings.BANK_SIGNING_CERT.parent


@pytest.mark.live_bank
def test_a_signature_without_the_request_target_is_refused(live_bank, pki):
    key, certificate = _tpp(pki)
    headers = _headers()
    # A GET of /v1/users, signed over everything but the target: re-aimed at /v1/accounts it would still verify.
    signed = _signed_over(["date", "x-request-id", "tpp-redirect-uri"], "/v1/users", headers, key, certificate)

    answer = requests.get(live_bank + "/v1/accounts", headers=signed, timeout=10)

    assert answer.status_code == 400, answer.text
    assert "(request-target)" in answer.text


@pytest.mark.live_bank
def test_a_psu_id_the_signature_does_not_cover_is_refused(live_bank, pki):
    key, certificate = _tpp(pki)
    headers = _headers()
    names = ["(request-target)", "date", "x-request-id", "tpp-redirect-uri"]
    signed = _signed_over(names, "/v1/accounts", headers, key, certificate)
    signed["PSU-ID"] = str(uuid.uuid4())  # added after signing: an identity the TPP never vouched for

    answer = requests.get(live_bank + "/v1/accounts", headers=signed, timeout=10)

    assert answer.status_code == 400, answer.text
    assert "psu-id" in answer.text.lower()


@pytest.mark.live_bank
def test_an_identical_signed_request_is_not_accepted_twice(live_bank, pki):
    key, certificate = _tpp(pki)
    headers = {**_headers(), "TPP-Session-ID": str(uuid.uuid4())}
    signed = sign_request("GET", "/v1/users", headers, None, key, certificate)

    first = requests.get(live_bank + "/v1/users", headers=signed, timeout=10)
    replayed = requests.get(live_bank + "/v1/users", headers=signed, timeout=10)

    assert first.status_code == 200, first.text
    assert replayed.status_code == 400 and "replay" in replayed.text.lower(), replayed.text
