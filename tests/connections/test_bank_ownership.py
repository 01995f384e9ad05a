"""The 404 matrix of every bank page with an id: owner 200 (or the page's redirect), another user 404, staff
404, anonymous sent to sign in. And the list pages show only the user's own objects."""

from __future__ import annotations

import pytest
from django.test import Client

from connections.models import BankConnection, ConnectionState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.live_bank import portal_connect

# (method, url name, the owner's expected status)
ID_PAGES = [
    ("get", "bank-disconnect", 200),
    ("post", "bank-disconnect", 302),
    ("post", "bank-reconnect", 302),
    ("get", "bank-agreements", 200),
    ("post", "bank-agreements", 200),  # no agreement picked: the form again, with its error
]


def _url(name: str, pk: int) -> str:
    from django.urls import reverse

    return reverse(name, args=[pk])


@pytest.fixture
def connection(live_bank, alice_client, alice) -> BankConnection:
    """alice's connection, made through the sandbox bank (so its PSU-ID is real)."""
    response, _params = portal_connect(alice_client)
    assert response.status_code == 302
    return BankConnection.objects.get(user=alice)


@pytest.mark.live_bank
@pytest.mark.parametrize(("method", "name", "expected"), ID_PAGES)
def test_owner_gets_the_page(alice_client, connection, method, name, expected):
    response = getattr(alice_client, method)(_url(name, connection.pk))
    assert response.status_code == expected


@pytest.mark.parametrize(("method", "name", "expected"), ID_PAGES)
@pytest.mark.parametrize("stranger", ["bob", "charlie"])
def test_anyone_else_gets_404_and_nothing_changes(request, alice, method, name, expected, stranger):
    connection = BankConnectionFactory(user=alice)
    browser = Client()
    browser.force_login(request.getfixturevalue(stranger))

    response = getattr(browser, method)(_url(name, connection.pk))

    assert response.status_code == 404
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE and connection.psu_id


@pytest.mark.parametrize(("method", "name", "expected"), ID_PAGES)
def test_anonymous_is_sent_to_sign_in(client, alice, method, name, expected):
    connection = BankConnectionFactory(user=alice)

    response = getattr(client, method)(_url(name, connection.pk))

    assert response.status_code == 302 and response["Location"].startswith("/auth/sign-in/?next=")


@pytest.mark.parametrize("pk", ["999999", "0"])
def test_missing_ids_are_404(alice_client, pk):
    assert alice_client.get(f"/bank/connections/{pk}/disconnect/").status_code == 404


def test_a_disconnected_connection_is_404_for_its_owner_too(alice, alice_client):
    connection = BankConnectionFactory(user=alice, state=ConnectionState.DISCONNECTED, psu_id="", psu_id_hash="")
    assert alice_client.get(_url("bank-disconnect", connection.pk)).status_code == 404


@pytest.mark.parametrize("url", ["/bank/connections/", "/bank/accounts/", "/bank/connect/"])
def test_list_pages_need_sign_in(client, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/auth/sign-in/?next=")


def test_list_pages_show_only_the_users_own_connections_and_accounts(alice, bob, alice_client):
    mine = BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Alices konto")
    theirs = BankAccountFactory(connection=BankConnectionFactory(user=bob), name="Bobs konto")

    accounts_page = alice_client.get("/bank/accounts/").content.decode()
    connections_page = alice_client.get("/bank/connections/").content.decode()

    assert mine.name in accounts_page and theirs.name not in accounts_page
    assert mine.name in connections_page and theirs.name not in connections_page
    assert f"/bank/connections/{theirs.connection.pk}/" not in connections_page
