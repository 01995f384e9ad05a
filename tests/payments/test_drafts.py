"""Drafts (saved and reviewed, never sent) on the payments list: deleted only after a confirmation, only by
their owner, only while never sent; a payment that reached the bank (or is being sent) is never deleted."""

from __future__ import annotations

import pytest
from django.urls import reverse

from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import drafts
from tests.payments.payment_factories import PaymentFactory


@pytest.fixture
def draft(alice) -> Payment:
    payment = PaymentFactory(
        user=alice,
        creditor_name="Never Sent AS",
        state=PaymentState.DRAFT,
        payment_id="",
        transaction_status="",
        submitted_at=None,
    )
    PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.CREATED, actor=alice)
    return payment


def test_the_owner_confirms_and_the_draft_is_deleted(alice_client, draft):
    url = reverse("payment-draft-delete", args=[draft.pk])

    confirm = alice_client.get(url)

    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Delete the draft?" in page and "Never Sent AS" in page and '<form method="post">' in page
    assert Payment.objects.filter(pk=draft.pk).exists()  # looking at the question deletes nothing

    response = alice_client.post(url, follow=True)

    assert response.redirect_chain == [(reverse("payment-list"), 302)]
    assert "The draft was deleted." in response.content.decode()
    assert "Never Sent AS" not in response.content.decode().split('class="payment-list"')[1]
    assert not Payment.objects.filter(pk=draft.pk).exists()
    assert not PaymentEvent.objects.filter(payment_id=draft.pk).exists()


def test_another_user_gets_404_and_the_draft_stays(bob_client, draft):
    url = reverse("payment-draft-delete", args=[draft.pk])

    assert bob_client.get(url).status_code == 404
    assert bob_client.post(url).status_code == 404
    assert Payment.objects.filter(pk=draft.pk).exists()


def test_anonymous_is_sent_to_sign_in(client, draft):
    for method in (client.get, client.post):
        response = method(reverse("payment-draft-delete", args=[draft.pk]))
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert Payment.objects.filter(pk=draft.pk).exists()


@pytest.mark.parametrize(
    "state", [PaymentState.SUBMITTING, PaymentState.AUTHORISING, PaymentState.FINAL, PaymentState.REFUSED]
)
def test_a_payment_that_was_sent_is_never_deleted(alice_client, alice, state):
    payment = PaymentFactory(user=alice, state=state)
    url = reverse("payment-draft-delete", args=[payment.pk])

    shown = alice_client.get(url)
    posted = alice_client.post(url, follow=True)

    assert shown.status_code == 302 and "/delete/" not in shown["Location"]
    assert "cannot be deleted" in posted.content.decode()
    assert Payment.objects.filter(pk=payment.pk, state=state).exists()


def test_the_service_deletes_only_the_owners_unsent_drafts(alice, bob, draft):
    sent_back = PaymentFactory(user=alice, state=PaymentState.DRAFT, payment_id="", submitted_at=None)
    Payment.objects.filter(pk=sent_back.pk).update(payment_id="enc!!known-at-the-bank")

    assert drafts.payment_draft_delete(user=bob, payment_id=draft.pk) is False
    assert drafts.payment_draft_delete(user=alice, payment_id=sent_back.pk) is False
    assert drafts.payment_draft_delete(user=alice, payment_id=draft.pk) is True
    assert drafts.payment_draft_delete(user=alice, payment_id=draft.pk) is False  # gone already
    assert list(Payment.objects.values_list("pk", flat=True)) == [sent_back.pk]


def test_a_draft_claimed_for_sending_meanwhile_is_kept(alice_client, draft):
    """The submit claims the row (DRAFT -> SUBMITTING) between the question and the answer: nothing is deleted."""
    url = reverse("payment-draft-delete", args=[draft.pk])
    assert alice_client.get(url).status_code == 200
    Payment.objects.filter(pk=draft.pk).update(state=PaymentState.SUBMITTING)

    response = alice_client.post(url, follow=True)

    assert "cannot be deleted" in response.content.decode()
    assert Payment.objects.filter(pk=draft.pk, state=PaymentState.SUBMITTING).exists()
