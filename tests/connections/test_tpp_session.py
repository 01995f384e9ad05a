"""The user's TPP-Session-ID and each redirect's own state; approval in the bank's app; a consent without
accounts and a context other than the one asked for, explained (the bank: tests/bankfake.py, behind the portal's
own client)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from connections import sca, sessions
from connections.models import (
    SCA_STATE_LIFETIME,
    TPP_SESSION_MARGIN,
    BankConnection,
    ConnectionState,
    ScaState,
    TppSession,
)
from core.bank import CALLBACK_PATH
from tests import bankfake
from tests.bank_factories import callback_params

pytestmark = pytest.mark.django_db


def _session_key(client) -> str:
    return client.session.session_key


def _state(user, client, **fields) -> ScaState:
    """A state made as the connect page makes it (with the user's TPP-Session-ID)."""
    return sca.sca_state_create(
        user=user,
        session_key=_session_key(client),
        purpose=fields.pop("purpose", "connect"),
        context=fields.pop("context", "PRIVATE"),
        **fields,
    )


# --- the TPP-Session-ID of a user ---------------------------------------------------------------------------


def test_one_tpp_session_id_for_the_hour_then_a_new_one(alice, bob):
    """The same one until an SCA starting now could come back after the hour (the margin): then a new one."""
    start = timezone.now()
    first = sessions.tpp_session_for(user=alice, now=start).session_id
    assert len(first) >= 43  # 256 random bits
    last_start = start + timedelta(hours=1) - TPP_SESSION_MARGIN
    assert TPP_SESSION_MARGIN > SCA_STATE_LIFETIME  # a callback comes at most that long after its start

    within = sessions.tpp_session_for(user=alice, now=last_start - timedelta(seconds=1)).session_id
    after = sessions.tpp_session_for(user=alice, now=last_start).session_id

    assert within == first and after != first
    assert sessions.tpp_session_for(user=bob, now=start).session_id not in {first, after}
    assert TppSession.objects.filter(user=alice).count() == 1


def test_the_hour_counts_from_the_first_sca_completed_in_the_session(alice):
    start = timezone.now()
    session_id = sessions.tpp_session_for(user=alice, now=start).session_id
    sca_at = start + timedelta(minutes=30)
    psu_id = str(uuid.uuid4())
    sessions.tpp_session_sca_completed(user=alice, tpp_session_id=session_id, psu_id=psu_id, now=sca_at)
    # A later SCA does not prolong the hour (the bank does not count an SCA it let hold).
    sessions.tpp_session_sca_completed(
        user=alice, tpp_session_id=session_id, psu_id=str(uuid.uuid4()), now=sca_at + timedelta(minutes=20)
    )

    last_start = sca_at + timedelta(hours=1) - TPP_SESSION_MARGIN
    assert sessions.tpp_session_for(user=alice, now=last_start - timedelta(seconds=1)).session_id == session_id
    assert sessions.tpp_session_known_psu(user=alice, now=start + timedelta(minutes=89)) == psu_id
    assert sessions.tpp_session_known_psu(user=alice, now=sca_at + timedelta(hours=1)) is None
    assert sessions.tpp_session_for(user=alice, now=sca_at + timedelta(hours=1)).session_id != session_id


def test_the_session_id_is_encrypted_at_rest(alice):
    session_id = sessions.tpp_session_for(user=alice).session_id
    stored = TppSession.objects.filter(user=alice).values_list("session_id", flat=True)
    from django.db import connection as db

    with db.cursor() as cursor:
        cursor.execute("SELECT session_id FROM connections_tppsession")  # the column as stored
        (raw,) = cursor.fetchone()
    assert list(stored) == [session_id] and session_id not in raw


# --- each redirect its own state --------------------------------------------------------------------------


CONSENTS = "/v1/bank-offered-consents"
SCA_REDIRECT = bankfake.consent_created()["_links"]["scaRedirect"]["href"]  # the fake bank's


def _account(name: str) -> dict:
    return bankfake.account(f"enc!!{name}=", iban="NO9386011117947", currency="NOK", name=name)


def _back(state: ScaState, psu_id: str, **params: str) -> dict[str, str]:
    return {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE", **params}


def test_two_scas_share_the_session_id_but_each_redirect_is_used_once(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    first, second = _state(alice, alice_client), _state(alice, alice_client)
    assert first.tpp_session_id == second.tpp_session_id and first.token != second.token

    assert alice_client.get(CALLBACK_PATH, _back(first, psu_id)).status_code == 302
    # The first redirect again, while the second SCA (same TPP-Session-ID) is open: refused, nothing spent.
    replay = alice_client.get(CALLBACK_PATH, _back(first, psu_id))
    assert replay.status_code == 400 and "already handled" in replay.content.decode()
    second.refresh_from_db()
    assert second.used_at is None
    assert alice_client.get(CALLBACK_PATH, _back(second, psu_id)).status_code == 302


def test_a_redirect_without_its_state_is_refused_even_with_the_right_session_id(fake_bank, alice, alice_client):
    state = _state(alice, alice_client)
    params = _back(state, str(uuid.uuid4()))
    del params["state"]

    response = alice_client.get(CALLBACK_PATH, params)

    assert response.status_code == 400 and not BankConnection.objects.exists()
    state.refresh_from_db()
    assert state.used_at is None


def test_a_state_with_another_session_id_is_refused_and_kept(fake_bank, alice, alice_client):
    state = _state(alice, alice_client)

    response = alice_client.get(CALLBACK_PATH, _back(state, str(uuid.uuid4()), **{"tpp-session-id": "x" * 43}))

    assert response.status_code == 400 and not BankConnection.objects.exists()
    state.refresh_from_db()
    assert state.used_at is None


def test_the_start_names_its_state_in_the_redirect_uri_and_sends_the_users_session_id(
    fake_bank, alice, alice_client
):
    response = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})

    assert response.status_code == 302 and response["Location"] == SCA_REDIRECT
    (start,) = fake_bank.sent("POST", CONSENTS)
    state = ScaState.objects.get(user=alice)
    sent = start.headers
    assert sent["tpp-redirect-uri"] == f"{settings.PORTAL_BASE_URL.rstrip('/')}{CALLBACK_PATH}?state={state.token}"
    assert sent["tpp-session-id"] == state.tpp_session_id == TppSession.objects.get(user=alice).session_id
    assert "tpp-redirect-preferred" not in sent and "psu-id" not in sent  # no SCA in the hour yet


def test_within_the_hour_a_private_connect_names_the_psu_of_the_sessions_sca(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    first = _state(alice, alice_client, purpose="users")
    assert alice_client.get(CALLBACK_PATH, _back(first, psu_id)).status_code == 302

    alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})

    (start,) = fake_bank.sent("POST", CONSENTS)
    assert start.headers["psu-id"] == psu_id and start.headers["tpp-session-id"] == first.tpp_session_id


