"""SCA screens, consents, PSU-IDs and TPP sessions (spec sections 1, 3, 5, 6)."""

from __future__ import annotations

import json
import re
import uuid

from django.test import Client

from bank_simulator import services
from bank_simulator.models import Consent, ConsentStatus, ScaSession, TppSession
from tests.bank_simulator.conftest import (
    CORPORATE_1,
    PRIVATE_1,
    PRIVATE_2,
    Bank,
    accounts_of,
    error_code,
    form_accounts,
    form_agreements,
    give_consent,
    redirect_params,
    run_sca,
    sca_path,
)


def _start(bank: Bank, **headers: str) -> str:
    response = bank.post("/v1/bank-offered-consents", "{}", headers=headers or None)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["_links"]["scaRedirect"]["verbs"] == ["GET"]
    return body["_links"]["scaRedirect"]["href"]


def _advance(bank: Bank, seconds: int) -> None:
    response = bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": seconds}))
    assert response.status_code == 200, response.content


def test_accounts_without_psu_id_answer_401_with_sca_redirect(bank):
    response = bank.get("/v1/accounts")
    assert response.status_code == 401
    assert error_code(response) == "CONSENT_UNKNOWN"
    href = response.json()["_links"]["scaRedirect"]["href"]
    assert href.startswith("http://127.0.0.1:8001/sca/authorize?state=") or "/sca/authorize?state=" in href
    # The redirect of a 401 is a working consent flow.
    result = run_sca(Client(), href, PRIVATE_1)
    bank.psu_id = result.params["psu-id"]
    assert len(accounts_of(bank)) == 2


def test_private_consent_flow_redirects_with_psu_id_session_and_context(bank):
    href = _start(bank, **{"PSU-Context": "PRIVATE"})
    assert "context=PRIVATE" in href
    result = run_sca(Client(), href, PRIVATE_1)
    params = result.params
    uuid.UUID(params["psu-id"])
    assert params["tpp-session-id"] == bank.session_id
    assert params["context"] == "PRIVATE"
    assert "psu-corporate-id" not in params
    assert params["flow"] == "abc"  # the TPP's own query parameters are kept
    bank.psu_id = params["psu-id"]
    names = set(accounts_of(bank))
    assert names == {"Brukskonto", "Høyrentekonto"}
    cards = bank.get("/v1/card-accounts").json()["cardAccounts"]
    assert [c["name"] for c in cards] == ["Mastercard Gull"]


def test_psu_id_is_persistent_per_tpp_and_customer(bank):
    first = give_consent(bank, PRIVATE_1).params["psu-id"]
    again = give_consent(bank, PRIVATE_1).params["psu-id"]
    bank.psu_id = None  # another PSU at the same TPP
    other = give_consent(bank, PRIVATE_2).params["psu-id"]
    assert first == again != other


def test_consent_covers_only_chosen_accounts_and_preselects_shared_ones(bank):
    href = _start(bank)
    browser = Client()
    path = sca_path(href)
    browser.get(path)
    browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    page = browser.post(
        path, {"agreement": form_agreements(browser.get(path).content.decode())[0], "action": "context"}
    )
    offered = form_accounts(page.content.decode())
    assert len(offered) == 3 and not any(offered.values())  # nothing shared yet
    first = next(iter(offered))
    params = redirect_params(browser.post(path, {"account": [first], "action": "approve"}))
    bank.psu_id = params["psu-id"]
    accounts = bank.get("/v1/accounts").json()["accounts"]
    assert [a["resourceId"] for a in accounts] == [first]
    # Another account of the same customer is refused.
    other = next(r for r in offered if r != first)
    response = bank.get(f"/v1/accounts/{other}/balances")
    assert response.status_code == 403
    assert error_code(response) == "CONSENT_INVALID"
    # A second consent shows the shared account pre-selected.
    result = run_sca(Client(), _start(bank), PRIVATE_1, all_accounts=False, accounts=[first])
    assert form_accounts(result.consent_screen) == {r: r == first for r in offered}


def test_unknown_identity_number_is_refused_then_fails_cleanly(bank):
    href = _start(bank)
    browser = Client()
    path = sca_path(href)
    for _ in range(2):
        page = browser.post(path, {"identity": "01019000083", "action": "identify"})
        assert page.status_code == 400
        assert "Unknown national identity number" in page.content.decode()
    params = redirect_params(browser.post(path, {"identity": "99999999999", "action": "identify"}))
    assert params["code"] == "PSU_CREDENTIALS_INVALID"
    assert params["status"] == "401"
    assert params["system"] and params["message"]
    assert "psu-id" not in params


