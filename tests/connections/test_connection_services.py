"""One transition service with an event per move; disconnect removes the data; a bank that cannot start SCA;
an agreement consent that returns another agreement."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import BalanceSnapshot, BankAccount
from connections import sca, services
from connections.errors import IllegalTransition
from connections.models import BankConnection, ConnectionEvent, ConnectionState
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory, ScaStateFactory, callback_params

S = ConnectionState


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (S.DISCONNECTED, S.ACTIVE),
        (S.DISCONNECTED, S.PENDING),
        (S.NEEDS_RECONNECT, S.ACTIVE),
        (S.ACTIVE, S.ACTIVE),
        (S.NEEDS_RECONNECT, S.NEEDS_RECONNECT),
    ],
)
def test_illegal_moves_are_refused_and_leave_no_event(alice, source, target):
    connection = BankConnectionFactory(user=alice, state=source)

    with pytest.raises(IllegalTransition):
        services.connection_transition(connection=connection, to=target, actor=alice, reason="test")

    connection.refresh_from_db()
    assert connection.state == source and not ConnectionEvent.objects.exists()


def test_a_move_appends_who_when_from_to_why(alice):
    connection = BankConnectionFactory(user=alice, state=S.ACTIVE)

    services.connection_transition(
        connection=connection, to=S.NEEDS_RECONNECT, actor=alice, reason="consent expired"
    )

    event = ConnectionEvent.objects.get()
    assert (event.actor, event.from_state, event.to_state, event.reason) == (
        alice,
        S.ACTIVE,
        S.NEEDS_RECONNECT,
        "consent expired",
    )
    assert abs(event.at - timezone.now()) < timedelta(seconds=5)
    assert BankConnection.objects.get().state == S.NEEDS_RECONNECT


def test_a_stale_copy_cannot_move_a_connection_that_moved_meanwhile(alice):
    connection = BankConnectionFactory(user=alice, state=S.ACTIVE)
    stale = BankConnection.objects.get(pk=connection.pk)
    services.connection_transition(connection=connection, to=S.DISCONNECTED, actor=alice, reason="first")

    with pytest.raises(IllegalTransition):
        services.connection_transition(connection=stale, to=S.NEEDS_RECONNECT, actor=alice, reason="second")

    assert BankConnection.objects.get().state == S.DISCONNECTED and ConnectionEvent.objects.count() == 1


CONSENTS = "/v1/bank-offered-consents"


def test_disconnect_removes_identifiers_accounts_and_balances_and_keeps_the_timeline(
    alice, alice_client, fake_bank
):
    fake_bank.add("DELETE", CONSENTS, bankfake.Answer(204))
    company = "0b8f5e21-7c3a-4d9e-8f61-5a2b9c0d3e74"
    connection = BankConnectionFactory(user=alice, context="CORPORATE", psu_corporate_id=company)
    psu_id = connection.psu_id
    account = BankAccountFactory(connection=connection)
    BalanceSnapshot.objects.create(
        account=account,
        balance_type="closingBooked",
        amount=Decimal("10.00"),
        currency="NOK",
        fetched_at=timezone.now(),
    )
    pending_reconnect = ScaStateFactory(user=alice, connection=connection)

    response = alice_client.post(f"/bank/connections/{connection.pk}/disconnect/")

    assert response.status_code == 302 and response["Location"] == "/bank/connections/"
    connection.refresh_from_db()
    assert connection.state == S.DISCONNECTED
    assert (connection.psu_id, connection.psu_id_hash, connection.psu_corporate_id) == ("", "", "")
    assert not BankAccount.objects.exists() and not BalanceSnapshot.objects.exists()
    event = ConnectionEvent.objects.get()
    assert event.to_state == S.DISCONNECTED and "the bank ended the consent" in event.reason
    pending_reconnect.refresh_from_db()
    assert pending_reconnect.used_at is not None  # a late return from the bank cannot revive it
    (ended,) = fake_bank.sent("DELETE", CONSENTS)  # the consent ended at the bank, with the PSU present
    sent = ended.headers
    assert (sent["psu-id"], sent["psu-corporate-id"], sent["psu-context"]) == (psu_id, company, "CORPORATE")
    assert "psu-ip-address" in sent
    page = alice_client.get("/bank/connections/").content.decode()
    assert "You have not connected a bank yet." in page and "Your bank has ended the consent" in page


@pytest.mark.parametrize(
    ("answer", "told", "reason"),
    [
        (bankfake.error(405, "SERVICE_INVALID", "no"), "does not let us end the consent", "offers no way"),
        (bankfake.error(503, "SERVICE_UNAVAILABLE", "down"), "did not answer", "could not be asked"),
        (bankfake.error(403, "CONSENT_UNKNOWN", "gone"), "has ended the consent", "the bank ended the consent"),
    ],
)
def test_disconnect_says_what_became_of_the_consent_at_the_bank(
    alice, alice_client, fake_bank, answer, told, reason
):
    fake_bank.add("DELETE", CONSENTS, answer)
    connection = BankConnectionFactory(user=alice)

    response = alice_client.post(f"/bank/connections/{connection.pk}/disconnect/", follow=True)

    assert told in response.content.decode()
    assert BankConnection.objects.get().state == S.DISCONNECTED  # removed here whatever the bank said
    assert reason in ConnectionEvent.objects.get().reason


def test_a_payments_only_connection_has_no_consent_to_end(alice, alice_client, fake_bank):
    connection = BankConnectionFactory(user=alice, access="payments", consent_valid_until=None)

    alice_client.post(f"/bank/connections/{connection.pk}/disconnect/")

    assert fake_bank.received == [] and BankConnection.objects.get().state == S.DISCONNECTED


def test_a_bank_that_cannot_start_sca_gives_a_message_and_burns_the_state(alice, alice_client, fake_bank):
    from connections.models import ScaState

    fake_bank.add("POST", CONSENTS, bankfake.lost(sent=False))  # the bank could not be reached
    fake_bank.add("GET", "/v1/users", bankfake.lost(sent=False))

    response = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})

    assert response.status_code == 200
    assert "could not start the authentication" in response.content.decode()
    state = ScaState.objects.get()
    assert state.user == alice and state.used_at is not None
    assert not BankConnection.objects.exists()
    assert fake_bank.received  # it was asked


def test_an_agreement_consent_returning_another_agreement_changes_nothing(alice, alice_client):
    import hashlib
    import uuid

    from connections.crypto import lookup_hash
    from connections.models import ScaPurpose

    private = BankConnectionFactory(user=alice)
    state = ScaStateFactory(
        user=alice,
        session_key_hash=hashlib.sha256(alice_client.session.session_key.encode()).hexdigest(),
        purpose=ScaPurpose.AGREEMENT,
        context="CORPORATE",
        connection=private,
        agreement_name="Fjordfisk AS",
        agreement_id_hash=lookup_hash(str(uuid.uuid4())),
    )
    params = {
        "psu-id": private.psu_id,
        "psu-corporate-id": str(uuid.uuid4()),  # not the agreement the user picked
        **callback_params(state),
        "context": "CORPORATE",
    }

    response = alice_client.get("/bank/callback", params)

    assert response.status_code == 400
    assert BankConnection.objects.count() == 1 and not ConnectionEvent.objects.exists()


def test_a_failure_redirect_naming_a_state_that_is_not_open_is_about_no_sca(alice):
    """A late or replayed failure redirect names a used state: it is not taken for the newest open one."""
    session = "s" * 32
    key_hash = sca.session_key_hash(session)
    now = timezone.now()
    spent = ScaStateFactory(user=alice, session_key_hash=key_hash, created_at=now - timedelta(minutes=2))
    sca.sca_state_spend(state=spent, now=now)
    current = ScaStateFactory(user=alice, session_key_hash=key_hash, created_at=now - timedelta(minutes=1))

    assert sca.sca_state_open(user=alice, session_key=session, token=spent.token, now=now) is None
    assert sca.sca_state_open(user=alice, session_key=session, token=current.token, now=now) == current
    assert sca.sca_state_open(user=alice, session_key=session, token=None, now=now) == current
