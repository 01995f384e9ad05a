"""The SCA callback refuses every state it should not accept, and then stores nothing (no bank needed:
a refused state never reaches the bank)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from connections import sca
from connections.errors import ScaStateRejected
from connections.models import BankConnection, ConnectionEvent, ScaPurpose, ScaState
from core.bank import CALLBACK_PATH
from core.models import BankCall
from tests.bank_factories import BankConnectionFactory, ScaStateFactory


def _session_hash(client) -> str:
    return hashlib.sha256(client.session.session_key.encode()).hexdigest()


@pytest.fixture
def state(alice, alice_client) -> ScaState:
    """A fresh state alice started in alice_client's session."""
    return ScaStateFactory(user=alice, session_key_hash=_session_hash(alice_client))


def _params(state_token: str, **extra: str) -> dict[str, str]:
    """A success redirect naming the state ``state_token``, with the TPP-Session-ID sent with it (if any)."""
    state = ScaState.objects.filter(token=state_token).first()
    session = state.tpp_session_id if state is not None else "tpp-session-never-sent"
    return {
        "psu-id": str(uuid.uuid4()),
        "state": state_token,
        "tpp-session-id": session,
        "context": "PRIVATE",
        **extra,
    }


def _nothing_stored() -> bool:
    return (
        not BankConnection.objects.exists()
        and not ConnectionEvent.objects.exists()
        and not BankCall.objects.exists()
    )


def test_the_callback_url_is_the_redirect_uri_sent_to_the_bank():
    from django.urls import reverse

    assert reverse("bank-callback") == CALLBACK_PATH


def test_unknown_state_is_refused(alice_client):
    response = alice_client.get(CALLBACK_PATH, _params("never-issued-token"))

    assert response.status_code == 400 and "Location" not in response
    assert "do not recognise" in response.content.decode()
    assert _nothing_stored()


def test_another_users_state_is_refused_and_stays_unused(bob, bob_client, alice):
    alice_state = ScaStateFactory(user=alice, session_key_hash=_session_hash(bob_client))

    response = bob_client.get(CALLBACK_PATH, _params(alice_state.token))

    assert response.status_code == 400 and _nothing_stored()
    alice_state.refresh_from_db()
    assert alice_state.used_at is None


def test_a_state_from_another_browser_session_of_the_same_user_is_refused(alice):
    state = ScaStateFactory(user=alice, session_key_hash=hashlib.sha256(b"another-session").hexdigest())
    browser = Client()
    browser.force_login(alice)

    response = browser.get(CALLBACK_PATH, _params(state.token))

    assert response.status_code == 400 and _nothing_stored()


def test_a_state_older_than_ten_minutes_is_refused(alice_client, state):
    ScaState.objects.filter(pk=state.pk).update(created_at=timezone.now() - timedelta(minutes=10, seconds=1))

    response = alice_client.get(CALLBACK_PATH, _params(state.token))

    assert response.status_code == 400 and "expired" in response.content.decode()
    assert _nothing_stored()


def test_the_ten_minute_limit_is_exact(alice, alice_client, state):
    session_key = alice_client.session.session_key
    moment = state.created_at + timedelta(minutes=10)
    with pytest.raises(ScaStateRejected) as refused:
        sca.sca_state_consume(token=state.token, user=alice, session_key=session_key, now=moment)
    assert refused.value.reason == "expired"
    just_in_time = moment - timedelta(seconds=1)
    consumed = sca.sca_state_consume(token=state.token, user=alice, session_key=session_key, now=just_in_time)
    assert consumed.pk == state.pk and consumed.used_at == just_in_time


def test_a_used_state_cannot_be_consumed_again(alice, alice_client, state):
    session_key = alice_client.session.session_key
    sca.sca_state_consume(token=state.token, user=alice, session_key=session_key)
    with pytest.raises(ScaStateRejected) as refused:
        sca.sca_state_consume(token=state.token, user=alice, session_key=session_key)
    assert refused.value.reason == "used"


@pytest.mark.parametrize(
    "changes",
    [
        {"psu-id": "not-a-uuid"},
        {"psu-id": ""},
        {"psu-id": "12345678-1234-1234-1234-1234567890"},
        {"psu-id": "{12345678-1234-1234-1234-123456789012}"},
        {"context": "PERSONAL"},
        {"context": "CORPORATE"},  # corporate context without psu-corporate-id
        {"psu-corporate-id": str(uuid.uuid4())},  # private context with a corporate id
        {"tpp-session-id": ""},
        {"tpp-session-id": "x" * 65},
        {"tpp-session-id": "bad token with spaces"},
    ],
)
def test_malformed_parameters_are_refused_and_the_state_is_kept(alice_client, state, changes):
    params = {**_params(state.token), **changes}

    response = alice_client.get(CALLBACK_PATH, params)

    assert response.status_code == 400 and "Location" not in response
    assert _nothing_stored()
    state.refresh_from_db()
    assert state.used_at is None


