"""A PSU-ID is believed only when the bank confirms it in the SCA's own TPP session (spec sections 3 and 5.8),
before it is bound to anyone. The fake bank (tests/bankfake.py) keeps the rule the sandbox bank keeps: a read
with the PSU present naming a TPP-Session-ID is answered only for the PSU who completed SCA in that session,
otherwise 401 with a scaRedirect. Each attack is the one of issue 29 as it was tried; before the fix each bound
the PSU-ID written into the address (and the last locked its real owner out)."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from connections import sca
from connections.crypto import lookup_hash
from connections.models import BankConnection, IdentityRefusal, PsuBinding, ScaPurpose, ScaState, TppSession
from core.bank import CALLBACK_PATH
from payments.models import PaymentAuthorisation, PaymentEvent
from tests import bankfake
from tests.bank_factories import callback_params
from tests.payments.payment_factories import PaymentFactory

pytestmark = pytest.mark.django_db

NOT_CONFIRMED = "We could not confirm this connection"


@pytest.fixture(autouse=True)
def _confirming_bank(fake_bank):
    """The bank keeps the sandbox bank's rule (tests/bankfake.py ``session_rule``)."""
    fake_bank.session_rule = True


def _asked(fake_bank) -> list[tuple[str | None, str | None, bool]]:
    """The bank's lists asked for (accounts, agreements): (PSU-ID, TPP-Session-ID, PSU present) of each."""
    return [
        (r.headers.get("psu-id"), r.headers.get("tpp-session-id"), "psu-ip-address" in r.headers)
        for r in fake_bank.received
        if r.method == "GET" and r.path in {"/v1/accounts", "/v1/agreements"}
    ]


def _state(user, client, **fields) -> ScaState:
    """An SCA started as the connect page starts it: the user's TPP-Session-ID, this browser session."""
    return sca.sca_state_create(
        user=user,
        session_key=client.session.session_key,
        purpose=fields.pop("purpose", ScaPurpose.CONNECT),
        context=fields.pop("context", "PRIVATE"),
        **fields,
    )


def _account(name: str) -> dict:
    return bankfake.account(f"enc!!{name}=", iban="NO9386011117947", currency="NOK", name=name)


@pytest.fixture
def victim_psu_id(fake_bank) -> str:
    """bob's PSU-ID at the bank, bound to no portal user yet (bob has not connected through the portal)."""
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Bobs sparekonto")]
    return psu_id


def _refused_without_a_trace(response, alice, victim_psu_id: str, purpose: str) -> None:
    """The plain page; nothing bound or connected; one refusal for staff naming the purpose, no PSU-ID in clear."""
    assert response.status_code == 400 and "Location" not in response
    body = response.content.decode()
    assert NOT_CONFIRMED in body and victim_psu_id not in body
    assert not PsuBinding.objects.exists()
    assert not BankConnection.objects.filter(user=alice).exists()
    refusal = IdentityRefusal.objects.get()
    assert (refusal.user, refusal.purpose, refusal.reason) == (
        alice,
        purpose,
        IdentityRefusal.Reason.SESSION_UNCONFIRMED,
    )
    assert refusal.psu_id_hash == lookup_hash(victim_psu_id)
    stored = {f.name: str(getattr(refusal, f.attname)) for f in IdentityRefusal._meta.concrete_fields}
    assert not any(victim_psu_id in value for value in stored.values())
    # A refused callback does not start the hour of the user's TPP session either.
    assert TppSession.objects.get(user=alice).sca_at is None


def test_a_private_psu_id_swapped_into_the_address_is_refused_and_binds_nothing(
    fake_bank, alice, alice_client, victim_psu_id
):
    state = _state(alice, alice_client)
    fake_bank.sca_done(state.tpp_session_id, str(uuid.uuid4()))  # alice did SCA as herself ...

    # ... and wrote bob's PSU-ID into the address before following it back.
    response = alice_client.get(
        CALLBACK_PATH, {**callback_params(state), "psu-id": victim_psu_id, "context": "PRIVATE"}
    )

    _refused_without_a_trace(response, alice, victim_psu_id, ScaPurpose.CONNECT)
    # The bank was asked once, with the PSU present, in the SCA's own session; never for bob's accounts.
    assert _asked(fake_bank) == [(victim_psu_id, state.tpp_session_id, True)]


def test_a_corporate_callback_rewritten_to_a_private_psu_id_is_refused(
    fake_bank, alice, alice_client, victim_psu_id
):
    state = _state(alice, alice_client, context="CORPORATE")
    fake_bank.sca_done(state.tpp_session_id, str(uuid.uuid4()))  # alice's corporate SCA

    # context PRIVATE, bob's PSU-ID, the psu-corporate-id dropped: what was seen to show bob's accounts.
    response = alice_client.get(
        CALLBACK_PATH, {**callback_params(state), "psu-id": victim_psu_id, "context": "PRIVATE"}
    )

    _refused_without_a_trace(response, alice, victim_psu_id, ScaPurpose.CONNECT)


