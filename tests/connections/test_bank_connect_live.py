"""The whole connect flow against the sandbox bank running as a real process."""

from __future__ import annotations

import pytest

from accounts.models import BalanceSnapshot, BankAccount
from connections.models import BankConnection, ConnectionEvent, ConnectionState
from core.models import BankCall
from tests.live_bank import portal_connect

pytestmark = pytest.mark.live_bank


def test_private_customer_connects_and_sees_accounts_and_balances(live_bank, alice_client, alice):
    response, params = portal_connect(alice_client)

    connection = BankConnection.objects.get(user=alice)
    assert response.status_code == 302 and response["Location"] == f"/bank/accounts/?connection={connection.pk}"
    assert connection.state == ConnectionState.ACTIVE
    assert connection.context == "PRIVATE" and connection.psu_id == params["psu-id"]
    assert connection.psu_corporate_id == ""
    assert connection.consent_valid_until is not None
    assert (connection.consent_valid_until - connection.sca_at).days == 180
    names = set(BankAccount.objects.filter(connection=connection).values_list("name", flat=True))
    assert {"Brukskonto", "Høyrentekonto"} <= names
    assert BankAccount.objects.filter(connection=connection, kind="card").count() == 1
    snapshots = BalanceSnapshot.objects.filter(account__connection=connection)
    assert snapshots.exists()
    assert all(s.fetched_at == s.account.balances_refreshed_at for s in snapshots)
    assert [e.to_state for e in ConnectionEvent.objects.filter(connection=connection)] == ["pending", "active"]
    # Every account read was made with the PSU present and is audited as alice's, about this connection.
    reads = BankCall.objects.filter(path_template__startswith="/v1/", method="GET")
    assert reads.exists() and all(c.psu_present and c.user == alice for c in reads)

    page = alice_client.get(response["Location"])  # where the connection lands: its accounts
    assert page.status_code == 200
    assert "Brukskonto" in page.content.decode() and "Your bank is connected." in page.content.decode()
    connections_page = alice_client.get("/bank/connections/").content.decode()
    assert "Brukskonto" in connections_page and "Reconnect" in connections_page


def _counts() -> tuple[int, ...]:
    return (
        BankConnection.objects.count(),
        ConnectionEvent.objects.count(),
        BankAccount.objects.count(),
        BalanceSnapshot.objects.count(),
    )


def test_corporate_context_chosen_at_the_bank_stores_the_agreement(live_bank, alice_client, alice):
    response, params = portal_connect(alice_client, context="CORPORATE")

    connection = BankConnection.objects.get(user=alice)
    assert response.status_code == 302 and response["Location"] == f"/bank/accounts/?connection={connection.pk}"
    assert connection.context == "CORPORATE" and connection.state == ConnectionState.ACTIVE
    assert connection.psu_corporate_id == params["psu-corporate-id"]
    assert connection.agreement_name  # read from /v1/agreements with the PSU-ID
    assert BankAccount.objects.filter(connection=connection, consented=True).count() == 2
    assert connection.agreement_name in alice_client.get("/bank/connections/").content.decode()


def test_agreements_listed_with_a_psu_id_start_a_consent_for_the_chosen_one(live_bank, alice_client, alice):
    portal_connect(alice_client)
    private = BankConnection.objects.get(user=alice)

    page = alice_client.get(f"/bank/connections/{private.pk}/agreements/")
    assert page.status_code == 200
    form = page.context["form"]
    (agreement_id, agreement_name) = form.fields["agreement"].choices[0]
    start = alice_client.post(f"/bank/connections/{private.pk}/agreements/", {"agreement": agreement_id})
    assert start.status_code == 302 and start["Location"].startswith(live_bank)

    from tests.live_bank import BankBrowser, callback_target

    path, params = callback_target(BankBrowser().authorise(start["Location"], context="CORPORATE"))
    assert params["psu-corporate-id"] == agreement_id and params["psu-id"] == private.psu_id
    done = alice_client.get(path, params)

    corporate = BankConnection.objects.get(user=alice, context="CORPORATE")
    assert done.status_code == 302 and done["Location"] == f"/bank/accounts/?connection={corporate.pk}"
    assert corporate.agreement_name == agreement_name and corporate.state == ConnectionState.ACTIVE
    assert BankAccount.objects.filter(connection=corporate).count() == 2
    private.refresh_from_db()
    assert private.state == ConnectionState.ACTIVE  # the private connection is untouched


