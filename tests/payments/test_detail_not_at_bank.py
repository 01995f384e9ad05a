"""The page of a payment staff settled as not at the bank (UNCONFIRMED -> NOT_AT_BANK): it was sent, so never
"Not sent yet", and nothing will change, so the page does not poll. Found by the browser journey of a lost
answer (tests/browser/test_lost_answer_journey.py, conflict and new modes)."""

from __future__ import annotations

from django.urls import reverse

from payments.models import PaymentState
from tests.payments.payment_factories import PaymentFactory


def test_a_payment_settled_as_not_at_the_bank_says_so_and_is_not_followed(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="", payment_id="", state=PaymentState.NOT_AT_BANK)

    page = alice_client.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    data = alice_client.get(reverse("payment-status-json", args=[payment.pk])).json()

    assert "Not sent yet" not in page
    assert data["statusLabel"] == "Not at the bank (checked by our staff)"
    assert "nothing was paid" in data["statusMeaning"] and "nothing was paid" in page
    assert data["live"] is False