def test_cancel_redirects_with_the_error_parameters(bank):
    href = _start(bank)
    browser = Client()
    path = sca_path(href)
    browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    params = redirect_params(browser.post(path, {"action": "cancel"}))
    assert params["code"] == "SCA_INVALID"
    assert params["status"] == "401"
    assert params["message"] == "The PSU cancelled the authentication."


def test_a_finished_sca_cannot_be_used_again(bank):
    href = _start(bank)
    run_sca(Client(), href, PRIVATE_1)
    again = Client().get(sca_path(href))
    assert again.status_code == 409
    assert "You have already approved this" in again.content.decode()
    posted = Client().post(sca_path(href), {"identity": PRIVATE_1, "action": "identify"})
    assert posted.status_code == 409
    assert Consent.objects.count() == 1


def test_an_unknown_sca_state_shows_an_error_page(bank):
    response = Client().get("/sca/authorize?state=nonsense")
    assert response.status_code == 404
    assert "SCA_NOT_FOUND" in response.content.decode()


def test_an_expired_sca_fails_with_sca_expired(bank):
    href = _start(bank)
    _advance(bank, 16 * 60)
    params = redirect_params(Client().get(sca_path(href)))
    assert params["code"] == "SCA_EXPIRED"


def test_corporate_flow_gives_psu_corporate_id(bank):
    result = give_consent(bank, CORPORATE_1)
    assert result.params["context"] == "CORPORATE"
    corporate_id = result.params["psu-corporate-id"]
    uuid.UUID(corporate_id)
    assert set(accounts_of(bank)) == {"Driftskonto", "Skattetrekkskonto"}
    agreements = bank.get("/v1/agreements").json()["agreements"]
    assert [a["id"] for a in agreements] == [corporate_id]


def test_a_private_person_may_choose_a_corporate_agreement(bank):
    href = _start(bank)
    browser = Client()
    path = sca_path(href)
    page = browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    html = page.content.decode()
    assert "PRIVATE - my own accounts" in html and "CORPORATE - Fjellbygg" in html
    result = run_sca(Client(), _start(bank), PRIVATE_1, agreement_index=1)
    assert result.params["context"] == "CORPORATE"
    bank.psu_id, bank.corporate_id = result.params["psu-id"], result.params["psu-corporate-id"]
    assert set(accounts_of(bank)) == {"Driftskonto", "Skattetrekkskonto"}
    # The same PSU without PSU-Corporate-ID is in its private context, without a private consent yet.
    bank.corporate_id = None
    response = bank.get("/v1/accounts")
    assert response.status_code == 401
    assert "scaRedirect" in response.json()["_links"]


def test_agreements_lists_corporate_agreements_of_a_known_psu(bank):
    give_consent(bank, PRIVATE_1)
    agreements = bank.get("/v1/agreements").json()["agreements"]
    assert [a["name"] for a in agreements] == ["Fjellbygg Entreprenør AS - nettbank bedrift"]
    # A consent flow started with the chosen agreement pre-selects it.
    bank.corporate_id = agreements[0]["id"]
    response = bank.get("/v1/accounts")
    assert response.status_code == 401
    href = response.json()["_links"]["scaRedirect"]["href"]
    browser = Client()
    browser.post(sca_path(href), {"identity": PRIVATE_1, "action": "identify"})
    assert ScaSession.objects.get(token=href.split("state=")[1].split("&")[0]).requested_agreement is not None
    bank.psu_id = None
    bank.corporate_id = None
    assert bank.get("/v1/agreements").status_code == 400


def test_consent_expires_180_days_after_sca(private_bank):
    assert private_bank.get("/v1/accounts").status_code == 200
    private_bank.session_id = None  # after the SCA's hour the TPP reads outside its TPP-Session-ID
    _advance(private_bank, 179 * 86400)
    assert private_bank.get("/v1/accounts").status_code == 200
    _advance(private_bank, 86400 + 60)
    response = private_bank.get("/v1/accounts")
    assert response.status_code == 401
    assert error_code(response) == "CONSENT_EXPIRED"
    assert "scaRedirect" in response.json()["_links"]
    assert Consent.objects.get().status == ConsentStatus.EXPIRED


def test_revoked_consent_gives_403_consent_unknown(private_bank):
    customers = private_bank.get("/v1/sandbox/customers").json()
    customer_id = next(c["customerId"] for c in customers if c["customerNumber"] == PRIVATE_1)
    response = private_bank.delete(f"/v1/sandbox/customers/{customer_id}/consents")
    assert response.json() == {"revokedConsents": 1}
    response = private_bank.get("/v1/accounts")
    assert response.status_code == 403
    assert error_code(response) == "CONSENT_UNKNOWN"


