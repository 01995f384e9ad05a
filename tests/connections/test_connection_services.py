"""One transition service with an event per move; disconnect removes the data; a bank that cannot start SCA;
an agreement consent that returns another agreement."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.utils import timezone

from accounts.models import BalanceSnapshot, BankAccount
from connections import services
from connections.models import BankConnection, ConnectionEvent, ConnectionState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory, ScaStateFactory, callback_params
from xs2a.errors import ConsentDeletionNotOfferedError, ConsentUnknownError, ServerError

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

    with pytest.raises(services.IllegalTransition):
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

    with pytest.raises(services.IllegalTransition):
        services.connection_transition(connection=stale, to=S.NEEDS_RECONNECT, actor=alice, reason="second")

    assert BankConnection.objects.get().state == S.DISCONNECTED and ConnectionEvent.objects.count() == 1


class ConsentsClient:
    """The bank's consent service: records the consents it is asked to end, or fails with ``error``."""

    def __init__(self, error=None):
        self.error = error
        self.ended: list = []
        self.consents = SimpleNamespace(delete=self.delete)

    def delete(self, *, psu):
        self.ended.append(psu)
        if self.error is not None:
            raise self.error


def test_disconnect_removes_identifiers_accounts_and_balances_and_keeps_the_timeline(
    alice, alice_client, monkeypatch
):
    bank = ConsentsClient()
    monkeypatch.setattr(services, "bank_client", lambda: bank)
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
    (ended,) = bank.ended  # the consent ended at the bank, with the PSU present
    assert (ended.psu_id, ended.corporate_id, ended.context) == (psu_id, company, "CORPORATE") and ended.present
    page = alice_client.get("/bank/connections/").content.decode()
    assert "You have not connected a bank yet." in page and "Your bank has ended the consent" in page


@pytest.mark.parametrize(
    ("error", "told", "reason"),
    [
        (ConsentDeletionNotOfferedError("no", status=405), "does not let us end the consent", "offers no way"),
        (ServerError("down", status=503), "did not answer", "could not be asked"),
        (ConsentUnknownError("gone", status=403), "has ended the consent", "the bank ended the consent"),
    ],
)
def test_disconnect_says_what_became_of_the_consent_at_the_bank(
    alice, alice_client, monkeypatch, error, told, reason
):
    monkeypatch.setattr(services, "bank_client", lambda: ConsentsClient(error))
    connection = BankConnectionFactory(user=alice)

    response = alice_client.post(f"/bank/connections/{connection.pk}/disconnect/", follow=True)

    assert told in response.content.decode()
    assert BankConnection.objects.get().state == S.DISCONNECTED  # removed here whatever the bank said
    assert reason in ConnectionEvent.objects.get().reason


def test_a_payments_only_connection_has_no_consent_to_end(alice, alice_client, monkeypatch):
    bank = ConsentsClient()
    monkeypatch.setattr(services, "bank_client", lambda: bank)
    connection = BankConnectionFactory(user=alice, access="payments", consent_valid_until=None)

    alice_client.post(f"/bank/connections/{connection.pk}/disconnect/")

    assert bank.ended == [] and BankConnection.objects.get().state == S.DISCONNECTED


class DownClient:
    def __init__(self):
        self.consents = SimpleNamespace(start=self.consent_start, users=self.consent_start)  # the client's service

    def consent_start(self, **kwargs):
        from xs2a.errors import TransportError

        raise TransportError("the bank could not be reached")


def test_a_bank_that_cannot_start_sca_gives_a_message_and_burns_the_state(alice, alice_client, monkeypatch):
    from connections.models import ScaState

    monkeypatch.setattr(services, "bank_client", lambda: DownClient())

    response = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})

    assert response.status_code == 200
    assert "could not start the authentication" in response.content.decode()
    state = ScaState.objects.get()
    assert state.user == alice and state.used_at is not None
    assert not BankConnection.objects.exists()


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
    key_hash = services.session_key_hash(session)
    now = timezone.now()
    spent = ScaStateFactory(user=alice, session_key_hash=key_hash, created_at=now - timedelta(minutes=2))
    services.sca_state_spend(state=spent, now=now)
    current = ScaStateFactory(user=alice, session_key_hash=key_hash, created_at=now - timedelta(minutes=1))

    assert services.sca_state_open(user=alice, session_key=session, token=spent.token, now=now) is None
    assert services.sca_state_open(user=alice, session_key=session, token=current.token, now=now) == current
    assert services.sca_state_open(user=alice, session_key=session, token=None, now=now) == current
