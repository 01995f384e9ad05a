"""Two signers against the sandbox bank: Havbruk Nord AS's agreement needs two. alice (Private Customer 2, a
user of the agreement) pays from the company's account and approves; the bank says PATC; bob (the company's
own bank user, with his own portal account and corporate connection) opens the payment, signs at the bank with
his own identity; the bank says PDNG; the batches settle it (ACSC). And a cancel the bank allows / refuses."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from core.models import BankCall
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from payments.services.polling import payment_poll
from tests.live_bank import live_bank, live_bank_server, portal_connect  # noqa: F401 - the fixtures
from tests.payments.journeys import (
    CORPORATE_2,
    PRIVATE_2,
    account_named,
    approve_at_bank,
    cross_border,
    draft,
    run_batches,
    send,
)
from users.security import REAUTHENTICATED_KEY

pytestmark = pytest.mark.live_bank


def _client(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_two_signers_take_a_corporate_payment_from_patc_to_acsc(live_bank, alice, bob):  # noqa: F811
    initiator, cosigner = _client(alice), _client(bob)
    portal_connect(initiator, context="CORPORATE", identity=PRIVATE_2)
    portal_connect(cosigner, context="CORPORATE", identity=CORPORATE_2)
    company_account = account_named(alice, "Driftskonto")
    assert (
        company_account.connection.psu_corporate_id_hash
        == account_named(bob, "Driftskonto").connection.psu_corporate_id_hash
    )

    payment = draft(initiator, cross_border(str(company_account.pk)))
    back = approve_at_bank(initiator, send(initiator, payment), identity=PRIVATE_2, context="CORPORATE")
    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"

    assert payment_poll(payment_id=payment.pk).status == "PATC"
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING and payment.next_poll_at is not None

    # bob signs in as himself and opens the address alice passed on
    page = cosigner.get(f"/payments/{payment.pk}/").content.decode()
    assert "Sign at the bank" in page and "More signatures needed" in page
    started = cosigner.post(f"/payments/{payment.pk}/sign/")
    assert started.status_code == 302 and started["Location"].startswith(live_bank)
    back = approve_at_bank(cosigner, started["Location"], identity=CORPORATE_2, context="CORPORATE")
    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"

    assert payment_poll(payment_id=payment.pk).status == "PDNG"
    signers = set(
        PaymentAuthorisation.objects.filter(payment=payment, completed_at__isnull=False).values_list(
            "signer__email", flat=True
        )
    )
    assert signers == {"alice@example.com", "bob@example.com"}
    assert PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.SIGNATURE, actor=bob).count() == 1

    for _ in range(3):
        run_batches()
        if payment_poll(payment_id=payment.pk).status == "ACSC":
            break
    payment.refresh_from_db()
    assert (payment.transaction_status, payment.state, payment.next_poll_at) == ("ACSC", PaymentState.FINAL, None)
    statuses = list(
        PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.STATUS).values_list(
            "transaction_status", flat=True
        )
    )
    assert statuses == ["RCVD", "PATC", "PDNG", "ACSP", "ACSC"]
    page = initiator.get(f"/payments/{payment.pk}/").content.decode()
    assert "bob@example.com" in page and "Signature added" in page and "Completed" in page
    # bob's signature went to the bank with his own PSU-ID: the bank accepted two different signers
    starts = BankCall.objects.filter(method="POST", path_template__endswith="/authorisations", status=201)
    assert set(starts.values_list("user__email", flat=True)) == {"alice@example.com", "bob@example.com"}


def test_cancel_while_the_bank_allows_then_refused_after_settlement_began(live_bank, alice, alice_client):  # noqa: F811
    portal_connect(alice_client)
    account = account_named(alice, "Brukskonto")

    first = draft(alice_client, cross_border(str(account.pk), amount="1200"))
    approve_at_bank(alice_client, send(alice_client, first), identity="13039319955")
    assert payment_poll(payment_id=first.pk).status == "PDNG"
    cancelled = alice_client.post(f"/payments/{first.pk}/cancel/", follow=True)
    assert "The payment is cancelled." in cancelled.content.decode()
    first.refresh_from_db()
    assert (first.transaction_status, first.state) == ("CANC", PaymentState.FINAL)

    session = alice_client.session
    session[REAUTHENTICATED_KEY] = timezone.now().isoformat()
    session.save()
    second = draft(alice_client, cross_border(str(account.pk), amount="1300"))
    approve_at_bank(alice_client, send(alice_client, second), identity="13039319955")
    run_batches()
    assert payment_poll(payment_id=second.pk).status == "ACSP"
    page = alice_client.get(f"/payments/{second.pk}/").content.decode()
    assert f'href="/payments/{second.pk}/cancel/" hidden' in page  # not offered once settlement has begun
    refused = alice_client.post(f"/payments/{second.pk}/cancel/", follow=True)
    assert "can no longer be cancelled" in refused.content.decode()
    assert Payment.objects.get(pk=second.pk).transaction_status == "ACSP"
