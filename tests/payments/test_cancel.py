"""Cancelling: offered while the bank allows it, DELETE sent once, the bank's refusal shown in its words, the
timeline notes the request, only the initiator may cancel."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from django.test import Client
from django.urls import reverse

from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from tests import bankfake
from tests.payments.payment_factories import PaymentFactory
from tests.payments.test_polling import answers, status_reads

PAYMENT = "/v1/payments/{product}/{paymentId}"


def _bank(fake_bank, cancelled: bankfake.Answer | None = None):
    """The bank cancels (DELETE: 204 without a body, or ``cancelled``) and then answers the status CANC."""
    fake_bank.add("DELETE", PAYMENT, cancelled or bankfake.Answer(204))
    answers(fake_bank, "CANC")
    return fake_bank


def deletes(fake_bank):
    return fake_bank.sent("DELETE", PAYMENT)


def test_cancelling_sends_delete_and_shows_the_cancelled_status(alice_client, alice, fake_bank):
    bank = _bank(fake_bank)
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)

    confirm = alice_client.get(reverse("payment-cancel", args=[payment.pk]))
    response = alice_client.post(reverse("payment-cancel", args=[payment.pk]), follow=True)

    assert confirm.status_code == 200 and "Cancel the payment?" in confirm.content.decode()
    (sent,) = deletes(bank)
    assert unquote(sent.path) == f"/v1/payments/{payment.product}/{payment.payment_id}"
    assert sent.headers["psu-ip-address"] == "127.0.0.1"  # the PSU is present
    assert "The payment is cancelled." in response.content.decode()
    payment.refresh_from_db()
    assert (payment.transaction_status, payment.state, payment.next_poll_at) == ("CANC", PaymentState.FINAL, None)
    kinds = list(PaymentEvent.objects.filter(payment=payment).values_list("kind", "transaction_status", "actor"))
    assert kinds == [(PaymentEventKind.CANCEL_REQUESTED, "", alice.pk), (PaymentEventKind.STATUS, "CANC", None)]


def test_the_banks_refusal_is_shown_in_its_words_and_nothing_changes(alice_client, alice, fake_bank):
    payment = PaymentFactory(user=alice, transaction_status="ACTC", state=PaymentState.AWAITING_STATUS)
    bank = _bank(fake_bank, bankfake.error(409, "CONFLICT", "The payment can no longer be cancelled (ACSP)."))

    response = alice_client.post(reverse("payment-cancel", args=[payment.pk]), follow=True)

    assert "The payment can no longer be cancelled (ACSP)." in response.content.decode()
    payment.refresh_from_db()
    assert payment.transaction_status == "ACTC" and payment.state == PaymentState.AWAITING_STATUS
    assert status_reads(bank) == []  # no status read after a refusal
    errors = PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.BANK_ERROR)
    assert list(errors.values_list("detail", flat=True)) == ["The payment can no longer be cancelled (ACSP)."]


@pytest.mark.parametrize("bank_status", ["ACSP", "ACSC", "RJCT", "CANC"])
def test_not_offered_once_settlement_has_begun(alice_client, alice, fake_bank, bank_status):
    bank = _bank(fake_bank)
    payment = PaymentFactory(user=alice, transaction_status=bank_status)

    page = alice_client.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    confirm = alice_client.get(reverse("payment-cancel", args=[payment.pk]))
    posted = alice_client.post(reverse("payment-cancel", args=[payment.pk]), follow=True)

    assert f'id="payment-cancel-link" href="/payments/{payment.pk}/cancel/" hidden' in page
    assert confirm.status_code == 302
    assert "can no longer be cancelled" in posted.content.decode()
    assert deletes(bank) == []


@pytest.mark.parametrize("bank_status", ["RCVD", "PATC", "PDNG", "ACTC", "ACCP"])
def test_offered_before_settlement(alice_client, alice, fake_bank, bank_status):
    _bank(fake_bank)
    payment = PaymentFactory(user=alice, transaction_status=bank_status)

    page = alice_client.get(reverse("payment-detail", args=[payment.pk])).content.decode()

    assert f'id="payment-cancel-link" href="/payments/{payment.pk}/cancel/">' in page


def test_a_payment_not_at_the_bank_cannot_be_cancelled_there(alice_client, alice, fake_bank):
    bank = _bank(fake_bank)
    payment = PaymentFactory(user=alice, payment_id="", transaction_status="", state=PaymentState.OUTCOME_UNKNOWN)

    alice_client.post(reverse("payment-cancel", args=[payment.pk]))

    assert deletes(bank) == []


def test_a_bank_asking_to_approve_the_cancellation_is_told_to_the_user(alice_client, alice, fake_bank):
    payment = PaymentFactory(user=alice, transaction_status="PDNG")
    links = {"startAuthorisation": {"href": "/v1/x/cancellation-authorisations"}}
    _bank(fake_bank, bankfake.Answer(202, {"transactionStatus": "ACTC", "_links": links}))

    response = alice_client.post(reverse("payment-cancel", args=[payment.pk]), follow=True)

    assert "asks for the cancellation to be approved" in response.content.decode()
    assert Payment.objects.get(pk=payment.pk).transaction_status == "PDNG"


def test_a_co_signer_of_the_company_may_see_but_not_cancel(alice, bob, fake_bank):
    bank = _bank(fake_bank)
    from tests.payments.test_multisign import corporate_pair

    payment = corporate_pair(alice, bob, transaction_status="PATC")
    browser = Client()
    browser.force_login(bob)

    assert browser.get(reverse("payment-detail", args=[payment.pk])).status_code == 200
    assert browser.post(reverse("payment-cancel", args=[payment.pk])).status_code == 404
    assert deletes(bank) == []


@pytest.mark.parametrize("name", ["payment-cancel", "payment-check", "payment-sign"])
def test_posts_without_the_csrf_token_are_refused(alice, fake_bank, name):
    bank = _bank(fake_bank)
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)

    response = browser.post(reverse(name, args=[payment.pk]))

    assert response.status_code == 403
    assert bank.received == [] and not PaymentEvent.objects.exists()
