"""The bank as a real process for the simulator's tests, and a TPP and a PSU talking to it over HTTP.

``live_bank`` (session): the bank under gunicorn with the production settings file on a free loopback port,
its own temporary SQLite database (devtools.livebank); the value is its base URL. ``LiveTpp`` signs requests
with the development QSealC, ``consent`` gives a consent through the SCA screens, ``conforms`` sends a
schemathesis case signed and checks the answer against the document, ``check_cases`` does so for generated cases.

Import the fixture into the test module: ``from tests.bank_simulator.helpers import live_bank  # noqa: F401``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from devtools.livebank import running_bank, sca_post
from tests.bank_simulator.conftest import PRIVATE_1, REDIRECT_URI, http_date, load_dev_signer
from xs2a.signing import sign_request

SIGNED_BY_US = {"date", "x-request-id", "signature", "tpp-signature-certificate", "digest"}


@pytest.fixture(scope="session")
def live_bank(tmp_path_factory) -> Iterator[str]:
    with running_bank(tmp_path_factory.mktemp("live-bank")) as bank:
        yield bank.base_url


class LiveTpp:
    def __init__(self, base: str) -> None:
        self.base = base
        self.signer = load_dev_signer()
        self.http = requests.Session()
        self.session_id = str(uuid.uuid4())
        self.psu_id: str | None = None

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {
            "Date": http_date(),
            "X-Request-ID": str(uuid.uuid4()),
            "TPP-Redirect-URI": REDIRECT_URI,
            "TPP-Session-ID": self.session_id,
            "PSU-IP-Address": "198.51.100.7",
        }
        if self.psu_id:
            headers["PSU-ID"] = self.psu_id
        headers.update(extra or {})
        return headers

    def send(self, method: str, target: str, body: bytes | None = None, headers: dict[str, str] | None = None):
        signed = sign_request(
            method,
            target,
            headers if headers is not None else self.headers(),
            body,
            self.signer.key,
            self.signer.certificate,
        )
        if body is not None:
            signed["Content-Type"] = "application/json"
        return self.http.request(
            method, self.base + target, data=body, headers=signed, timeout=30, allow_redirects=False
        )


def consent(tpp: LiveTpp) -> dict[str, str]:
    """A bank-offered consent for Private Customer 1 through the SCA screens, every account ticked; sets
    ``tpp.psu_id`` and returns the parameters of the redirect back."""
    response = tpp.send("POST", "/v1/bank-offered-consents", b"{}")
    assert response.status_code == 201, response.text
    href = response.json()["_links"]["scaRedirect"]["href"]
    assert href.startswith(tpp.base + "/sca/authorize?state=")
    browser = requests.Session()
    page = browser.get(href, timeout=10)
    assert page.status_code == 200 and 'name="identity"' in page.text
    page = sca_post(browser, href, page, identity=PRIVATE_1, action="identify")
    agreement = re.search(r'name="agreement" value="([^"]+)"', page.text).group(1)
    page = sca_post(browser, href, page, agreement=agreement, action="context")
    accounts = re.findall(r'name="account" value="([^"]+)"', page.text)
    done = sca_post(browser, href, page, account=accounts, action="approve")
    assert done.status_code == 302, done.text[:500]
    params = {k: v[0] for k, v in parse_qs(urlsplit(done.headers["Location"]).query).items()}
    tpp.psu_id = params["psu-id"]
    return params


def conforms(tpp: LiveTpp, case) -> None:
    """Send a schemathesis ``case`` signed by ``tpp``; fail on a 5xx or an answer outside the document."""
    kwargs = case.as_transport_kwargs(base_url=tpp.base)
    method = kwargs["method"].upper()
    url = kwargs["url"]
    body = None
    if kwargs.get("json") is not None:
        body = json.dumps(kwargs["json"], separators=(",", ":")).encode("utf-8")
    elif isinstance(kwargs.get("data"), (bytes, str)):
        body = kwargs["data"].encode("utf-8") if isinstance(kwargs["data"], str) else kwargs["data"]
    prepared = requests.Request(method, url, params=kwargs.get("params")).prepare()
    target = prepared.path_url
    generated = {
        k: str(v)
        for k, v in (kwargs.get("headers") or {}).items()
        if k.lower() not in SIGNED_BY_US
        and k.lower() not in {"content-type", "user-agent", "accept"}
        and all(32 <= ord(c) < 127 for c in str(v))
    }
    headers = {"Date": http_date(), "X-Request-ID": str(uuid.uuid4()), **generated}
    signed = sign_request(method, target, headers, body, tpp.signer.key, tpp.signer.certificate)
    if body is not None:
        signed["Content-Type"] = "application/json"
    response = requests.request(method, prepared.url, data=body, headers=signed, timeout=30, allow_redirects=False)
    case.validate_response(
        response,
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
    )


def check_cases(tpp: LiveTpp, strategy, *, max_examples: int) -> None:
    """Draw ``max_examples`` schemathesis cases from ``strategy`` (derandomized) and send each by ``conforms``."""

    @given(case=strategy)
    @hypothesis_settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        conforms(tpp, case)

    run()
