"""Multi-signature (PATC): who may see and sign the company's payment, the signature link for the next signer,
their own PSU-ID sent to the bank, and the signatures on the page. The full journey against the sandbox bank is
in test_multisign_live.py and the browser journey."""

from __future__ import annotations

import re
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from connections.crypto import lookup_hash
from connections.models import ConnectionState, ScaState
from payments.models import PaymentAuthorisation, PaymentEvent, PaymentEventKind
from payments.services.authorisation import PAYMENT_PURPOSE
from tests import bankfake
from tests.bank_factories import BankConnectionFactory
from tests.factories import UserFactory
from tests.payments.payment_factories import PaymentFactory
from users.security import REAUTHENTICATED_KEY

COMPANY = "6c3f0a8e-1d2b-4f5a-9e7c-0b1a2c3d4e5f"


def corporate_connection(user, *, company: str = COMPANY, **fields):
    return BankConnectionFactory(
        user=user,
        context="CORPORATE",
        psu_corporate_id=company,
        psu_corporate_id_hash=lookup_hash(company),
        **fields,
    )


def corporate_pair(initiator, cosigner, **payment_fields):
    """A corporate payment of ``initiator``'s company; ``cosigner`` has their own connection to it."""
    connection = corporate_connection(initiator)
    corporate_connection(cosigner)
    payment = PaymentFactory(user=initiator, context="CORPORATE", connection=connection, **payment_fields)
    PaymentAuthorisation.objects.create(payment=payment, signer=initiator, completed_at=timezone.now())
    return payment


#: startAuthorisation of a payment (the portal's path: the payments here carry no links).
START = "/v1/payments/{product}/{paymentId}/authorisations"


def _bank(fake_bank):
    """The bank starts each signer's SCA with a scaRedirect."""
    fake_bank.add("POST", START, bankfake.Answer(201, bankfake.authorisation("http://bank.test/sca/abc?x=1")))
    return fake_bank


def starts(fake_bank):
    return fake_bank.sent("POST", START)


def _signed_in(user, *, recent: bool = True) -> Client:
    """Signed in just now (so the password counts as typed recently), or with that moment forgotten."""
    browser = Client()
    browser.force_login(user)
    if not recent:
        session = browser.session
        session.pop(REAUTHENTICATED_KEY)
        session.save()
    return browser


def _tag(page: str, element_id: str) -> str:
    """The opening tag of the element with ``element_id``."""
    found = re.search(rf'<[a-z]+ id="{element_id}"[^>]*>', page)
    assert found, element_id
    return found.group()


def _sign_button_shown(page: str) -> bool:
    """The "Sign at the bank" form is rendered for every viewer; the page shows it (not ``hidden``) to a
    viewer who may sign, and its script swaps it with the share link when that changes."""
    assert "Sign at the bank" in page
    return " hidden" not in _tag(page, "payment-sign-form")