def test_a_forged_corporate_callback_locks_nobody_out(
    fake_bank, alice, bob, alice_client, bob_client, victim_psu_id
):
    """The corporate context kept with alice's own psu-corporate-id: refused before the agreement check, and
    bob's PSU-ID bound to nobody, so bob's own SCA afterwards connects him."""
    own_psu_id, company = str(uuid.uuid4()), str(uuid.uuid4())
    fake_bank.agreements_of[own_psu_id] = [bankfake.agreement(company, "Alices ENK")]
    state = _state(alice, alice_client, context="CORPORATE")
    fake_bank.sca_done(state.tpp_session_id, own_psu_id)

    forged = alice_client.get(
        CALLBACK_PATH,
        {**callback_params(state), "psu-id": victim_psu_id, "context": "CORPORATE", "psu-corporate-id": company},
    )

    _refused_without_a_trace(forged, alice, victim_psu_id, ScaPurpose.CONNECT)
    own = _state(bob, bob_client)
    fake_bank.sca_done(own.tpp_session_id, victim_psu_id)
    back = bob_client.get(CALLBACK_PATH, {**callback_params(own), "psu-id": victim_psu_id, "context": "PRIVATE"})
    connection = BankConnection.objects.get(user=bob)
    assert back.status_code == 302 and back["Location"] == f"/bank/accounts/?connection={connection.pk}"
    assert PsuBinding.objects.get(psu_id_hash=lookup_hash(victim_psu_id)).user == bob
    assert connection.accounts.get().name == "Bobs sparekonto"
    assert IdentityRefusal.objects.count() == 1  # only alice's forgery


def test_a_psu_id_confirmed_in_another_session_of_the_same_user_is_not_enough(fake_bank, alice, alice_client):
    """Each SCA is confirmed in the TPP-Session-ID it started in, not in any session the PSU ever used."""
    psu_id = str(uuid.uuid4())
    fake_bank.sca_in["an-older-session-of-alice"].add(psu_id)
    state = _state(alice, alice_client)

    response = alice_client.get(CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"})

    assert response.status_code == 400 and NOT_CONFIRMED in response.content.decode()
    assert not PsuBinding.objects.exists()


def test_the_psu_of_the_sessions_sca_connects_and_is_bound(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    state = _state(alice, alice_client)
    fake_bank.sca_done(state.tpp_session_id, psu_id)

    response = alice_client.get(CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"})

    assert response.status_code == 302
    assert PsuBinding.objects.get().user == alice and not IdentityRefusal.objects.exists()
    session = TppSession.objects.get(user=alice)
    assert session.sca_at is not None and session.psu_id == psu_id
    assert _asked(fake_bank)[0] == (psu_id, state.tpp_session_id, True)


def test_a_bank_that_cannot_be_asked_confirms_nothing_and_nothing_is_stored(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    state = _state(alice, alice_client)
    fake_bank.sca_done(state.tpp_session_id, psu_id)
    fake_bank.fail_with = 503

    response = alice_client.get(CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"})

    assert response.status_code == 400
    assert "The bank could not be asked to confirm this return just now." in response.content.decode()
    assert not PsuBinding.objects.exists() and not BankConnection.objects.exists()
    assert not IdentityRefusal.objects.exists()  # nothing was refused: the bank said nothing
    state.refresh_from_db()
    assert state.used_at is not None  # the redirect was used up: the user starts again


def test_a_payment_approval_with_a_swapped_psu_id_keeps_nothing(
    fake_bank, alice, alice_client, victim_psu_id, monkeypatch
):
    """A single-SCA payment (no connection yet): the PSU-ID of the redirect would be kept as alice's payments
    connection; bob's is refused before the payment's handler sees it."""
    monkeypatch.setattr("payments.services.polling.poll_soon", lambda payment: None)
    payment = PaymentFactory(user=alice)
    state = _state(alice, alice_client, purpose="payment")
    PaymentAuthorisation.objects.create(payment=payment, signer=alice, sca_state=state, started_at=timezone.now())
    fake_bank.sca_done(state.tpp_session_id, str(uuid.uuid4()))
    events = PaymentEvent.objects.count()

    response = alice_client.get(
        CALLBACK_PATH, {**callback_params(state), "psu-id": victim_psu_id, "context": "PRIVATE"}
    )

    _refused_without_a_trace(response, alice, victim_psu_id, "payment")
    payment.refresh_from_db()
    assert payment.connection_id is None and PaymentEvent.objects.count() == events
    assert PaymentAuthorisation.objects.get().completed_at is None


def test_a_payment_approval_of_the_sessions_psu_is_taken(fake_bank, alice, alice_client, monkeypatch):
    monkeypatch.setattr("payments.services.polling.poll_soon", lambda payment: None)
    payment = PaymentFactory(user=alice)
    state = _state(alice, alice_client, purpose="payment")
    PaymentAuthorisation.objects.create(payment=payment, signer=alice, sca_state=state, started_at=timezone.now())
    psu_id = str(uuid.uuid4())
    fake_bank.sca_done(state.tpp_session_id, psu_id)

    response = alice_client.get(CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"})

    assert response.status_code == 302 and response["Location"] == f"/payments/{payment.pk}/"
    payment.refresh_from_db()
    assert payment.connection.psu_id == psu_id and PsuBinding.objects.get().user == alice
