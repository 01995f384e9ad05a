"""The banks the sandbox plays (docs/sandbox-bank.md, "Bank profiles"): each setting does what it says, and its
default leaves the answers as they were. The lost answers themselves (reset, tls, timeout) need a real server:
tests/bank_simulator/test_live_bank_profiles.py."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import re
import runpy
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import clear_url_caches

from bank_simulator.models import Account
from bank_simulator.pis import lost_answers
from bank_simulator.pis.models import Payment, PaymentAuthorisation, TransactionStatus
from tests.bank_simulator.conftest import (
    CORPORATE_2,
    PRIVATE_1,
    PRIVATE_2,
    accounts_of,
    give_consent,
    run_sca,
)
from tests.bank_simulator.pis.helpers import (
    CROSS,
    account,
    approve,
    body,
    identify,
    initiate,
    next_batch,
    pin_clock,
    start_authorisation,
    status_of,
)

SETTINGS_FILE = Path(__file__).resolve().parents[3] / "bank_simulator" / "settings.py"


@pytest.fixture
def payer(bank):
    pin_clock()
    identify(bank, PRIVATE_1)
    return bank


@pytest.fixture
def debtor(db) -> Account:
    return account(PRIVATE_1, "Brukskonto")


def _created(bank, debtor, **kw) -> dict:
    response = initiate(bank, body(debtor), **kw)
    assert response.status_code == 201, response.content
    return response.json()


# --- the settings themselves ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BANK_SIM_BASE_PATH", "psd2"),
        ("BANK_SIM_BASE_PATH", "/psd2/../admin x"),
        ("BANK_SIM_LINKS", "relative"),
        ("BANK_SIM_STATUS_BEFORE_SCA", "ACSC"),
        ("BANK_SIM_SCA_APPROACH", "embedded"),
        ("BANK_SIM_CREDIT_FINAL", "ACSP"),
        ("BANK_SIM_DROP_PAYMENT_ANSWER", "drop"),
        ("BANK_SIM_DROP_PAYMENT_ANSWER_EVERY", "0"),
        ("BANK_SIM_DROP_PAYMENT_ANSWER_DELAY", "soon"),
        ("BANK_SIM_DATETIMES", "local"),
    ],
)
def test_an_invalid_value_stops_start_up_with_one_line_naming_the_setting(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured) as caught:
        runpy.run_path(str(SETTINGS_FILE))
    message = str(caught.value)
    assert message.startswith(f"{name}: ") and "\n" not in message and value in message


_DEFAULTS = {
    "BANK_SIM_BASE_PATH": "",
    "BANK_SIM_LINKS": "base-relative",
    "BANK_SIM_STATUS_BEFORE_SCA": "RCVD",
    "BANK_SIM_SCA_APPROACH": "redirect",
    "BANK_SIM_CREDIT_FINAL": "ACSC",
    "BANK_SIM_DROP_PAYMENT_ANSWER": "none",
    "BANK_SIM_DATETIMES": "offset",
}


def test_the_defaults_are_the_bank_as_it_was(monkeypatch):
    for name in _DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    loaded = runpy.run_path(str(SETTINGS_FILE))
    assert {name: loaded[name] for name in _DEFAULTS} == _DEFAULTS


def test_with_the_defaults_answers_are_written_as_before(payer, debtor):
    created = _created(payer, debtor)
    assert created["transactionStatus"] == "RCVD"
    assert created["_links"]["status"]["href"].startswith("/v1/payments/")
    started = start_authorisation(payer, created).json()
    assert started["scaStatus"] == "started" and "scaRedirect" in started["_links"]
    assert "psuMessage" not in started
    payer.psu_id = None
    give_consent(payer, PRIVATE_1)
    main = accounts_of(payer)["Brukskonto"]
    balances = payer.get(f"/v1/accounts/{main['resourceId']}/balances").json()["balances"]
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", b["referenceDate"]) for b in balances)
    assert all("lastChangeDateTime" not in b for b in balances)
    booked = payer.get(f"/v1/accounts/{main['resourceId']}/transactions?bookingStatus=booked").json()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", booked["transactions"]["booked"][0]["bookingDate"])


# --- BANK_SIM_STATUS_BEFORE_SCA -------------------------------------------------------------------------------


@pytest.mark.parametrize("shown", ["ACTC", "ACCP", "PDNG"])
def test_before_sca_the_payment_shows_the_status_the_setting_names(payer, debtor, settings, shown):
    settings.BANK_SIM_STATUS_BEFORE_SCA = shown
    created = _created(payer, debtor)
    assert created["transactionStatus"] == shown
    assert payer.get(created["_links"]["self"]["href"]).json()["transactionStatus"] == shown
    assert status_of(payer, created) == {"transactionStatus": shown}
    assert Payment.objects.get(payment_id=created["paymentId"]).status == TransactionStatus.RCVD
    # Not authorised for all its name: startAuthorisation still works, and only the SCA moves it on.
    started = start_authorisation(payer, created)
    assert started.status_code == 201, started.content
    approve(started.json()["_links"]["scaRedirect"]["href"], PRIVATE_1)
    assert status_of(payer, created) == {"transactionStatus": "PDNG"}
    assert Payment.objects.get(payment_id=created["paymentId"]).authorised_at is not None


# --- BANK_SIM_CREDIT_FINAL ------------------------------------------------------------------------------------


@pytest.mark.parametrize("final", ["ACSC", "ACCC"])
def test_a_settled_payment_ends_in_the_final_status_the_setting_names(payer, debtor, settings, final):
    settings.BANK_SIM_CREDIT_FINAL = final
    balance = json.dumps({"balanceAmount": {"amount": "50000.00", "currency": "NOK"}})
    assert payer.post(f"/v1/sandbox/accounts/{debtor.resource_id}/balances", balance).status_code == 200
    created = _created(payer, debtor)
    approve(start_authorisation(payer, created).json()["_links"]["scaRedirect"]["href"], PRIVATE_1)
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == "ACSP"
    next_batch(payer)
    assert status_of(payer, created) == {"transactionStatus": final, "fundsAvailable": True}
    payment = Payment.objects.get(payment_id=created["paymentId"])
    assert payment.events.last().to_status == final
    assert payer.delete(created["_links"]["self"]["href"]).status_code == 409  # final: no cancel
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == final  # and it stays


# --- BANK_SIM_SCA_APPROACH ------------------------------------------------------------------------------------


def _decide(bank, authorisation_id: str, action: str, **extra):
    payload = json.dumps({"action": action, **extra})
    return bank.post(f"/v1/sandbox/payment-authorisations/{authorisation_id}", payload)


def test_decoupled_the_psu_approves_in_the_app_and_the_sca_status_follows(payer, debtor, settings):
    settings.BANK_SIM_SCA_APPROACH = "decoupled"
    created = _created(payer, debtor)
    started = start_authorisation(payer, created)
    assert started.status_code == 201, started.content
    answer = started.json()
    assert "scaRedirect" not in answer["_links"]
    assert answer["scaStatus"] == "started" and "app" in answer["psuMessage"]
    sca_status = answer["_links"]["scaStatus"]["href"]
    assert payer.get(sca_status).json() == {"scaStatus": "started"}
    assert status_of(payer, created) == {"transactionStatus": "RCVD"}

    decided = _decide(payer, answer["authorisationId"], "approve")
    assert decided.status_code == 200, decided.content
    assert decided.json() == {"scaStatus": "finalised", "transactionStatus": "PDNG"}
    assert payer.get(sca_status).json() == {"scaStatus": "finalised"}
    assert status_of(payer, created) == {"transactionStatus": "PDNG"}
    payment = Payment.objects.get(payment_id=created["paymentId"])
    assert payment.signatures.get().customer.customer_number == PRIVATE_1
    # Answered once: a second answer in the app is refused.
    assert _decide(payer, answer["authorisationId"], "refuse").status_code == 409


def test_decoupled_a_refusal_fails_the_sca_and_the_payment_waits_for_another(payer, debtor, settings):
    settings.BANK_SIM_SCA_APPROACH = "decoupled"
    created = _created(payer, debtor)
    answer = start_authorisation(payer, created).json()
    decided = _decide(payer, answer["authorisationId"], "refuse")
    assert decided.json() == {"scaStatus": "failed", "transactionStatus": "RCVD"}
    assert payer.get(answer["_links"]["scaStatus"]["href"]).json() == {"scaStatus": "failed"}
    assert status_of(payer, created) == {"transactionStatus": "RCVD"}
    again = start_authorisation(payer, created).json()
    assert again["authorisationId"] != answer["authorisationId"] and again["scaStatus"] == "started"


def test_decoupled_only_a_signer_of_the_agreement_approves(payer, debtor, settings):
    settings.BANK_SIM_SCA_APPROACH = "decoupled"
    created = _created(payer, debtor)
    answer = start_authorisation(payer, created).json()
    refused = _decide(payer, answer["authorisationId"], "approve", identity=PRIVATE_2)
    assert refused.status_code == 403, refused.content
    assert _decide(payer, answer["authorisationId"], "wave").status_code == 400
    assert _decide(payer, "no-such-authorisation", "approve").status_code == 404
    assert payer.get(answer["_links"]["scaStatus"]["href"]).json() == {"scaStatus": "started"}


def test_decoupled_a_further_signer_is_named_when_the_sca_names_no_one(bank, settings):
    """A corporate agreement needing two signers: the initiating PSU approves first (the SCA names them); the next
    SCA is started with the first signer's PSU-ID again, so the app is told who approves."""
    settings.BANK_SIM_SCA_APPROACH = "decoupled"
    pin_clock()
    identify(bank, PRIVATE_2, agreement_index=1)
    created = _created(bank, account(CORPORATE_2, "Driftskonto"))
    first = start_authorisation(bank, created).json()
    assert _decide(bank, first["authorisationId"], "approve").json() == {
        "scaStatus": "finalised",
        "transactionStatus": "PATC",
    }
    second = start_authorisation(bank, created).json()
    assert "scaRedirect" not in second["_links"]
    unnamed = _decide(bank, second["authorisationId"], "approve")
    assert unnamed.status_code == 400 and unnamed.json()["tppMessages"][0]["path"] == "identity"
    again = _decide(bank, second["authorisationId"], "approve", identity=PRIVATE_2)
    assert again.status_code == 409, "the first signer cannot sign twice"
    done = _decide(bank, second["authorisationId"], "approve", identity=CORPORATE_2)
    assert done.json() == {"scaStatus": "finalised", "transactionStatus": "PDNG"}
    signers = Payment.objects.get(payment_id=created["paymentId"]).signatures.values_list(
        "customer__customer_number", flat=True
    )
    assert sorted(signers) == sorted([PRIVATE_2, CORPORATE_2])