def test_a_failure_redirect_explains_the_code_and_spends_and_stores_nothing(alice, alice_client, state):
    response = alice_client.get(
        CALLBACK_PATH,
        {"system": "SANDBOX-SCA", "status": "401", "code": "SCA_INVALID", "message": "The PSU cancelled."},
    )

    assert response.status_code == 200 and "Location" not in response
    body = response.content.decode()
    assert "The approval at the bank was stopped before it was completed." in body
    assert "The PSU cancelled." not in body and "SANDBOX-SCA" not in body
    # The code and status only for support, folded away under "Details".
    start = body.index('<details class="technical-details">')
    end = body.index("</details>", start)
    before, details, after = body[:start], body[start:end], body[end:]
    assert "SCA_INVALID" not in before + after and "401" not in before + after
    assert "<summary>Details</summary>" in details
    assert "<dt>Code</dt><dd><code>SCA_INVALID</code></dd>" in details
    assert "<dt>Status</dt><dd><code>401</code></dd>" in details
    assert _nothing_stored()
    state.refresh_from_db()
    assert state.used_at is None  # the bank's real redirect may still come: it is still accepted
    session_key = alice_client.session.session_key
    assert sca.sca_state_consume(token=state.token, user=alice, session_key=session_key).pk == state.pk


def test_a_failure_redirect_never_shows_text_from_the_address(alice_client, state):
    """The message, system and an unknown code are anyone's words: none reaches the page."""
    planted = "Call +47 99 99 99 99 to unlock your account"
    response = alice_client.get(
        CALLBACK_PATH, {"code": "<b>PHISH</b>", "message": planted, "system": planted, "status": "401"}
    )

    body = response.content.decode()
    assert response.status_code == 200 and planted not in body and "PHISH" not in body
    assert "The bank did not complete the approval." in body


def test_failure_parameters_win_over_success_parameters(alice_client, state):
    response = alice_client.get(CALLBACK_PATH, {**_params(state.token), "code": "SCA_EXPIRED", "status": "401"})

    assert response.status_code == 200 and _nothing_stored()
    state.refresh_from_db()
    assert state.used_at is None


def test_a_signed_out_visitor_gets_a_page_not_a_redirect(client, alice):
    state = ScaStateFactory(user=alice)

    response = client.get(CALLBACK_PATH, {**_params(state.token), "next": "https://evil.example/"})

    assert response.status_code == 400 and "Location" not in response
    assert "not signed in" in response.content.decode()
    assert _nothing_stored()


def test_refused_callback_with_a_next_parameter_does_not_redirect(alice_client):
    response = alice_client.get(CALLBACK_PATH, {**_params("unknown"), "next": "https://evil.example/"})

    assert response.status_code == 400 and "Location" not in response


def test_reconnect_as_another_bank_user_changes_nothing(alice, alice_client, fake_bank):
    connection = BankConnectionFactory(user=alice)
    original = (connection.psu_id, connection.consent_valid_until, connection.state)
    state = ScaStateFactory(
        user=alice,
        session_key_hash=_session_hash(alice_client),
        purpose=ScaPurpose.RECONNECT,
        connection=connection,
    )
    params = _params(state.token)  # a different psu-id

    response = alice_client.get(CALLBACK_PATH, params)

    assert response.status_code == 400 and "another user" in response.content.decode()
    connection.refresh_from_db()
    assert (connection.psu_id, connection.consent_valid_until, connection.state) == original
    assert not ConnectionEvent.objects.exists()
    # The bank confirms the PSU-ID of the redirect in the SCA's session, and is asked nothing else.
    asked = [
        (r.method, r.path, r.headers.get("psu-id"), r.headers.get("tpp-session-id")) for r in fake_bank.received
    ]
    assert asked == [("GET", "/v1/agreements", params["psu-id"], state.tpp_session_id)]
    assert list(BankCall.objects.values_list("path_template", flat=True)) == ["/v1/agreements"]


def test_state_tokens_carry_at_least_128_random_bits(alice):
    tokens = {
        sca.sca_state_create(user=alice, session_key="s" * 32, purpose="connect", context="PRIVATE").token
        for _ in range(50)
    }
    assert len(tokens) == 50
    assert all(len(t) >= 43 for t in tokens)  # token_urlsafe(32): 256 bits in 43 base64url characters


def test_the_banks_back_link_without_an_answer_says_where_things_are_and_spends_nothing(alice_client, state):
    """The "Back to" link of a bank's SCA screen that is already finished: the redirect URI with the portal's own
    state only. Nothing accepted, the state not used; never cached, as every answer of the callback."""
    response = alice_client.get(CALLBACK_PATH, {"state": state.token})

    assert response.status_code == 200
    body = response.content.decode()
    assert "Back from the bank" in body and "The approval at the bank is finished" in body
    assert 'href="/payments/"' in body and 'href="/bank/connections/"' in body
    assert "no-store" in response["Cache-Control"]
    state.refresh_from_db()
    assert state.used_at is None and _nothing_stored()


@pytest.mark.parametrize("query", [{}, {"state": "x"}, {"error": "access_denied"}])
def test_no_answer_of_the_callback_is_cached(alice_client, client, query):
    for browser in (alice_client, client):
        assert "no-store" in browser.get(CALLBACK_PATH, query)["Cache-Control"]