# --- approval in the bank's app -----------------------------------------------------------------------------


def test_the_in_app_box_asks_the_bank_for_its_app(fake_bank, alice, alice_client):
    page = alice_client.get("/bank/connect/").content.decode()
    assert 'name="in_app"' in page and "Approve in my bank&#x27;s app instead of the browser" in page

    alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts", "in_app": "on"})

    assert fake_bank.sent("POST", CONSENTS)[-1].headers["tpp-redirect-preferred"] == "false"


def test_a_bank_that_answers_the_in_app_request_without_a_redirect_is_explained(fake_bank, alice, alice_client):
    fake_bank.answer("POST", CONSENTS, bankfake.Answer(201, bankfake.consent_created(None)))

    response = alice_client.post(
        "/bank/connect/", {"context": "PRIVATE", "access": "accounts", "in_app": "on"}, follow=True
    )

    body = response.content.decode()
    assert response.status_code == 200 and "does not offer approval in its app" in body
    assert ScaState.objects.get(user=alice).used_at is not None  # spent: nothing can come back for it


# --- what the bank's consent came to -----------------------------------------------------------------------


def test_a_consent_without_accounts_is_explained_and_not_shown_as_connected(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())  # the bank lists no account for it
    state = _state(alice, alice_client)

    response = alice_client.get(CALLBACK_PATH, _back(state, psu_id), follow=True)

    body = response.content.decode()
    assert "You did not choose any account at the bank, so nothing is connected." in body
    assert "Your bank is connected." not in body
    connection = BankConnection.objects.get(user=alice)
    assert connection.state == ConnectionState.NEEDS_RECONNECT
    page = alice_client.get("/bank/connections/").content.decode()
    assert "Use Reconnect and tick the accounts you want to share." in page
    assert ">Connected<" not in page and "None: no account was chosen at the bank" in page

    # Connecting again with accounts ticked connects it.
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    again = alice_client.get(CALLBACK_PATH, _back(_state(alice, alice_client), psu_id), follow=True)
    assert "Your bank is connected." in again.content.decode()
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE


def test_a_connection_with_accounts_gets_no_such_explanation(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]

    response = alice_client.get(CALLBACK_PATH, _back(_state(alice, alice_client), psu_id), follow=True)

    body = response.content.decode()
    assert "Your bank is connected." in body and "did not choose any account" not in body
    assert "You asked to connect" not in body  # the context asked for is the one chosen


def test_private_chosen_at_the_bank_after_asking_for_corporate_is_told(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    state = _state(alice, alice_client, context="CORPORATE")

    response = alice_client.get(CALLBACK_PATH, _back(state, psu_id, context="PRIVATE"), follow=True)

    body = response.content.decode()
    assert (
        "You asked to connect a company&#x27;s accounts, but at the bank you chose your private accounts." in body
    )
    assert "You are connected in private context." in body
    assert BankConnection.objects.get(user=alice).context == "PRIVATE"


def test_a_company_chosen_at_the_bank_after_asking_for_private_is_told(fake_bank, alice, alice_client):
    psu_id, company = str(uuid.uuid4()), str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Driftskonto")]
    fake_bank.agreements_of[psu_id] = [bankfake.agreement(company, "Havbruk Nord AS")]
    state = _state(alice, alice_client, context="PRIVATE")

    response = alice_client.get(
        CALLBACK_PATH, _back(state, psu_id, context="CORPORATE", **{"psu-corporate-id": company}), follow=True
    )

    body = response.content.decode()
    assert "You asked to connect your private accounts, but at the bank you chose a company." in body
    assert "You are connected in corporate context, for that company." in body
    assert BankConnection.objects.get(user=alice).context == "CORPORATE"