def test_consents_endpoint_is_answered_as_removed(bank):
    response = bank.post("/v1/consents", '{"access":{}}')
    assert response.status_code == 410
    assert "bank-offered-consents" in response.json()["tppMessages"][0]["text"]


def test_users_answers_200_with_sca_redirect_and_gives_a_psu_id(bank):
    response = bank.get("/v1/users")
    assert response.status_code == 200
    href = response.json()["_links"]["scaRedirect"]["href"]
    browser = Client()
    path = sca_path(href)
    browser.post(path, {"identity": PRIVATE_2, "action": "identify"})
    page = browser.post(
        path, {"agreement": form_agreements(browser.get(path).content.decode())[0], "action": "context"}
    )
    assert "Identify yourself" in page.content.decode()
    params = redirect_params(browser.post(path, {"action": "approve"}))
    assert params["context"] == "PRIVATE"
    # The same customer through a consent gets the same PSU-ID.
    assert give_consent(bank, PRIVATE_2).params["psu-id"] == params["psu-id"]


def _identity_asked(bank: Bank) -> bool:
    href = _start(bank)
    return 'name="identity"' in Client().get(sca_path(href)).content.decode()


def test_sca_within_a_tpp_session_holds_one_hour(bank):
    give_consent(bank, PRIVATE_1)
    assert not _identity_asked(bank)  # same TPP-Session-ID and PSU-ID: identification is skipped
    _advance(bank, 3601)
    assert _identity_asked(bank)


def test_a_new_sessions_completed_sca_invalidates_the_old_one(bank):
    give_consent(bank, PRIVATE_1)
    old_session = bank.session_id
    bank.session_id = str(uuid.uuid4())
    href = _start(bank)
    # Aborted in the new session: the old one stays valid.
    browser = Client()
    browser.post(sca_path(href), {"identity": PRIVATE_1, "action": "identify"})
    redirect_params(browser.post(sca_path(href), {"action": "cancel"}))
    bank.session_id = old_session
    assert not _identity_asked(bank)
    # Completed in the new session: the old one needs SCA again.
    bank.session_id = str(uuid.uuid4())
    give_consent(bank, PRIVATE_1)
    bank.session_id = old_session
    assert _identity_asked(bank)
    assert TppSession.objects.filter(tpp_session_id=old_session, invalidated_at__isnull=False).exists()


def test_identity_must_match_the_psu_id_of_the_request(bank):
    give_consent(bank, PRIVATE_1)
    bank.session_id = str(uuid.uuid4())  # a new session: identification is asked
    href = _start(bank)
    page = Client().post(sca_path(href), {"identity": PRIVATE_2, "action": "identify"})
    assert page.status_code == 400
    assert "does not belong to the user" in page.content.decode()


def test_consent_service_keeps_one_valid_consent_per_agreement(bank):
    give_consent(bank, PRIVATE_1)
    give_consent(bank, PRIVATE_1)
    statuses = sorted(Consent.objects.values_list("status", flat=True))
    assert statuses == [ConsentStatus.REPLACED, ConsentStatus.VALID]
    consent = Consent.objects.get(status=ConsentStatus.VALID)
    assert [e.to_status for e in consent.events.all()] == [ConsentStatus.VALID]
    assert services.CONSENT_VALIDITY.days == 180
    assert (consent.valid_until - consent.sca_completed_at).days == 180


# --- DELETE /v1/bank-offered-consents: the TPP ends its consent ----------------------------------------------

CONSENTS = "/v1/bank-offered-consents"


def test_the_tpp_ends_its_consent(private_bank):
    assert private_bank.get("/v1/accounts").status_code == 200
    response = private_bank.delete(CONSENTS)
    assert response.status_code == 204 and response.content == b""
    consent = Consent.objects.get(status=ConsentStatus.TERMINATED_BY_TPP)
    assert [e.to_status for e in consent.events.all()] == [ConsentStatus.VALID, ConsentStatus.TERMINATED_BY_TPP]
    # Account reads answer as for no consent: 401 with a scaRedirect that starts a new one.
    for path in ("/v1/accounts", "/v1/card-accounts"):
        response = private_bank.get(path)
        assert response.status_code == 401, path
        assert error_code(response) == "CONSENT_UNKNOWN"
        assert "ended this consent" in response.json()["tppMessages"][0]["text"]
        assert "scaRedirect" in response.json()["_links"]
    # Nothing left to end.
    again = private_bank.delete(CONSENTS)
    assert again.status_code == 403 and error_code(again) == "CONSENT_UNKNOWN"
    # A new consent through SCA gives access again; nothing is pre-selected from the ended one.
    result = give_consent(private_bank, PRIVATE_1)
    assert not any(form_accounts(result.consent_screen).values())
    assert private_bank.get("/v1/accounts").status_code == 200