def test_payment_only_journey_uses_v1_users_and_stores_no_accounts(live_bank, alice_client, alice):
    response, params = portal_connect(alice_client, access="payments")

    assert response.status_code == 302 and response["Location"] == "/"  # home, where "New payment" is
    connection = BankConnection.objects.get(user=alice)
    assert connection.access == "payments" and connection.state == ConnectionState.ACTIVE
    assert connection.psu_id == params["psu-id"] and connection.consent_valid_until is None
    assert not BankAccount.objects.filter(connection=connection).exists()
    assert BankCall.objects.filter(path_template="/v1/users").count() == 1
    assert not BankCall.objects.filter(path_template="/v1/accounts").exists()


def test_cancelled_sca_is_explained_in_plain_words_and_stores_nothing(live_bank, alice_client, alice):
    before = _counts()
    response, params = portal_connect(alice_client, cancel=True)

    # The bank's failure parameters, beside the portal's own state it keeps in the TPP-Redirect-URI.
    assert set(params) == {"state", "system", "status", "code", "message"}
    assert response.status_code == 200 and "Location" not in response
    body = response.content.decode()
    assert "The approval at the bank was stopped before it was completed." in body
    assert params["message"] not in body and params["system"] not in body
    # The code only for support, folded away under "Details".
    before_details, details = body.split('<details class="technical-details">', 1)
    assert params["code"] not in before_details + details.split("</details>", 1)[1]
    assert f"<dt>Code</dt><dd><code>{params['code']}</code></dd>" in details
    assert _counts() == before


def test_replayed_callback_is_refused_and_stores_nothing_more(live_bank, alice_client, alice):
    first, params = portal_connect(alice_client)
    assert first.status_code == 302
    before = _counts()
    calls = BankCall.objects.count()

    replay = alice_client.get("/bank/callback", params)

    assert replay.status_code == 400 and "Location" not in replay
    assert "already handled" in replay.content.decode()
    assert _counts() == before and BankCall.objects.count() == calls


def test_another_users_callback_is_refused_and_leaves_the_state_usable(live_bank, alice_client, alice, bob):
    from django.test import Client

    from tests.live_bank import BankBrowser, callback_target

    start = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})
    path, params = callback_target(BankBrowser().authorise(start["Location"]))
    bob_browser = Client()
    bob_browser.force_login(bob)

    stolen = bob_browser.get(path, params)

    assert stolen.status_code == 400 and not BankConnection.objects.exists()
    # alice's own return still works: bob's attempt did not use her state up.
    assert alice_client.get(path, params).status_code == 302
    assert BankConnection.objects.get().user == alice


def test_callback_never_redirects_outside_the_portal(live_bank, alice_client, alice):
    from tests.live_bank import BankBrowser, callback_target

    start = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})
    path, params = callback_target(BankBrowser().authorise(start["Location"]))
    hostile = {**params, "next": "https://evil.example/steal", "redirect": "//evil.example", "return_to": "x"}

    response = alice_client.get(path, hostile)

    connection = BankConnection.objects.get(user=alice, access="accounts")
    assert response.status_code == 302 and response["Location"] == f"/bank/accounts/?connection={connection.pk}"


