"""Fixtures of the sandbox bank's tests (run with ``--ds=bank_simulator.settings``).

Requests are signed with ``xs2a.signing.sign_request`` (the portal's signer: tests may import it, the bank may
not) and sent through Django's test client, so every test goes through the bank's full access control. The
known state of docs/bank-interface.md, reference 1 is loaded once per session; each test runs in a
rolled-back transaction.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass, field
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from devtools import pki
from xs2a.signing import sign_request

PRIVATE_1 = "13039319955"
PRIVATE_2 = "12085592767"
CORPORATE_1 = "18129215603"
CORPORATE_2 = "20079518612"
REDIRECT_URI = "https://tpp.example/callback?flow=abc"


@dataclass(frozen=True)
class Signer:
    key: Any
    certificate: x509.Certificate


def load_dev_signer() -> Signer:
    pki_dir = Path(settings.BASE_DIR) / "var" / "pki"
    certificate = x509.load_pem_x509_certificate((pki_dir / "tpp-qseal.pem").read_bytes())
    key = serialization.load_pem_private_key((pki_dir / "tpp-qseal.key").read_bytes(), password=None)
    return Signer(key, certificate)


@pytest.fixture(scope="session")
def dev_ca() -> pki.Issued:
    """The development CA the bank trusts (BANK_SIM_TRUSTED_CAS default), with its key, to issue test certs."""
    pki_dir = Path(settings.BASE_DIR) / "var" / "pki"
    certificate = x509.load_pem_x509_certificate((pki_dir / "ca.pem").read_bytes())
    key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), password=None)
    return pki.Issued(certificate, key)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def tpp_signer() -> Signer:
    return load_dev_signer()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The known state once per session; tests roll back on top of it."""
    with django_db_blocker.unblock():
        call_command("sandbox_initialize")


def http_date(moment: dt.datetime | None = None) -> str:
    return format_datetime(moment or dt.datetime.now(dt.UTC), usegmt=True)


def resent_date() -> str:
    """The Date of a request sent again (same X-Request-ID and body) and signed anew: half a minute ago (within
    the allowed deviation), never the Date of the first sending a moment ago, so that its signature differs (a
    byte-identical request is refused as a replay)."""
    return http_date(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=30))


@dataclass
class Bank:
    """A TPP talking to the bank through the Django test client, signing every request."""

    client: Client
    signer: Signer
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    psu_id: str | None = None
    corporate_id: str | None = None
    psu_ip: str | None = "198.51.100.7"

    def headers(self, extra: dict[str, str] | None = None, *, psu: bool = True) -> dict[str, str]:
        headers = {
            "Date": http_date(),
            "X-Request-ID": str(uuid.uuid4()),
            "TPP-Redirect-URI": REDIRECT_URI,
            "TPP-Session-ID": self.session_id,
        }
        if psu and self.psu_id:
            headers["PSU-ID"] = self.psu_id
        if psu and self.corporate_id:
            headers["PSU-Corporate-ID"] = self.corporate_id
        if psu and self.psu_ip:
            headers["PSU-IP-Address"] = self.psu_ip
        headers.update(extra or {})
        return {k: v for k, v in headers.items() if v is not None}

    def request(
        self,
        method: str,
        target: str,
        *,
        json_body: str | None = None,
        headers: dict[str, str] | None = None,
        signer: Signer | None = None,
        psu: bool = True,
        content_type: str = "application/json",
        tamper: dict[str, str] | None = None,
        **sign_options: Any,
    ):
        signer = signer or self.signer
        body = json_body.encode("utf-8") if json_body is not None else None
        signed = sign_request(
            method, target, self.headers(headers, psu=psu), body, signer.key, signer.certificate, **sign_options
        )
        signed.update(tamper or {})
        kwargs: dict[str, Any] = {"headers": signed}
        if body is not None or method != "GET":  # the test client would send an empty multipart form
            kwargs["data"] = body or b""
            kwargs["content_type"] = content_type
        return getattr(self.client, method.lower())(target, **kwargs)

    def get(self, target: str, **kw: Any):
        return self.request("GET", target, **kw)

    def post(self, target: str, body: str | None = "{}", **kw: Any):
        return self.request("POST", target, json_body=body, **kw)

    def delete(self, target: str, **kw: Any):
        return self.request("DELETE", target, **kw)


