"""The attacks of issue 29 against the sandbox bank running as a real process: the attacker finishes an SCA of
their own and writes another customer's PSU-ID into the redirect back. The portal asks the bank to confirm the
PSU-ID in the SCA's own TPP-Session-ID before binding it; the bank answers only for the PSU who authenticated in
that session. The real owner connects afterwards, and a PSU who comes back within the hour is not asked again."""

from __future__ import annotations

import pytest

from connections.crypto import lookup_hash
from connections.models import BankConnection, ConnectionState, IdentityRefusal, PsuBinding
from core.models import BankCall
from tests.live_bank import PRIVATE_2, BankBrowser, callback_target, portal_connect

pytestmark = pytest.mark.live_bank

NOT_CONFIRMED = "We could not confirm this connection"


def _sca(client, *, identity: str | None = None, context: str = "PRIVATE") -> tuple[str, dict[str, str]]:
    """A connect started on the portal and completed at the bank; the redirect back is not followed yet."""
    start = client.post("/bank/connect/", {"context": context, "access": "accounts"})
    assert start.status_code == 302, start.content[:500]
    sca = {"identity": identity} if identity else {}
    return callback_target(BankBrowser().authorise(start["Location"], context=context, **sca))


@pytest.fixture
def victim(live_bank, bob_client) -> tuple[str, dict[str, str]]:
    """bob's SCA as Private Customer 2, done at the bank; bob has not come back to the portal yet, so his PSU-ID
    is bound to no portal user."""
    path, params = _sca(bob_client, identity=PRIVATE_2)
    assert not PsuBinding.objects.exists()
    return path, params


def _refused(response, alice, victim_psu_id: str) -> None:
    assert response.status_code == 400 and NOT_CONFIRMED in response.content.decode()
    assert not BankConnection.objects.filter(user=alice).exists()
    assert not PsuBinding.objects.filter(psu_id_hash=lookup_hash(victim_psu_id)).exists()
    refusal = IdentityRefusal.objects.get(user=alice)
    assert (refusal.reason, refusal.purpose) == (IdentityRefusal.Reason.SESSION_UNCONFIRMED, "connect")
    asked = BankCall.objects.filter(user=alice, path_template="/v1/agreements").get()
    assert asked.status == 401 and asked.psu_present  # the bank asked for SCA: not this session's PSU


def test_a_private_psu_id_swapped_into_the_redirect_is_refused_and_its_owner_connects(
    victim, alice, alice_client, bob, bob_client
):
    bob_path, bob_params = victim
    path, params = _sca(alice_client)  # alice's own SCA, as Private Customer 1

    forged = alice_client.get(path, {**params, "psu-id": bob_params["psu-id"]})

    _refused(forged, alice, bob_params["psu-id"])
    own = bob_client.get(bob_path, bob_params)
    connection = BankConnection.objects.get(user=bob)
    assert own.status_code == 302 and own["Location"] == f"/bank/accounts/?connection={connection.pk}"
    assert connection.psu_id == bob_params["psu-id"] and connection.state == ConnectionState.ACTIVE
    assert PsuBinding.objects.get(psu_id_hash=lookup_hash(bob_params["psu-id"])).user == bob


def test_a_corporate_callback_rewritten_to_a_private_psu_id_is_refused(victim, alice, alice_client):
    _bob_path, bob_params = victim
    path, params = _sca(alice_client, context="CORPORATE")
    assert params["context"] == "CORPORATE" and params["psu-corporate-id"]
    forged = {**params, "psu-id": bob_params["psu-id"], "context": "PRIVATE"}
    del forged["psu-corporate-id"]

    response = alice_client.get(path, forged)

    _refused(response, alice, bob_params["psu-id"])
    assert "Bobs" not in alice_client.get("/bank/accounts/").content.decode()


def test_a_refused_corporate_forgery_locks_the_owner_out_of_nothing(
    live_bank, alice, alice_client, bob, bob_client
):
    """The corporate context and alice's own psu-corporate-id kept: refused, and bob's PSU-ID is bound to nobody,
    so bob's own SCA after the forgery connects him (it was refused as "not for your user" before the fix)."""
    bob_psu_id = portal_connect(bob_client, identity=PRIVATE_2)[1]["psu-id"]  # learnt from an earlier SCA
    BankConnection.objects.all().delete()
    PsuBinding.objects.all().delete()  # as if bob had never connected through the portal
    path, params = _sca(alice_client, context="CORPORATE")

    forged = alice_client.get(path, {**params, "psu-id": bob_psu_id})

    _refused(forged, alice, bob_psu_id)
    response, again = portal_connect(bob_client, identity=PRIVATE_2)
    connection = BankConnection.objects.get(user=bob)
    assert response.status_code == 302 and response["Location"] == f"/bank/accounts/?connection={connection.pk}"
    assert again["psu-id"] == bob_psu_id
    assert connection.state == ConnectionState.ACTIVE
    assert not IdentityRefusal.objects.filter(user=bob).exists()


def test_a_psu_back_within_the_hour_is_not_asked_again_and_is_confirmed(live_bank, alice, alice_client):
    first, params = portal_connect(alice_client)
    assert first.status_code == 302

    start = alice_client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts"})
    page = BankBrowser().http.get(start["Location"], timeout=15)
    assert page.status_code == 200 and 'name="identity"' not in page.text  # the session's SCA holds
    path, again = callback_target(BankBrowser().authorise(start["Location"]))
    assert again["tpp-session-id"] == params["tpp-session-id"] and again["psu-id"] == params["psu-id"]

    assert alice_client.get(path, again).status_code == 302
    confirmations = BankCall.objects.filter(path_template="/v1/agreements").order_by("pk")
    assert [(c.status, c.psu_present) for c in confirmations] == [(200, True), (200, True)]
    assert not IdentityRefusal.objects.exists()