def test_refresh_now_stores_new_balances_with_the_psu_present(live_bank, alice_client, alice):
    portal_connect(alice_client)
    connection = BankConnection.objects.get(user=alice)
    first_fetch = set(BalanceSnapshot.objects.values_list("fetched_at", flat=True))
    BankCall.objects.all().delete()

    response = alice_client.post("/bank/accounts/refresh/", REMOTE_ADDR="203.0.113.9")

    assert response.status_code == 302 and response["Location"] == "/bank/accounts/"
    fetches = set(BalanceSnapshot.objects.values_list("fetched_at", flat=True))
    assert len(fetches - first_fetch) == 1
    calls = BankCall.objects.filter(path_template__contains="balances")
    assert calls.count() == BankAccount.objects.filter(connection=connection).count()
    assert all(c.psu_present and c.status == 200 for c in calls)


def test_reconnect_keeps_the_old_consent_in_use_until_the_new_sca_succeeds(live_bank, alice_client, alice):
    from tests.live_bank import BankBrowser, callback_target

    portal_connect(alice_client)
    connection = BankConnection.objects.get(user=alice)
    old_until = connection.consent_valid_until
    accounts = list(BankAccount.objects.filter(connection=connection).order_by("pk"))

    start = alice_client.post(f"/bank/connections/{connection.pk}/reconnect/")
    assert start.status_code == 302 and start["Location"].startswith(live_bank)

    # While the PSU is at the bank: nothing changed, and the old consent still serves a refresh.
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE and connection.consent_valid_until == old_until
    refreshed = alice_client.post("/bank/accounts/refresh/")
    assert refreshed.status_code == 302
    assert all(m.level_tag == "success" for m in refreshed.wsgi_request._messages)

    keep = accounts[0].resource_id
    path, params = callback_target(BankBrowser().authorise(start["Location"], accounts=[keep]))
    done = alice_client.get(path, params)

    assert done.status_code == 302
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE and connection.consent_valid_until > old_until
    assert list(
        BankAccount.objects.filter(connection=connection, consented=True).values_list("resource_id", flat=True)
    ) == [keep]
    assert BankAccount.objects.filter(connection=connection).count() == len(accounts)  # history kept
    states = list(ConnectionEvent.objects.filter(connection=connection).values_list("to_state", flat=True))
    assert states == ["pending", "active", "pending", "active"]


def test_a_401_with_sca_redirect_marks_the_connection_for_reconnecting(live_bank, alice_client, alice):
    from tests.bank_factories import BankAccountFactory, BankConnectionFactory

    # A PSU-ID the bank does not know answers 401 with a scaRedirect link (spec section 7).
    connection = BankConnectionFactory(user=alice, state=ConnectionState.ACTIVE)
    BankAccountFactory(connection=connection)

    response = alice_client.post("/bank/accounts/refresh/")

    assert response.status_code == 302
    connection.refresh_from_db()
    assert connection.state == ConnectionState.NEEDS_RECONNECT
    event = ConnectionEvent.objects.filter(connection=connection).latest("at")
    assert (event.from_state, event.to_state, event.actor) == ("active", "needs_reconnect", alice)
    assert "SCA again" in event.reason
    page = alice_client.get("/bank/connections/").content.decode()
    assert "Needs reconnecting" in page and f"/bank/connections/{connection.pk}/reconnect/" in page


def test_disconnecting_ends_the_consent_at_the_bank(live_bank, alice_client, alice):
    from core.bank import bank_client
    from xs2a.errors import ConsentError, ScaRequiredError
    from xs2a.psu import PsuContext

    portal_connect(alice_client)
    connection = BankConnection.objects.get(user=alice)
    psu = PsuContext(psu_id=connection.psu_id, ip_address="127.0.0.1")
    assert bank_client().accounts.list(psu=psu)  # the consent works before

    response = alice_client.post(f"/bank/connections/{connection.pk}/disconnect/", follow=True)

    assert "Your bank has ended the consent" in response.content.decode()
    with pytest.raises((ConsentError, ScaRequiredError)):  # a leaked PSU-ID reads nothing any more
        bank_client().accounts.list(psu=psu)
    ended = BankCall.objects.get(method="DELETE", path_template="/v1/bank-offered-consents")
    assert ended.status == 204 and ended.psu_present and ended.user == alice