def test_a_decoupled_sca_past_its_time_cannot_be_approved(payer, debtor, settings):
    settings.BANK_SIM_SCA_APPROACH = "decoupled"
    created = _created(payer, debtor)
    answer = start_authorisation(payer, created).json()
    session = PaymentAuthorisation.objects.get(authorisation_id=answer["authorisationId"]).sca_session
    type(session).objects.filter(pk=session.pk).update(expires_at=session.created_at)
    refused = _decide(payer, answer["authorisationId"], "approve")
    assert refused.status_code == 409 and "expired" in refused.json()["tppMessages"][0]["text"]
    assert payer.get(answer["_links"]["scaStatus"]["href"]).json() == {"scaStatus": "failed"}


def test_a_redirect_sca_is_not_answered_in_the_app(payer, debtor):
    created = _created(payer, debtor)
    answer = start_authorisation(payer, created).json()
    assert _decide(payer, answer["authorisationId"], "approve").status_code == 409


@pytest.mark.parametrize(
    ("approach", "preferred", "decoupled"),
    [
        ("redirect", "false", False),  # today's bank: the header is accepted and changes nothing
        ("tpp-preferred", "false", True),
        ("tpp-preferred", "true", False),
        ("tpp-preferred", None, False),
        ("decoupled", "true", True),
    ],
)
def test_tpp_redirect_preferred_chooses_the_approach_where_the_bank_lets_it(
    payer, debtor, settings, approach, preferred, decoupled
):
    settings.BANK_SIM_SCA_APPROACH = approach
    headers = {"TPP-Redirect-Preferred": preferred} if preferred else None
    created = _created(payer, debtor, headers=headers)
    started = start_authorisation(payer, created, headers=headers).json()
    assert ("scaRedirect" not in started["_links"]) is decoupled


