"""The user's TPP-Session-ID and each redirect's own state; approval in the bank's app; a consent without
accounts and a context other than the one asked for, explained (the bank stood in by a client that answers as
the real one would)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.utils import timezone

from connections import services
from connections.models import (
    SCA_STATE_LIFETIME,
    TPP_SESSION_MARGIN,
    BankConnection,
    ConnectionState,
    ScaState,
    TppSession,
)
from tests.bank_factories import callback_params
from tpp_portal.bank import CALLBACK_PATH
from xs2a import models as bank_models

pytestmark = pytest.mark.django_db


def _session_key(client) -> str:
    return client.session.session_key


def _state(user, client, **fields) -> ScaState:
    """A state made as the connect page makes it (with the user's TPP-Session-ID)."""
    return services.sca_state_create(
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
    first = services.tpp_session_for(user=alice, now=start).session_id
    assert len(first) >= 43  # 256 random bits
    last_start = start + timedelta(hours=1) - TPP_SESSION_MARGIN
    assert TPP_SESSION_MARGIN > SCA_STATE_LIFETIME  # a callback comes at most that long after its start

    within = services.tpp_session_for(user=alice, now=last_start - timedelta(seconds=1)).session_id
    after = services.tpp_session_for(user=alice, now=last_start).session_id

    assert within == first and after != first
    assert services.tpp_session_for(user=bob, now=start).session_id not in {first, after}
    assert TppSession.objects.filter(user=alice).count() == 1


def test_the_hour_counts_from_the_first_sca_completed_in_the_session(alice):
    start = timezone.now()
    session_id = services.tpp_session_for(user=alice, now=start).session_id
    sca_at = start + timedelta(minutes=30)
    psu_id = str(uuid.uuid4())
    services.tpp_session_sca_completed(user=alice, tpp_session_id=session_id, psu_id=psu_id, now=sca_at)
    # A later SCA does not prolong the hour (the bank does not count an SCA it let hold).
    services.tpp_session_sca_completed(
        user=alice, tpp_session_id=session_id, psu_id=str(uuid.uuid4()), now=sca_at + timedelta(minutes=20)
    )

    last_start = sca_at + timedelta(hours=1) - TPP_SESSION_MARGIN
    assert services.tpp_session_for(user=alice, now=last_start - timedelta(seconds=1)).session_id == session_id
    assert services.tpp_session_known_psu(user=alice, now=start + timedelta(minutes=89)) == psu_id
    assert services.tpp_session_known_psu(user=alice, now=sca_at + timedelta(hours=1)) is None
    assert services.tpp_session_for(user=alice, now=sca_at + timedelta(hours=1)).session_id != session_id


def test_the_session_id_is_encrypted_at_rest(alice):
    session_id = services.tpp_session_for(user=alice).session_id
    stored = TppSession.objects.filter(user=alice).values_list("session_id", flat=True)
    from django.db import connection as db

    with db.cursor() as cursor:
        cursor.execute("SELECT session_id FROM connections_tppsession")  # the column as stored
        (raw,) = cursor.fetchone()
    assert list(stored) == [session_id] and session_id not in raw


# --- each redirect its own state --------------------------------------------------------------------------


class _NoTransactions:
    """The bank's transaction pages of an account without transactions: one page, complete, empty."""

    complete, count = True, 1

    def __iter__(self):
        return iter(())


def _no_transactions(resource_id, *, psu, **kw):
    return _NoTransactions()


@pytest.fixture
def bank(monkeypatch):
    """The bank's answers: accounts by PSU-ID, agreements by PSU-ID, and the SCA starts it was asked for."""
    stand_in = SimpleNamespace(accounts={}, agreements={}, starts=[], sca_redirect="https://bank.test/sca?s=1")

    def start(**kwargs):
        stand_in.starts.append(kwargs)
        links = {"scaRedirect": {"href": stand_in.sca_redirect}} if stand_in.sca_redirect else {}
        return bank_models.RedirectResponse.from_json({"_links": links})

    class Client:
        accounts = SimpleNamespace(
            list=lambda *, psu, **kw: stand_in.accounts.get(psu.psu_id, []),
            balances=lambda resource_id, *, psu: bank_models.AccountBalances.from_json({"balances": []}),
            transaction_pages=_no_transactions,
        )
        card_accounts = SimpleNamespace(
            list=lambda *, psu, **kw: [], balances=accounts.balances, transaction_pages=_no_transactions
        )
        consents = SimpleNamespace(
            start=start, users=start, agreements=lambda *, psu: stand_in.agreements.get(psu.psu_id, [])
        )

    monkeypatch.setattr("connections.services.bank_client", Client)
    monkeypatch.setattr("accounts.services.bank_client", Client)
    monkeypatch.setattr("accounts.refresh.bank_client", Client)  # the transactions read after the consent
    return stand_in


def _account(name: str) -> bank_models.Account:
    return bank_models.Account(resource_id=f"enc!!{name}=", iban="NO9386011117947", currency="NOK", name=name)


def _back(state: ScaState, psu_id: str, **params: str) -> dict[str, str]:
    return {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE", **params}


def test_two_scas_share_the_session_id_but_each_redirect_is_used_once(bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    bank.accounts[psu_id] = [_account("Brukskonto")]
    first, second = _state(alice, alice_client), _state(alice, alice_client)
    assert first.tpp_session_id == second.tpp_session_id and first.token != second.token

    assert alice_client.get(CALLBACK_PATH, _back(first, psu_id)).status_code == 302
    # The first redirect again, while the second SCA (same TPP-Session-ID) is open: refused, nothing spent.
    replay = alice_client.get(CALLBACK_PATH, _back(first, psu_id))
    assert replay.status_code == 400 and "already handled" in replay.content.decode()
    second.refresh_from_db()
    assert second.used_at is None
    assert alice_client.get(CALLBACK_PATH, _back(second, psu_id)).status_code == 302


def test_a_redirect_without_its_state_is_refused_even_with_the_right_session_id(bank, alice, alice_client):
    state = _state(alice, alice_client)
    params = _back(state, str(uuid.uuid4()))
    del params["state"]

    response = alice_client.get(CALLBACK_PATH, params)

    assert response.status_code == 400 and not BankConnection.objects.exists()
    state.refresh_from_db()
    assert state.used_at is None


def test_a_state_with_another_session_id_is_refused_and_kept(bank, alice, alice_client):
    state = _state(alice, alice_client)

    response = alice_client.get(CALLBACK_PATH, _back(state, str(uuid.uuid4()), **{"tpp-session-id": "x" * 43}))

    assert response.status_code == 400 and not BankConnection.objects.exists()
    state.refresh_from_db()
    assert state.used_at is None


def test_the_start_names_its_state_in_the_redirect_uri_and_sends_the_users_session_id(bank, alice, alice_client):
    response = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})

    assert response.status_code == 302 and response["Location"] == bank.sca_redirect
    (start,) = bank.starts
    state = ScaState.objects.get(user=alice)
    assert start["redirect_uri"] == f"{settings.PORTAL_BASE_URL.rstrip('/')}{CALLBACK_PATH}?state={state.token}"
    assert start["tpp_session_id"] == state.tpp_session_id == TppSession.objects.get(user=alice).session_id
    assert start["redirect_preferred"] is None and start["psu"].psu_id is None  # no SCA in the hour yet


def test_within_the_hour_a_private_connect_names_the_psu_of_the_sessions_sca(bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    bank.accounts[psu_id] = [_account("Brukskonto")]
    first = _state(alice, alice_client, purpose="users")
    assert alice_client.get(CALLBACK_PATH, _back(first, psu_id)).status_code == 302

    alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})

    (start,) = bank.starts
    assert start["psu"].psu_id == psu_id and start["tpp_session_id"] == first.tpp_session_id


# --- approval in the bank's app -----------------------------------------------------------------------------


def test_the_in_app_box_asks_the_bank_for_its_app(bank, alice, alice_client):
    page = alice_client.get("/bank/connect/").content.decode()
    assert 'name="in_app"' in page and "Approve in my bank&#x27;s app instead of the browser" in page

    alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts", "in_app": "on"})

    assert bank.starts[-1]["redirect_preferred"] is False


def test_a_bank_that_answers_the_in_app_request_without_a_redirect_is_explained(bank, alice, alice_client):
    bank.sca_redirect = None

    response = alice_client.post(
        "/bank/connect/", {"context": "PRIVATE", "access": "accounts", "in_app": "on"}, follow=True
    )

    body = response.content.decode()
    assert response.status_code == 200 and "does not offer approval in its app" in body
    assert ScaState.objects.get(user=alice).used_at is not None  # spent: nothing can come back for it


# --- what the bank's consent came to -----------------------------------------------------------------------


def test_a_consent_without_accounts_is_explained_and_not_shown_as_connected(bank, alice, alice_client):
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
    bank.accounts[psu_id] = [_account("Brukskonto")]
    again = alice_client.get(CALLBACK_PATH, _back(_state(alice, alice_client), psu_id), follow=True)
    assert "Your bank is connected." in again.content.decode()
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE


def test_a_connection_with_accounts_gets_no_such_explanation(bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    bank.accounts[psu_id] = [_account("Brukskonto")]

    response = alice_client.get(CALLBACK_PATH, _back(_state(alice, alice_client), psu_id), follow=True)

    body = response.content.decode()
    assert "Your bank is connected." in body and "did not choose any account" not in body
    assert "You asked to connect" not in body  # the context asked for is the one chosen


def test_private_chosen_at_the_bank_after_asking_for_corporate_is_told(bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    bank.accounts[psu_id] = [_account("Brukskonto")]
    state = _state(alice, alice_client, context="CORPORATE")

    response = alice_client.get(CALLBACK_PATH, _back(state, psu_id, context="PRIVATE"), follow=True)

    body = response.content.decode()
    assert (
        "You asked to connect a company&#x27;s accounts, but at the bank you chose your private accounts." in body
    )
    assert "You are connected in private context." in body
    assert BankConnection.objects.get(user=alice).context == "PRIVATE"


def test_a_company_chosen_at_the_bank_after_asking_for_private_is_told(bank, alice, alice_client):
    psu_id, company = str(uuid.uuid4()), str(uuid.uuid4())
    bank.accounts[psu_id] = [_account("Driftskonto")]
    bank.agreements[psu_id] = [bank_models.Agreement(id=company, name="Havbruk Nord AS")]
    state = _state(alice, alice_client, context="PRIVATE")

    response = alice_client.get(
        CALLBACK_PATH, _back(state, psu_id, context="CORPORATE", **{"psu-corporate-id": company}), follow=True
    )

    body = response.content.decode()
    assert "You asked to connect your private accounts, but at the bank you chose a company." in body
    assert "You are connected in corporate context, for that company." in body
    assert BankConnection.objects.get(user=alice).context == "CORPORATE"
