"""Status polling against the sandbox bank running as a real process: the domestic product's status cannot be
read before approval (spec 3 rule 5) and that is not an error; a payment larger than the account holds goes
ACCP with fundsAvailable false and the page says "insufficient funds", then RJCT a day later; the beat
dispatcher's polls find every status."""

from __future__ import annotations

from datetime import datetime

import pytest

from core.bank import bank_client
from core.models import BankCall
from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services.polling import due_payment_ids, payment_poll
from tests.live_bank import live_bank, live_bank_server, portal_connect  # noqa: F401 - the fixtures
from tests.payments.journeys import account_named, approve_at_bank, cross_border, draft, run_batches, send

pytestmark = pytest.mark.live_bank

PRIVATE_1 = "13039319955"


def test_domestic_status_unreadable_before_approval_is_no_error(live_bank, alice, alice_client):  # noqa: F811
    portal_connect(alice_client)
    account = account_named(alice, "Brukskonto")
    payment = draft(
        alice_client,
        {
            "debtor_account": str(account.pk),
            "amount": "310",
            "creditor_name": "Bergen Utleie AS",
            "creditor_account": "1506.12.34508",
            "remittance_information": "Husleie",
        },
        url="/payments/new/domestic/",
    )
    location = send(alice_client, payment)

    before = payment_poll(payment_id=payment.pk)

    assert before.ok and not before.skipped and before.status == "RCVD"
    assert "once it has been approved" in before.message
    call = BankCall.objects.filter(object_id=str(payment.pk), method="GET").latest("id")
    assert call.status == 404 and call.tpp_message_codes == ["RESOURCE_UNKNOWN"]
    assert not PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.BANK_ERROR).exists()
    payment.refresh_from_db()
    assert payment.next_poll_at is not None  # tried again later

    approve_at_bank(alice_client, location, identity=PRIVATE_1)
    assert payment_poll(payment_id=payment.pk).status == "PDNG"


def test_insufficient_funds_is_shown_then_rejected_a_day_later(live_bank, alice, alice_client):  # noqa: F811
    portal_connect(alice_client)
    account = account_named(alice, "Brukskonto")  # about 18 000 NOK available in the known state
    payment = draft(alice_client, cross_border(str(account.pk), amount="99000"))
    approve_at_bank(alice_client, send(alice_client, payment), identity=PRIVATE_1)
    assert payment_poll(payment_id=payment.pk).status == "PDNG"

    run_batches()
    outcome = payment_poll(payment_id=payment.pk)

    assert outcome.status == "ACCP"
    payment.refresh_from_db()
    assert payment.funds_available is False and payment.state == PaymentState.AWAITING_STATUS
    page = alice_client.get(f"/payments/{payment.pk}/").content.decode()
    assert (
        "Insufficient funds" in page and 'id="payment-insufficient-funds" class="message message-warning">' in page
    )

    # The next day on the bank's clock, past its first batch (05:00 UTC), the funds are still missing. A day and
    # six hours: 24 hours from a check between midnight and 05:00 reach only batches of the same day.
    answer = bank_client().request("POST", "/v1/sandbox/batches/run", json_body={"advanceSeconds": 30 * 3600})
    assert answer.status == 200
    # the poll is due on the bank's clock (a day has passed) and reads RJCT
    bank_now = datetime.fromisoformat(answer.json()["now"])
    Payment.objects.filter(pk=payment.pk).update(next_poll_at=bank_now)
    assert payment.pk in due_payment_ids(now=bank_now)
    assert payment_poll(payment_id=payment.pk, now=bank_now).status == "RJCT"
    payment.refresh_from_db()
    assert (payment.state, payment.next_poll_at) == (PaymentState.FINAL, None)
    statuses = list(
        PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.STATUS).values_list(
            "transaction_status", "funds_available"
        )
    )
    assert statuses == [("RCVD", None), ("PDNG", None), ("ACCP", False), ("RJCT", False)]
    assert payment.pk not in due_payment_ids(now=bank_now)  # final: never polled again