def test_the_next_signer_sees_the_payment_and_signs_with_their_own_psu_id(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    bob_connection = bob.bank_connections.get()
    browser = _signed_in(bob)

    page = browser.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    response = browser.post(reverse("payment-sign", args=[payment.pk]))

    assert _sign_button_shown(page) and "alice@example.com" in page
    assert response.status_code == 302 and response["Location"] == "http://bank.test/sca/abc?x=1"
    (start,) = starts(bank)
    assert start.headers["psu-id"] == bob_connection.psu_id
    assert start.headers["psu-corporate-id"] == COMPANY
    assert start.headers["psu-ip-address"] == "127.0.0.1"
    state = ScaState.objects.get(user=bob)
    assert state.purpose == PAYMENT_PURPOSE and start.headers["tpp-session-id"] == state.tpp_session_id
    assert start.headers["tpp-redirect-uri"].endswith(f"/bank/callback?state={state.token}")
    authorisation = PaymentAuthorisation.objects.get(payment=payment, signer=bob)
    assert authorisation.sca_state == state and authorisation.completed_at is None


def test_the_next_signer_may_ask_to_sign_in_the_banks_app(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = _signed_in(bob)
    assert 'name="in_app"' in browser.get(reverse("payment-detail", args=[payment.pk])).content.decode()

    browser.post(reverse("payment-sign", args=[payment.pk]), {"in_app": "on"})
    browser.post(reverse("payment-sign", args=[payment.pk]))

    assert [start.headers.get("tpp-redirect-preferred") for start in starts(bank)] == ["false", None]


def test_signing_needs_the_password_typed_recently(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = _signed_in(bob, recent=False)

    response = browser.post(reverse("payment-sign", args=[payment.pk]))

    assert response.status_code == 302 and response["Location"].startswith(reverse("reauthenticate"))
    # back to the payment page (a GET), not to the POST-only signing address, which would answer 405
    assert parse_qs(urlsplit(response["Location"]).query)["next"] == [reverse("payment-detail", args=[payment.pk])]
    assert starts(bank) == []


def test_a_stranger_gets_404_before_any_password_prompt(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = _signed_in(UserFactory(), recent=False)

    assert browser.post(reverse("payment-sign", args=[payment.pk])).status_code == 404
    assert starts(bank) == []


def test_the_initiator_gets_the_link_to_pass_on_not_a_sign_button(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = _signed_in(alice)

    page = browser.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    refused = browser.post(reverse("payment-sign", args=[payment.pk]), follow=True)

    assert not _sign_button_shown(page)
    assert f"http://testserver/payments/{payment.pk}/" in page
    assert " hidden" not in _tag(page, "payment-share")
    assert "needs no signature of yours" in refused.content.decode() and starts(bank) == []


def test_a_signer_who_signed_cannot_sign_again(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    PaymentAuthorisation.objects.create(payment=payment, signer=bob, completed_at=timezone.now())
    browser = _signed_in(bob)

    page = browser.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    browser.post(reverse("payment-sign", args=[payment.pk]))

    assert not _sign_button_shown(page) and starts(bank) == []


@pytest.mark.parametrize(
    "setup",
    ["other_company", "disconnected", "private_connection", "not_patc"],
)
def test_other_users_get_404(alice, bob, fake_bank, setup):
    bank = _bank(fake_bank)
    connection = corporate_connection(alice)
    status = "PDNG" if setup == "not_patc" else "PATC"
    payment = PaymentFactory(user=alice, context="CORPORATE", connection=connection, transaction_status=status)
    if setup == "other_company":
        corporate_connection(bob, company=str(uuid.uuid4()))
    elif setup == "disconnected":
        corporate_connection(bob, state=ConnectionState.DISCONNECTED)
    elif setup == "private_connection":
        BankConnectionFactory(user=bob)
    else:
        corporate_connection(bob)
    browser = _signed_in(bob)

    assert browser.get(reverse("payment-detail", args=[payment.pk])).status_code == 404
    assert browser.get(reverse("payment-status-json", args=[payment.pk])).status_code == 404
    assert browser.post(reverse("payment-sign", args=[payment.pk])).status_code == 404
    assert starts(bank) == []


def test_after_signing_the_cosigner_still_sees_the_payment(alice, bob, fake_bank):
    _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PDNG")
    PaymentAuthorisation.objects.create(payment=payment, signer=bob, completed_at=timezone.now())
    PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.SIGNATURE, actor=bob)
    browser = _signed_in(bob)

    page = browser.get(reverse("payment-detail", args=[payment.pk])).content.decode()

    assert "bob@example.com" in page and "Signature added" in page
    assert page.count("signed ") >= 2  # alice's and bob's signatures with their times


def test_the_live_redraw_gets_each_signatures_line_as_the_page_shows_it(alice, bob, fake_bank):
    _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    PaymentAuthorisation.objects.create(payment=payment, signer=bob)  # bob is at the bank's SCA screen now

    data = _signed_in(alice).get(reverse("payment-status-json", args=[payment.pk])).json()

    alice_line, bob_line = (s["text"] for s in data["signatures"])
    prefix = "alice@example.com: signed "
    assert alice_line.startswith(prefix) and len(alice_line) > len(prefix)  # with the time of the signature
    assert bob_line == "bob@example.com: signing at the bank"


def test_the_list_shows_the_company_payment_awaiting_the_cosigners_signature(alice, bob, fake_bank):
    _bank(fake_bank)
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = _signed_in(bob)

    page = browser.get(reverse("payment-list")).content.decode()

    assert f'href="/payments/{payment.pk}/"' in page and "awaits your signature" in page


@pytest.mark.parametrize(("after", "state"), [("PATC", "authorising"), ("PDNG", "awaiting_status")])
def test_a_signer_the_bank_exempts_counts_as_signed_and_the_bank_status_decides_what_follows(
    alice, bob, fake_bank, after, state
):
    """One signer of a company's payment exempted from SCA: their signature counts as the bank counts it, no
    approval is left open for them, and the status is read at once; whether more signers are needed is the bank's
    word (PATC: still being approved, the next signer is asked; PDNG: processing)."""
    # The bank asks the signer for no SCA (scaStatus exempted, no scaRedirect) and reports ``after``.
    exempted = bankfake.authorisation(None, sca_status="exempted", sca_status_href="/v1/x/authorisations/1")
    fake_bank.add("POST", START, bankfake.Answer(201, exempted))
    fake_bank.add("GET", "/v1/payments/{product}/{paymentId}/status", bankfake.payment_status(after))
    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = _signed_in(bob)

    response = browser.post(reverse("payment-sign", args=[payment.pk]))

    assert response.status_code == 302 and response["Location"] == reverse("payment-detail", args=[payment.pk])
    assert any("did not ask you to approve" in str(m) for m in response.wsgi_request._messages)
    signature = PaymentAuthorisation.objects.get(payment=payment, signer=bob)
    assert signature.completed_at is not None
    assert ScaState.objects.get(user=bob).used_at is not None  # no redirect back can use it
    event = PaymentEvent.objects.get(payment=payment, kind=PaymentEventKind.SIGNATURE, actor=bob)
    assert "did not ask for approval" in event.detail
    payment.refresh_from_db()
    assert payment.state == "awaiting_status" and payment.next_poll_at <= timezone.now()

    from payments.services.polling import payment_poll

    assert payment_poll(payment_id=payment.pk).status == after
    payment.refresh_from_db()
    assert payment.state == state
    page = browser.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    assert not _sign_button_shown(page)  # bob has signed: never asked again
