"""The bank as a real process (gunicorn with the production settings file) on a free loopback port.

One session-scoped server with its own temporary SQLite database; a whole consent flow over HTTP, and
schemathesis checks every operation of /openapi.json against it: no 5xx and no answer outside the document.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import schemathesis

from tests.bank_simulator.conftest import REDIRECT_URI
from tests.bank_simulator.helpers import LiveTpp, check_cases, consent, live_bank  # noqa: F401 - the fixture
from xs2a.signing import sign_request

pytestmark = pytest.mark.live_bank


def test_consent_flow_and_account_reads_over_http(live_bank):  # noqa: F811 - the imported fixture
    tpp = LiveTpp(live_bank)
    assert tpp.send("GET", "/v1/accounts").status_code == 401
    params = consent(tpp)
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


def test_openapi_document_holds_every_operation(live_bank):  # noqa: F811 - the imported fixture
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


def test_schemathesis_every_operation_conforms(live_bank):  # noqa: F811 - the imported fixture
    schema = schemathesis.openapi.from_url(f"{live_bank}/openapi.json")
    tpp = LiveTpp(live_bank)
    consent(tpp)
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
        if operation.path == "/v1/sandbox/behaviour/drop-next-payment-answer":
            continue  # would lose the next payment answer of the other live tests; test_bank_profiles has it
        strategies = [operation.as_strategy()]
        names = {p.name for p in operation.path_parameters}
        real = {"PSU-ID": tpp.psu_id, "PSU-IP-Address": "198.51.100.7", "TPP-Redirect-URI": REDIRECT_URI}
        strategies.append(
            operation.as_strategy(
                headers=real, path_parameters={k: v for k, v in known.items() if k in names} or None
            )
        )
        for strategy in strategies:
            check_cases(tpp, strategy, max_examples=int(os.environ.get("BANK_SIM_SCHEMATHESIS_EXAMPLES", "6")))
            checked += 1
    assert checked >= 2 * 25


def test_a_replay_is_refused_whichever_process_receives_it(live_bank):  # noqa: F811 - the imported fixture
    """One signed request sent eight times at once, each on its own connection (gunicorn's workers share the
    bank's database, where the seen signatures are): exactly one answer 200."""
    tpp = LiveTpp(live_bank)
    target = "/v1/sandbox/customers"
    signed = sign_request("GET", target, tpp.headers(), None, tpp.signer.key, tpp.signer.certificate)

    def send(_: int) -> requests.Response:
        return requests.get(live_bank + target, headers=signed, timeout=30)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    assert sorted(a.status_code for a in answers) == [200] + [400] * 7
    refused = [a.json()["tppMessages"][0]["text"] for a in answers if a.status_code == 400]
    assert all(text.startswith("Signature: this signature was already used") for text in refused), refused
