"""The bank as a real process (gunicorn with the production settings file) on a free loopback port.

One session-scoped server with its own temporary SQLite database; a whole consent flow over HTTP, and
schemathesis checks every operation of /openapi.json against it: no 5xx and no answer outside the document.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.bank_simulator.conftest import PRIVATE_1, REDIRECT_URI, http_date, load_dev_signer
from xs2a.signing import sign_request

pytestmark = pytest.mark.live_bank

ROOT = Path(__file__).resolve().parents[2]
SIGNED_BY_US = {"date", "x-request-id", "signature", "tpp-signature-certificate", "digest"}


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def live_bank(tmp_path_factory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("live-bank")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "BANK_SIM_DATABASE_URL": f"sqlite:///{tmp / 'bank.sqlite3'}",
        "BANK_SIM_PUBLIC_URL": base,
        "BANK_SIM_BIND": f"127.0.0.1:{port}",
        "PORT": str(port),
        "DJANGO_SETTINGS_MODULE": "bank_simulator.settings",
    }
    for command in (["migrate", "--noinput", "-v0"], ["sandbox_initialize"]):
        subprocess.run(
            [sys.executable, "-m", "bank_simulator", *command],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=120,
        )
    log = (tmp / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "bank_simulator.wsgi",
            "--config",
            "bank_simulator/gunicorn.conf.py",
            "--access-logfile",
            "/dev/null",
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the bank did not start: {(tmp / 'gunicorn.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


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


def _csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def _consent(tpp: LiveTpp) -> dict[str, str]:
    response = tpp.send("POST", "/v1/bank-offered-consents", b"{}")
    assert response.status_code == 201, response.text
    href = response.json()["_links"]["scaRedirect"]["href"]
    assert href.startswith(tpp.base + "/sca/authorize?state=")
    browser = requests.Session()
    page = browser.get(href, timeout=10)
    assert page.status_code == 200 and 'name="identity"' in page.text
    page = browser.post(
        href,
        data={"csrfmiddlewaretoken": _csrf(page.text), "identity": PRIVATE_1, "action": "identify"},
        timeout=10,
    )
    agreement = re.search(r'name="agreement" value="([^"]+)"', page.text).group(1)
    page = browser.post(
        href,
        data={"csrfmiddlewaretoken": _csrf(page.text), "agreement": agreement, "action": "context"},
        timeout=10,
    )
    accounts = re.findall(r'name="account" value="([^"]+)"', page.text)
    done = browser.post(
        href,
        data={"csrfmiddlewaretoken": _csrf(page.text), "account": accounts, "action": "approve"},
        timeout=10,
        allow_redirects=False,
    )
    assert done.status_code == 302, done.text[:500]
    params = {k: v[0] for k, v in parse_qs(urlsplit(done.headers["Location"]).query).items()}
    tpp.psu_id = params["psu-id"]
    return params


def test_consent_flow_and_account_reads_over_http(live_bank):
    tpp = LiveTpp(live_bank)
    assert tpp.send("GET", "/v1/accounts").status_code == 401
    params = _consent(tpp)
    assert params["tpp-session-id"] == tpp.session_id and params["context"] == "PRIVATE"
    accounts = tpp.send("GET", "/v1/accounts").json()["accounts"]
    assert {a["name"] for a in accounts} == {"Brukskonto", "Høyrentekonto"}
    # Opaque ids with '!' and '=' travel in the path as the client sent them (gunicorn's RAW_URI).
    balances = tpp.send("GET", accounts[0]["_links"]["balances"]["href"])
    assert balances.status_code == 200, balances.text
    assert balances.json()["balances"][0]["balanceAmount"]["currency"] == accounts[0]["currency"]
    transactions = tpp.send("GET", accounts[0]["_links"]["transactions"]["href"])
    assert transactions.status_code == 200
    assert "limit=200" in transactions.json()["transactions"]["_links"]["next"]["href"]
    # A stale Date is refused by the real server too.
    stale = tpp.headers({"Date": "Sun, 06 Nov 1994 08:49:37 GMT"})
    response = tpp.send("GET", "/v1/accounts", headers=stale)
    assert response.status_code == 400 and "Date" in response.json()["tppMessages"][0]["text"]


def test_openapi_document_holds_every_operation(live_bank):
    document = requests.get(f"{live_bank}/openapi.json", timeout=10).json()
    assert document["openapi"].startswith("3.")
    for path in (
        "/v1/accounts",
        "/v1/accounts/{resourceId}/transactions",
        "/v1/bank-offered-consents",
        "/v1/users",
        "/v1/agreements",
        "/v1/sandbox/customers",
        "/v1/sandbox/initialize",
        "/v1/card-accounts/{resourceId}/transactions",
    ):
        assert path in document["paths"]


def _conforms(tpp: LiveTpp, case) -> None:
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


def test_schemathesis_every_operation_conforms(live_bank):
    schema = schemathesis.openapi.from_url(f"{live_bank}/openapi.json")
    tpp = LiveTpp(live_bank)
    _consent(tpp)
    accounts = tpp.send("GET", "/v1/accounts").json()["accounts"]
    customers = tpp.send("GET", "/v1/sandbox/customers").json()
    known = {
        "resourceId": accounts[0]["resourceId"],
        "customerId": customers[0]["customerId"],
        "mockAccountId": accounts[0]["resourceId"],
    }
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    checked = 0
    for operation in operations:
        if operation.path == "/v1/sandbox/initialize":
            continue  # resets the data the other operations read; covered by the sandbox tests
        strategies = [operation.as_strategy()]
        names = {p.name for p in operation.path_parameters}
        real = {"PSU-ID": tpp.psu_id, "PSU-IP-Address": "198.51.100.7", "TPP-Redirect-URI": REDIRECT_URI}
        strategies.append(
            operation.as_strategy(
                headers=real, path_parameters={k: v for k, v in known.items() if k in names} or None
            )
        )
        for strategy in strategies:

            @given(case=strategy)
            @hypothesis_settings(
                max_examples=int(os.environ.get("BANK_SIM_SCHEMATHESIS_EXAMPLES", "6")),
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
            def run(case):
                _conforms(tpp, case)

            run()
            checked += 1
    assert checked >= 2 * 25