def test_decoupled_with_sca_at_initiation_the_initiation_answer_has_no_redirect(payer, debtor, settings):
    settings.BANK_SIM_SCA_APPROACH = "tpp-preferred"
    settings.BANK_SIM_SCA_AT_INITIATION = True
    created = _created(payer, debtor, headers={"TPP-Redirect-Preferred": "false"})
    assert "scaRedirect" not in created["_links"] and "scaStatus" in created["_links"]
    authorisation = PaymentAuthorisation.objects.get(payment__payment_id=created["paymentId"])
    assert authorisation.decoupled
    assert _decide(payer, authorisation.authorisation_id, "approve").json()["scaStatus"] == "finalised"


# --- BANK_SIM_DATETIMES ---------------------------------------------------------------------------------------


def test_naive_date_times_carry_no_offset_and_dates_become_midnight(bank, settings):
    settings.BANK_SIM_DATETIMES = "naive"
    give_consent(bank, PRIVATE_1)
    main = accounts_of(bank)["Brukskonto"]
    before = dt.datetime.now(ZoneInfo("Europe/Oslo")).replace(tzinfo=None, microsecond=0)
    balances = bank.get(f"/v1/accounts/{main['resourceId']}/balances").json()["balances"]
    after = dt.datetime.now(ZoneInfo("Europe/Oslo")).replace(tzinfo=None)
    for balance in balances:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T00:00:00", balance["referenceDate"])
        changed = dt.datetime.fromisoformat(balance["lastChangeDateTime"])
        assert changed.tzinfo is None and before <= changed <= after, "the bank's local time, no offset"
    listing = bank.get(f"/v1/accounts/{main['resourceId']}/transactions?bookingStatus=both").json()
    items = listing["transactions"]["booked"] + listing["transactions"]["pending"]
    assert items and all(re.fullmatch(r"\d{4}-\d{2}-\d{2}T00:00:00", t["bookingDate"]) for t in items)
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}T00:00:00", t["valueDate"]) for t in items if "valueDate" in t)
    assert listing["transactions"]["_links"]["first"]["href"].startswith("/v1/accounts/")  # links untouched
    card = next(a for a in bank.get("/v1/card-accounts").json()["cardAccounts"])
    cards = bank.get(f"/v1/card-accounts/{card['resourceId']}/transactions?bookingStatus=booked").json()
    booked = cards["cardTransactions"]["booked"]
    assert booked and all(t["transactionDate"].endswith("T00:00:00") for t in booked)


