"""The payment form's intent after the browser's Back button (static/js/payment_intent.js): the page is fetched
again with a new ``intent``, and the browser puts back the ``intent_kept`` the script filled in the first time.
The browser side is walked in tests/browser/test_lost_answer_journey.py (step 5)."""

from __future__ import annotations

import uuid

from payments.models import Payment
from tests.payments.test_one_intent import _form, _typed, connection  # noqa: F401 - a fixture


def test_the_kept_intent_finds_the_payment_of_the_form_shown_before(alice_client, alice, connection):  # noqa: F811
    data = {**_form(alice_client, "/payments/new/"), **_typed(connection)}
    first = alice_client.post("/payments/new/", {**data, "intent_kept": data["intent"]})
    assert first.status_code == 302
    payment = Payment.objects.get(user=alice)

    # Back: the form fetched again has a new intent; the browser put back the one kept
    again = alice_client.post(
        "/payments/new/",
        {**data, **_form(alice_client, "/payments/new/"), "intent_kept": data["intent"]},
        follow=True,
    )

    assert Payment.objects.filter(user=alice).count() == 1
    assert again.redirect_chain[-1][0] == f"/payments/{payment.pk}/review/"
    assert "This form was sent already" in again.content.decode()


def test_without_a_kept_intent_the_form_s_own_is_used(alice_client, alice, connection):  # noqa: F811
    data = {**_form(alice_client, "/payments/new/"), **_typed(connection)}
    alice_client.post("/payments/new/", {**data, "intent_kept": ""})
    alice_client.post("/payments/new/", {**data, "intent_kept": "not a uuid"})

    assert Payment.objects.filter(user=alice).count() == 1
    assert Payment.objects.get(user=alice).intent_key == uuid.UUID(data["intent"])