# A `bank` fixture of its own (not tests/bankfake.py): the sandbox bank itself is what these tests test.
@pytest.fixture
def bank(db, tpp_signer) -> Bank:
    return Bank(Client(), tpp_signer)


def error_code(response) -> str:
    body = response.json()
    messages = body["tppMessages"]
    assert all(len(m.get("text", "")) <= 512 for m in messages)
    return messages[0]["code"]


def error_text(response) -> str:
    return response.json()["tppMessages"][0]["text"]


# --- SCA through the HTML screens -------------------------------------------------------------------------


def sca_path(href: str) -> str:
    parts = urlsplit(href)
    return f"{parts.path}?{parts.query}"


def redirect_params(response) -> dict[str, str]:
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    assert location.startswith("https://tpp.example/callback?")
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def form_accounts(html: str) -> dict[str, bool]:
    """resourceId -> pre-selected, from the consent screen's checkboxes."""
    found = {}
    for match in re.finditer(r'<input type="checkbox" name="account" value="([^"]+)"\s*(checked)?', html):
        found[match.group(1)] = bool(match.group(2))
    return found


def form_agreements(html: str) -> list[str]:
    return re.findall(r'<input type="radio" name="agreement" value="([^"]+)"', html)


@dataclass
class ScaResult:
    params: dict[str, str]
    consent_screen: str = ""


def run_sca(
    browser: Client,
    href: str,
    identity: str | None,
    *,
    agreement_index: int = 0,
    accounts: list[str] | None = None,
    all_accounts: bool = True,
) -> ScaResult:
    """Walk the SCA screens like a PSU: identity, context, review, approve. Returns the redirect parameters."""
    path = sca_path(href)
    page = browser.get(path)
    assert page.status_code == 200, page.content[:300]
    html = page.content.decode()
    if identity is not None and 'name="identity"' in html:  # skipped within a TPP session's valid hour
        page = browser.post(path, {"identity": identity, "action": "identify"})
        assert page.status_code == 200, page.content[:500]
        html = page.content.decode()
    options = form_agreements(html)
    assert options, html[:500]
    page = browser.post(path, {"agreement": options[agreement_index], "action": "context"})
    assert page.status_code == 200
    review = page.content.decode()
    if accounts is None and all_accounts:
        accounts = list(form_accounts(review))
    response = browser.post(path, {"account": accounts or [], "action": "approve"})
    return ScaResult(redirect_params(response), review)


def give_consent(bank: Bank, identity: str, **kw: Any) -> ScaResult:
    """Start a bank-offered consent and complete its SCA; the PSU-ID (and corporate id) go into ``bank``."""
    response = bank.post("/v1/bank-offered-consents", "{}", headers={"PSU-Context": "PRIVATE"})
    assert response.status_code == 201, response.content
    result = run_sca(Client(), response.json()["_links"]["scaRedirect"]["href"], identity, **kw)
    bank.psu_id = result.params["psu-id"]
    bank.corporate_id = result.params.get("psu-corporate-id")
    return result


@pytest.fixture
def private_bank(bank) -> Bank:
    """Private Customer 1 has consented to all its accounts."""
    give_consent(bank, PRIVATE_1)
    return bank


def accounts_of(bank: Bank) -> dict[str, dict[str, Any]]:
    response = bank.get("/v1/accounts")
    assert response.status_code == 200, response.content
    return {a["name"]: a for a in response.json()["accounts"]}


@pytest.fixture(autouse=True)
def test_client_follows_see_other(monkeypatch):
    """A browser answers the SCA screens' 303 (a step done: Post/Redirect/Get) with a GET of the same address; the
    test client does the same for a 303 within this site, so that the tests read the next screen as the PSU sees
    it. Every other answer is returned as it comes (the redirect back to the TPP stays a 302 to read)."""
    original = Client.post

    def post(self, path, *args, **kwargs):
        answer = original(self, path, *args, **kwargs)
        if answer.status_code == 303 and answer["Location"].startswith("/") and not kwargs.get("follow"):
            page = self.get(answer["Location"])
            page.see_other = answer
            return page
        return answer

    monkeypatch.setattr(Client, "post", post)