# --- BANK_SIM_BASE_PATH and BANK_SIM_LINKS --------------------------------------------------------------------


@pytest.fixture
def under_psd2(settings):
    """The bank's URLs built again with BANK_SIM_BASE_PATH=/psd2, and as they were afterwards."""
    from bank_simulator import urls

    settings.BANK_SIM_BASE_PATH = "/psd2"
    importlib.reload(urls)
    clear_url_caches()
    yield "/psd2"
    settings.BANK_SIM_BASE_PATH = ""
    importlib.reload(urls)
    clear_url_caches()


@pytest.mark.parametrize(
    ("links", "written"),
    [
        ("base-relative", "/v1/payments/"),
        ("root-relative", "/psd2/v1/payments/"),
        ("absolute", "http://testserver/psd2/v1/payments/"),
    ],
)
def test_under_a_base_path_links_are_written_as_the_setting_says(bank, under_psd2, settings, links, written):
    settings.BANK_SIM_LINKS = links
    pin_clock()
    assert bank.get("/v1/users").status_code == 404, "the API is no longer at the root"
    users = bank.get("/psd2/v1/users")
    assert users.status_code == 200, users.content
    identify_at = users.json()["_links"]["scaRedirect"]["href"]
    assert "/sca/authorize?" in identify_at and not identify_at.startswith("/"), "the SCA screens stay at the root"
    result = run_sca(Client(), identify_at, PRIVATE_1)
    bank.psu_id = result.params["psu-id"]
    debtor = account(PRIVATE_1, "Brukskonto")
    created = initiate(bank, body(debtor), path="/psd2" + CROSS)
    assert created.status_code == 201, created.content
    hrefs = [v["href"] for v in created.json()["_links"].values()]
    assert hrefs and all(h.startswith(written) for h in hrefs), hrefs
    status_href = created.json()["_links"]["status"]["href"]
    path = "/psd2" + status_href if links == "base-relative" else status_href.removeprefix("http://testserver")
    assert bank.get(path).json() == {"transactionStatus": "RCVD"}
    document = bank.client.get("/openapi.json").json()
    assert document["servers"][0]["url"].endswith("/psd2")


