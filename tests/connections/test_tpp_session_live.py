"""One TPP-Session-ID per user for the bank's hour, against the sandbox bank running as a real process: the
bank echoes the TPP-Session-ID it was sent in its redirect back (spec section 6), and its SCA screens show
whether it asked the PSU to identify again (it skips that within the hour of an SCA in the same session, except
for a payment: dynamic linking)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from connections.models import BankConnection, ConnectionState, ScaState, TppSession
from payments.models import Payment
from tests.live_bank import PRIVATE_1, BankBrowser, callback_target, portal_connect
from tests.payments.journeys import cross_border

pytestmark = pytest.mark.live_bank


def _asks_identity(href: str) -> bool:
    """Whether the bank's first SCA screen at ``href`` asks for the national identity number."""
    page = requests.get(href, timeout=15)
    assert page.status_code == 200, page.text[:500]
    return 'name="identity"' in page.text


def _start(client, **choices) -> str:
    start = client.post("/bank/connect/", {"context": "PRIVATE", "access": "accounts", **choices})
    assert start.status_code == 302, start.content[:500]
    return start["Location"]


def test_an_account_consent_after_a_payments_sca_in_the_hour_needs_no_second_identification(
    live_bank, alice_client, alice
):
    first, paid = portal_connect(alice_client, access="payments")  # GET /v1/users: the payment role
    assert first.status_code == 302

    href = _start(alice_client)

    assert not _asks_identity(href)  # the bank let the SCA of the hour hold for the consent
    path, params = callback_target(BankBrowser().authorise(href))
    assert params["tpp-session-id"] == paid["tpp-session-id"]  # the one TPP-Session-ID of the user
    assert params["state"] != paid["state"]  # each redirect has its own state
    done = alice_client.get(path, params)
    assert done.status_code == 302
    accounts = BankConnection.objects.get(user=alice, access="accounts")
    assert accounts.state == ConnectionState.ACTIVE and accounts.psu_id == paid["psu-id"]
    # The redirect of the earlier SCA, with the same TPP-Session-ID, cannot be used again.
    assert alice_client.get(path, {**params, "state": paid["state"]}).status_code == 400


def test_an_account_consent_right_after_paying_needs_no_second_identification(live_bank, client, alice, bob):
    # bob connects as the same bank customer only so that the test knows the IBAN to type; his portal user is
    # then deleted, which frees the bank identity for alice (a PSU-ID belongs to one portal user).
    client.force_login(bob)
    portal_connect(client)
    iban = BankConnection.objects.get(user=bob).accounts.get(name="Brukskonto").iban
    bob.delete()
    client.force_login(alice)
    drafted = client.post(
        "/payments/new/domestic/",
        {
            "debtor_account": iban,
            "amount": "1250.50",
            "creditor_name": "Bergen Utleie AS",
            "creditor_account": "1506.12.34508",
            "remittance_information": "Husleie desember",
        },
    )
    payment = Payment.objects.get(pk=int(drafted["Location"].strip("/").split("/")[1]))
    sent = client.post(
        f"/payments/{payment.pk}/review/",
        {"idempotency_key": str(payment.idempotency_key), "national_identity_number": PRIVATE_1},
    )
    assert _asks_identity(sent["Location"])
    path, paid = callback_target(BankBrowser().authorise(sent["Location"]))
    assert client.get(path, paid)["Location"] == f"/payments/{payment.pk}/"

    href = _start(client)

    assert not _asks_identity(href)  # the payment's SCA holds for the consent within the hour
    path, params = callback_target(BankBrowser().authorise(href))
    assert params["tpp-session-id"] == paid["tpp-session-id"] and params["psu-id"] == paid["psu-id"]
    assert client.get(path, params).status_code == 302
    assert BankConnection.objects.get(user=alice, access="accounts").state == ConnectionState.ACTIVE


def test_a_payment_in_the_hour_is_still_approved_with_its_own_sca(live_bank, alice_client, alice):
    _response, connected = portal_connect(alice_client)
    account = BankConnection.objects.get(user=alice).accounts.get(name="Brukskonto")
    drafted = alice_client.post("/payments/new/", cross_border(str(account.pk), amount="12 500"))
    payment = Payment.objects.get(pk=int(drafted["Location"].strip("/").split("/")[1]))

    sent = alice_client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})

    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
    assert _asks_identity(sent["Location"])  # dynamic linking: the session's hour never skips a payment's SCA
    path, params = callback_target(BankBrowser().authorise(sent["Location"]))
    assert params["tpp-session-id"] == connected["tpp-session-id"]
    assert alice_client.get(path, params)["Location"] == f"/payments/{payment.pk}/"


def test_after_the_hour_a_new_tpp_session_id_is_sent_and_the_bank_asks_again(live_bank, alice_client, alice):
    _response, first = portal_connect(alice_client)
    session = TppSession.objects.get(user=alice)
    assert session.session_id == first["tpp-session-id"] and session.sca_at is not None
    hour_ago = timezone.now() - timedelta(hours=1, seconds=1)
    TppSession.objects.filter(pk=session.pk).update(started_at=hour_ago, sca_at=hour_ago)

    href = _start(alice_client)

    assert _asks_identity(href)
    path, params = callback_target(BankBrowser().authorise(href))
    assert params["tpp-session-id"] != first["tpp-session-id"]
    assert params["tpp-session-id"] == TppSession.objects.get(user=alice).session_id
    assert ScaState.objects.get(token=params["state"]).tpp_session_id == params["tpp-session-id"]
    assert alice_client.get(path, params).status_code == 302


@pytest.fixture
def sent_headers(monkeypatch) -> list[dict[str, str]]:
    """The headers of every request the portal's client sends to the bank, as sent."""
    from xs2a.core import Requester

    seen: list[dict[str, str]] = []
    send = Requester.send

    def recording(self, call):
        seen.append({name.lower(): value for name, value in call.headers.items()})
        return send(self, call)

    monkeypatch.setattr(Requester, "send", recording)
    return seen


def test_the_in_app_box_sends_tpp_redirect_preferred_false(live_bank, alice_client, sent_headers):
    _start(alice_client)
    _start(alice_client, in_app="on")

    plain, in_app = (h for h in sent_headers if "tpp-redirect-preferred" in h or "psu-context" in h)
    assert "tpp-redirect-preferred" not in plain
    assert in_app["tpp-redirect-preferred"] == "false"
    # Each start has its own TPP-Redirect-URI naming its state, and both carry the user's TPP-Session-ID.
    assert plain["tpp-redirect-uri"] != in_app["tpp-redirect-uri"]
    assert plain["tpp-session-id"] == in_app["tpp-session-id"]
