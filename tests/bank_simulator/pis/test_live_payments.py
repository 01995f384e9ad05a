"""A whole payment over real HTTP against the bank as a process (gunicorn, production settings file).

Uses part 1's ``live_bank`` server: opaque payment ids with '!' and '=' travel in the path as sent, the SCA
screens work in a browser session with CSRF, and the batch control moves the payment on.
"""

from __future__ import annotations

import json
import re

import pytest
import requests
import schemathesis

from devtools.livebank import sca_post
from tests.bank_simulator.conftest import PRIVATE_1, REDIRECT_URI
from tests.bank_simulator.helpers import LiveTpp, check_cases, consent, live_bank  # noqa: F401 - the fixture

pytestmark = pytest.mark.live_bank


def _approve(href: str, identity: str) -> str:
    browser = requests.Session()
    page = browser.get(href, timeout=10)
    assert page.status_code == 200 and 'name="identity"' in page.text
    page = sca_post(browser, href, page, identity=identity, action="identify")
    agreement = re.search(r'name="agreement" value="([^"]+)"\s*checked', page.text).group(1)
    page = sca_post(browser, href, page, agreement=agreement, action="context")
    assert "1 250.00 EUR" in page.text and "Müller Maschinenbau GmbH" in page.text  # dynamic linking
    done = sca_post(browser, href, page, action="approve")
    assert done.status_code == 302, done.text[:500]
    return done.headers["Location"]


def test_payment_over_http(live_bank):  # noqa: F811 - the imported fixture
    tpp = LiveTpp(live_bank)
    consent(tpp)  # the same PSU-ID serves the PISP role of the same TPP
    accounts = tpp.send("GET", "/v1/accounts").json()["accounts"]
    main = next(a for a in accounts if a["name"] == "Brukskonto")
    body = {
        "instructedAmount": {"amount": "1250.00", "currency": "EUR"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAgent": "COBADEFFXXX",
        "creditorAccount": {"iban": "DE89370400440532013000", "currency": "EUR"},
        "debtorAccount": {"iban": main["iban"], "currency": "NOK"},
    }
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    target = "/v1/payments/norwegian-cross-border-credit-transfers"
    missing_fix = tpp.send("POST", target, raw)
    assert missing_fix.status_code == 400
    assert missing_fix.json()["tppMessages"][0]["path"] == "x-accept-fix"
    created = tpp.send("POST", target, raw, headers=tpp.headers({"x-accept-fix": "amount-as-string"}))
    assert created.status_code == 201, created.text
    data = created.json()
    assert "!" in data["paymentId"] and "=" in data["paymentId"]
    details = tpp.send("GET", data["_links"]["self"]["href"])
    assert details.status_code == 200, details.text
    assert details.json()["paymentId"] == data["paymentId"]
    started = tpp.send("POST", data["_links"]["startAuthorisation"]["href"])
    assert started.status_code == 201, started.text
    location = _approve(started.json()["_links"]["scaRedirect"]["href"], PRIVATE_1)
    assert "psu-id=" + tpp.psu_id in location
    assert tpp.send("GET", data["_links"]["status"]["href"]).json() == {"transactionStatus": "PDNG"}
    balance = json.dumps({"balanceAmount": {"amount": "50000.00", "currency": "NOK"}}).encode()
    assert tpp.send("POST", f"/v1/sandbox/accounts/{main['resourceId']}/balances", balance).status_code == 200
    # Move the bank's clock to its next batch (and the one after): the payment reserves, then settles.
    for expected in ("ACSP", "ACSC"):
        run = tpp.send("POST", "/v1/sandbox/batches/run", b'{"untilNextBatch":true}')
        assert run.status_code == 200, run.text
        status = tpp.send("GET", data["_links"]["status"]["href"]).json()
        assert status == {"transactionStatus": expected, "fundsAvailable": True}
    assert tpp.send("DELETE", data["_links"]["self"]["href"]).status_code == 409


def test_schemathesis_payment_operations_with_a_real_payment(live_bank):  # noqa: F811 - the imported fixture
    """Generated requests on the payment operations, with a real product, payment and authorisation id."""
    tpp = LiveTpp(live_bank)
    consent(tpp)
    main = next(a for a in tpp.send("GET", "/v1/accounts").json()["accounts"] if a["name"] == "Brukskonto")
    body = {
        "instructedAmount": {"amount": "10.00", "currency": "NOK"},
        "creditorName": "Schema Test AS",
        "creditorAccount": {"bban": "12345678903", "currency": "NOK"},
        "debtorAccount": {"iban": main["iban"], "currency": "NOK"},
    }
    raw = json.dumps(body, separators=(",", ":")).encode()
    product = "norwegian-domestic-credit-transfers"
    created = tpp.send(
        "POST", f"/v1/payments/{product}", raw, headers=tpp.headers({"x-accept-fix": "amount-as-string"})
    ).json()
    started = tpp.send("POST", created["_links"]["startAuthorisation"]["href"]).json()
    known = {
        "paymentProduct": product,
        "paymentId": created["paymentId"],
        "authorisationId": started["authorisationId"],
    }
    real = {
        "PSU-ID": tpp.psu_id,
        "PSU-IP-Address": "198.51.100.7",
        "TPP-Redirect-URI": REDIRECT_URI,
        "TPP-Session-ID": tpp.session_id,
        "x-accept-fix": "amount-as-string",
    }
    schema = schemathesis.openapi.from_url(f"{live_bank}/openapi.json")
    operations = [
        result.ok()
        for result in schema.get_all_operations()
        if result.ok().path.startswith(("/v1/payments", "/v1/sandbox/batches"))
    ]
    assert len(operations) == 7
    for operation in operations:
        names = {p.name for p in operation.path_parameters}
        strategy = operation.as_strategy(
            headers=real, path_parameters={k: v for k, v in known.items() if k in names} or None
        )
        check_cases(tpp, strategy, max_examples=12)