def test_without_a_base_path_root_relative_links_are_the_same_as_before(payer, debtor, settings):
    settings.BANK_SIM_LINKS = "root-relative"
    assert _created(payer, debtor)["_links"]["status"]["href"].startswith("/v1/payments/")


# --- BANK_SIM_DROP_PAYMENT_ANSWER: which answers are lost ------------------------------------------------------


def _lost(response) -> str | None:
    mark = response.wsgi_request.META.get(lost_answers.ENVIRON_KEY)
    return mark.mode if mark else None


def test_by_default_no_answer_is_lost(payer, debtor):
    assert [_lost(initiate(payer, body(debtor), query="?allowLogicalDuplicate=true")) for _ in range(3)] == [
        None,
        None,
        None,
    ]


def test_one_answer_in_every_n_is_lost_after_the_payment_is_stored(payer, debtor, settings):
    settings.BANK_SIM_DROP_PAYMENT_ANSWER = "reset"
    settings.BANK_SIM_DROP_PAYMENT_ANSWER_EVERY = 2
    answers = [initiate(payer, body(debtor), query="?allowLogicalDuplicate=true") for _ in range(4)]
    assert [a.status_code for a in answers] == [201] * 4
    assert [_lost(a) for a in answers] == [None, "reset", None, "reset"]
    assert Payment.objects.filter(payment_id__in=[a.json()["paymentId"] for a in answers]).count() == 4
    refused = initiate(payer, body(debtor, creditorName=None))
    assert refused.status_code == 400 and _lost(refused) is None, "a refusal stores nothing and is answered"


def test_the_sandbox_arms_the_next_answer_only(payer, debtor, settings):
    armed = payer.post("/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps({"mode": "tls"}))
    assert armed.status_code == 200, armed.content
    assert armed.json() == {"mode": "tls", "delaySeconds": settings.BANK_SIM_DROP_PAYMENT_ANSWER_DELAY}
    answers = [initiate(payer, body(debtor), query="?allowLogicalDuplicate=true") for _ in range(2)]
    assert [_lost(a) for a in answers] == ["tls", None]
    timed = payer.post(
        "/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps({"mode": "timeout", "delaySeconds": 3})
    )
    assert timed.json() == {"mode": "timeout", "delaySeconds": 3}
    marked = initiate(payer, body(debtor), query="?allowLogicalDuplicate=true")
    assert marked.wsgi_request.META[lost_answers.ENVIRON_KEY] == lost_answers.LostAnswer("timeout", 3)
    payer.post("/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps({"mode": "reset"}))
    disarmed = payer.post("/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps({"mode": "none"}))
    assert disarmed.status_code == 200
    assert _lost(initiate(payer, body(debtor), query="?allowLogicalDuplicate=true")) is None


@pytest.mark.parametrize(
    "payload", [{"mode": "drop"}, {"mode": "timeout", "delaySeconds": 0}, {"mode": "reset", "when": "now"}, []]
)
def test_arming_refuses_what_it_does_not_know(payer, payload):
    answer = payer.post("/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps(payload))
    assert answer.status_code == 400, answer.content


def test_arming_is_a_sandbox_operation(bank, settings):
    settings.BANK_SIM_SANDBOX = False
    answer = bank.post("/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps({"mode": "reset"}))
    assert answer.status_code == 404
    assert bank.post("/v1/sandbox/payment-authorisations/x", '{"action": "approve"}').status_code == 404


def test_the_sandbox_reset_disarms_and_restarts_the_count(payer, debtor, settings):
    settings.BANK_SIM_DROP_PAYMENT_ANSWER = "timeout"
    settings.BANK_SIM_DROP_PAYMENT_ANSWER_EVERY = 2
    assert _lost(initiate(payer, body(debtor))) is None  # one counted
    payer.post("/v1/sandbox/behaviour/drop-next-payment-answer", json.dumps({"mode": "reset"}))
    assert payer.post("/v1/sandbox/initialize", None).status_code == 200
    pin_clock()
    identify(payer, PRIVATE_1)
    debtor = account(PRIVATE_1, "Brukskonto")
    answers = [initiate(payer, body(debtor), query="?allowLogicalDuplicate=true") for _ in range(2)]
    assert [_lost(a) for a in answers] == [None, "timeout"]
