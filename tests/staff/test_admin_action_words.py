"""The admin actions' messages in the staff member's language: each was an English f-string, shown as it was on
bokmål pages (the refresh, the payment's poll and settling, the connection's mark, the invitation)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from connections.models import ConnectionState
from payments.models import PaymentState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.factories import UserFactory
from tests.payments.payment_factories import PaymentFactory

pytestmark = pytest.mark.django_db


def run(client, changelist: str, action: str, objects, language: str, **data) -> list[str]:
    client.cookies["django_language"] = language
    response = client.post(
        reverse(changelist), {"action": action, "_selected_action": [o.pk for o in objects], **data}, follow=True
    )
    assert response.status_code == 200
    return [str(message) for message in response.context["messages"]]


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("nb", "Velg høyst 20 rader om gangen: hver er et kall til banken."),
        ("en", "Select at most 20 rows at once: each one is a bank call."),
    ],
)
def test_too_many_accounts_to_refresh(operator_client, alice, language, expected):
    connection = BankConnectionFactory(user=alice)
    accounts = [BankAccountFactory(connection=connection) for _ in range(21)]
    shown = run(
        operator_client, "admin:accounts_bankaccount_changelist", "refresh_within_budget", accounts, language
    )
    assert shown == [expected]


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("nb", "Betaling #{pk}: bare en betaling banken ikke bekreftet, avklares på denne måten."),
        ("en", "Payment #{pk}: only a payment the bank did not confirm is settled this way."),
    ],
)
def test_settling_a_payment_the_bank_confirmed(operator_client, alice, language, expected):
    payment = PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="ACSC")
    shown = run(operator_client, "admin:payments_payment_changelist", "settle_at_bank", [payment], language)
    assert shown == [expected.format(pk=payment.pk)]


def test_attaching_two_payments_at_once(operator_client, alice):
    payments = [PaymentFactory(user=alice), PaymentFactory(user=alice)]
    shown = run(operator_client, "admin:payments_payment_changelist", "attach_bank_payment", payments, "nb")
    assert shown == ["Velg én betaling å knytte til."]


def test_marking_connections_in_bokmal(operator_client, alice):
    connection = BankConnectionFactory(user=alice, state=ConnectionState.ACTIVE)
    gone = BankConnectionFactory(user=alice, state=ConnectionState.DISCONNECTED, psu_id="", psu_id_hash="")
    shown = run(
        operator_client,
        "admin:connections_bankconnection_changelist",
        "mark_needs_reconnect",
        [connection, gone],
        "nb",
        apply="yes",
        reason="Banken ringte",
    )
    connection.refresh_from_db()  # its name says its state
    assert f"{connection}: merket som at den må kobles til på nytt." in shown
    assert any(message.startswith(f"{gone}: kan ikke merkes når tilstanden er «") for message in shown), shown
    assert not [message for message in shown if "connection" in message or "marked" in message]


def test_inviting_in_bokmal(client):
    superuser = UserFactory(email="root@example.com", is_staff=True, is_superuser=True)
    client.force_login(superuser)
    customer = UserFactory(email="customer@example.com")
    shown = run(client, "admin:auth_user_changelist", "invite_second_factor", [customer], "nb")
    assert shown == [f"Ikke invitert: {customer.get_username()} er ikke en aktiv ansatt."]
    many = [UserFactory(email=f"staff{n}@example.com", is_staff=True) for n in range(21)]
    assert run(client, "admin:auth_user_changelist", "invite_second_factor", many, "nb") == [
        "Velg høyst 20 brukere om gangen."
    ]