def test_ending_a_corporate_consent_needs_psu_corporate_id_and_ends_only_that_one(bank):
    """Private Customer 1 has a private consent and one for the company's agreement."""
    give_consent(bank, PRIVATE_1)
    corporate = run_sca(Client(), _start(bank), PRIVATE_1, agreement_index=1).params
    bank.corporate_id = corporate["psu-corporate-id"]
    assert bank.delete(CONSENTS).status_code == 204
    assert bank.get("/v1/accounts").status_code == 401
    bank.corporate_id = None
    assert bank.get("/v1/accounts").status_code == 200  # the private consent stands
    # A corporate customer must name its agreement (spec 5.6).
    company = Bank(Client(), bank.signer)
    give_consent(company, CORPORATE_1)
    company.corporate_id = None
    response = company.delete(CONSENTS)
    assert response.status_code == 400 and error_code(response) == "HTTP_HEADER_REQUIRED"
    assert response.json()["tppMessages"][0]["path"] == "PSU-Corporate-ID"


def test_ending_a_consent_needs_a_known_psu_id_of_this_tpp(bank, dev_ca):
    response = bank.delete(CONSENTS)
    assert response.status_code == 400 and response.json()["tppMessages"][0]["path"] == "PSU-ID"
    bank.psu_id = str(uuid.uuid4())
    response = bank.delete(CONSENTS)
    assert response.status_code == 401 and error_code(response) == "PSU_CREDENTIALS_INVALID"
    # Another TPP sending this TPP's PSU-ID ends nothing.
    from cryptography import x509

    from devtools import pki
    from tests.bank_simulator.conftest import Signer

    give_consent(bank, PRIVATE_1)
    other = pki.issue_qseal(
        dev_ca,
        x509.Name(
            [
                x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, "Other TPP AS"),
                x509.NameAttribute(x509.NameOID.ORGANIZATION_IDENTIFIER, "PSDNO-FSA-111222333"),
            ]
        ),
    )
    response = bank.delete(CONSENTS, signer=Signer(other.key, other.certificate))
    assert response.status_code == 401
    assert Consent.objects.get().status == ConsentStatus.VALID


def test_a_bank_that_does_not_offer_consent_deletion_answers_405(private_bank, settings):
    settings.BANK_SIM_CONSENT_DELETE = False
    response = private_bank.delete(CONSENTS)
    assert response.status_code == 405
    assert error_code(response) == "SERVICE_INVALID"
    assert response["Allow"] == "POST"
    assert Consent.objects.get().status == ConsentStatus.VALID
    assert private_bank.get("/v1/accounts").status_code == 200


def test_a_consent_without_any_account_is_refused_at_the_screen(bank):
    href = _start(bank)
    browser = Client()
    path = sca_path(href)
    browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    page = browser.post(
        path, {"agreement": form_agreements(browser.get(path).content.decode())[0], "action": "context"}
    )
    offered = form_accounts(page.content.decode())
    refused = browser.post(path, {"action": "approve"})  # no account ticked
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "Choose at least one account to share" in html
    assert 'name="account"' in html  # the same screen, to tick one or cancel
    assert not Consent.objects.exists()
    session = ScaSession.objects.get(token=href.split("state=")[1].split("&")[0])
    assert session.status == "contextChosen" and session.psu is None
    # Ticking one now gives the consent.
    params = redirect_params(browser.post(path, {"account": [next(iter(offered))], "action": "approve"}))
    bank.psu_id = params["psu-id"]
    assert bank.get("/v1/accounts").status_code == 200


def _checked_agreement(html: str) -> str:
    match = re.search(
        r'<input type="radio" name="agreement" value="([^"]+)" checked>\s*(.*?)\s*</label>', html, re.S
    )
    assert match, html
    return match[2]


def test_the_act_as_screen_selects_the_context_the_tpp_asked_for(bank):
    """A person with their own accounts and a company's agreement: the screen selects what PSU-Context asked
    for, the company's agreement for CORPORATE (it selected the private one), the private one otherwise."""
    for headers, expected in (
        ({"PSU-Context": "CORPORATE"}, "CORPORATE - Fjellbygg"),
        ({"PSU-Context": "PRIVATE"}, "PRIVATE - my own accounts"),
        ({}, "PRIVATE - my own accounts"),
    ):
        page = Client().post(sca_path(_start(bank, **headers)), {"identity": PRIVATE_1, "action": "identify"})
        assert page.status_code == 200
        assert _checked_agreement(page.content.decode()).startswith(expected), headers
