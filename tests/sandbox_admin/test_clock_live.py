"""The sandbox area's clock and batch buttons against the running sandbox bank: the bank's clock moves, its
batches run, every call is audited for the staff member, and the portal reads the payments in flight at once, so
that a payment's status moves in the portal without "Check the status now"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from core.models import BankCall
from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.services.polling import payment_poll
from tests.live_bank import portal_connect
from tests.payments.journeys import account_named, approve_at_bank, cross_border, draft, run_batches, send
from tpp_portal.celery import app

pytestmark = pytest.mark.live_bank

CLOCK = reverse("sandbox_admin:clock")
PRIVATE_1 = "13039319955"


@pytest.fixture
def eager_tasks():
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_page_shows_the_bank_time_and_the_buttons(charlie_client, bank_direct, restore_known_state):
    response = charlie_client.get(CLOCK)

    assert response.status_code == 200
    body = response.content.decode()
    assert response.context["bank_clock"].offset_seconds == 0
    assert "(the real time)" in body
    for label in ("Run a batch now", "+1 hour", "To the next batch", "+1 day"):
        assert f">{label}</button>" in body
    call = BankCall.objects.get()
    assert (call.method, call.path_template, call.status) == ("GET", "/v1/sandbox/clock", 200)
    assert call.user.email == "charlie@example.com"


def test_one_day_forward_moves_the_bank_clock(charlie_client, bank_direct, restore_known_state):
    before = bank_direct.sandbox.clock()

    response = charlie_client.post(CLOCK, {"move": "day"}, follow=True)

    after = bank_direct.sandbox.clock()
    assert after.offset_seconds - before.offset_seconds == 86400
    assert after.now - before.now >= timedelta(days=1)
    [message] = messages_of(response)
    assert message.startswith("The bank's clock moved 1 day forward and its batches ran: ")
    assert "No payment in the portal is waiting for the bank's batches." in message
    call = BankCall.objects.get(method="POST")
    assert (call.path_template, call.status, call.user.email) == (
        "/v1/sandbox/batches/run",
        200,
        "charlie@example.com",
    )


def test_a_refused_move_is_shown_with_no_change(charlie_client, bank_direct, restore_known_state):
    before = bank_direct.sandbox.clock()
    response = charlie_client.post(CLOCK, {"move": "a-year"}, follow=True)
    assert messages_of(response) == ["Choose one of the buttons."]
    assert bank_direct.sandbox.clock().offset_seconds == before.offset_seconds
    assert not BankCall.objects.filter(method="POST").exists()


def test_running_a_batch_moves_a_payment_in_flight_without_a_manual_check(
    alice,
    alice_client,
    charlie_client,
    bank_direct,
    restore_known_state,
    eager_tasks,
    django_capture_on_commit_callbacks,
):
    portal_connect(alice_client)
    account = account_named(alice, "Brukskonto")  # about 18 000 NOK available in the known state
    payment = draft(alice_client, cross_border(str(account.pk), amount="99000"))
    approve_at_bank(alice_client, send(alice_client, payment), identity=PRIVATE_1)
    assert payment_poll(payment_id=payment.pk).status == "PDNG"
    run_batches()  # the bank's batch finds the funds missing ...
    assert payment_poll(payment_id=payment.pk).status == "ACCP"  # ... and the portal has seen that
    payment.refresh_from_db()
    assert payment.next_poll_at is not None  # planned after the next batch on the real clock
    # the funds arrive
    bank_direct.sandbox.create_mock_transaction(
        account.resource_id,
        {
            "transactionAmount": {"amount": "100000", "currency": "NOK"},
            "bookingStatus": "booked",
            "debtorAccount": {"iban": "NO9386011117947"},
        },
    )

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = charlie_client.post(CLOCK, {"move": "now"}, follow=True)

    assert len(callbacks) == 1  # the polls are enqueued once the request's transaction commits
    at_bank = bank_direct.payments.status(payment_id=payment.payment_id, product=payment.product)
    assert at_bank.transaction_status == "ACSP"  # the bank's batch moved it on ...
    payment.refresh_from_db()
    assert payment.transaction_status == "ACSP"  # ... and the portal read it, unasked
    statuses = list(
        PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.STATUS).values_list(
            "transaction_status", flat=True
        )
    )
    assert statuses == ["RCVD", "PDNG", "ACCP", "ACSP"]
    [message] = messages_of(response)
    assert message.startswith("The bank ran a batch now: 1 payment step. Bank time ")
    assert message.endswith("The portal is checking 1 payment in flight now.")
    # what the open payment page's script reads shows the new status
    live = alice_client.get(reverse("payment-status-json", args=[payment.pk])).json()
    assert (live["transactionStatus"], live["insufficientFunds"], live["live"]) == ("ACSP", False, True)
    # the batch run is charlie's in the audit log, the poll after it the portal's own (no user)
    run = BankCall.objects.get(path_template="/v1/sandbox/batches/run", user__isnull=False)
    assert run.user.email == "charlie@example.com"
    poll = BankCall.objects.filter(object_id=str(payment.pk), method="GET").latest("id")
    assert poll.user is None and poll.status == 200
    assert Payment.objects.get(pk=payment.pk).next_poll_at is not None  # ACSP: polled on until settled
