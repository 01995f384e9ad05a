"""Where the user lands after connecting: the new connection's accounts (the accounts page, filtered to the
connection); the connections page when the user must give consent again (no account chosen, or the bank asks
for consent again); home, with "New payment", after a payments-only connection."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from connections import sca
from connections.models import BankConnection, ScaPurpose
from core.bank import CALLBACK_PATH
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory, callback_params

pytestmark = pytest.mark.django_db


def _connect(fake_bank, user, client, *, purpose: str = ScaPurpose.CONNECT, accounts=()):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = list(accounts)
    state = sca.sca_state_create(
        user=user, session_key=client.session.session_key, purpose=purpose, context="PRIVATE"
    )
    return client.get(CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"})


def test_a_new_connection_lands_on_its_accounts(fake_bank, alice, alice_client):
    BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Older konto")
    account = bankfake.account("enc!!new=", iban="NO9386011117947", currency="NOK", name="Ny brukskonto")

    response = _connect(fake_bank, alice, alice_client, accounts=[account])

    connection = BankConnection.objects.filter(user=alice).latest("pk")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('bank-accounts')}?connection={connection.pk}"
    page = alice_client.get(response["Location"]).content.decode()
    assert "Your bank is connected." in page
    assert "Ny brukskonto" in page and "Older konto" not in page  # only this connection's accounts
    assert f'href="{reverse("bank-accounts")}">Show all your accounts' in page


def test_no_account_chosen_at_the_bank_lands_on_the_connections_page(fake_bank, alice, alice_client):
    response = _connect(fake_bank, alice, alice_client, accounts=[])

    assert response.status_code == 302 and response["Location"] == reverse("bank-connections")
    page = alice_client.get(response["Location"]).content.decode()
    assert "You did not choose any account at the bank" in page


def test_a_payments_only_connection_lands_home_where_new_payment_is(fake_bank, alice, alice_client):
    response = _connect(fake_bank, alice, alice_client, purpose=ScaPurpose.USERS)

    assert response.status_code == 302 and response["Location"] == reverse("home")
    page = alice_client.get(response["Location"]).content.decode()
    assert "Your bank is connected for payments." in page
    assert f'href="{reverse("payment-new")}">New payment' in page


def test_the_accounts_of_another_users_connection_are_a_404(alice_client, bob):
    theirs = BankConnectionFactory(user=bob)
    BankAccountFactory(connection=theirs, name="Bobs konto")

    response = alice_client.get(reverse("bank-accounts"), {"connection": theirs.pk})

    assert response.status_code == 404 and "Bobs konto" not in response.content.decode()


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "\u0661", "9" * 40])
def test_a_malformed_connection_filter_is_a_404(alice_client, alice, value):
    BankConnectionFactory(user=alice)
    assert alice_client.get(reverse("bank-accounts"), {"connection": value}).status_code == 404
