"""A "check now" right after the lost send: the replay is signed over the same X-Request-ID, body and PSU
headers, so only its Date (whole seconds) tells it apart from the first send, and a bank refuses a Signature it
has seen. Found by the browser journey (tests/browser/test_lost_answer_journey.py): a quick "check now" was
refused by the sandbox bank as a replayed request and the payment passed to staff in the bank mode that would
have answered it."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

from payments.models import Payment, PaymentState
from payments.services import reconciliation
from tests import bankfake
from tests.payments.test_initiation import PRESENCE, _bank, _submit, connection, draft  # noqa: F401 - fixtures


def test_a_replay_is_sent_in_a_later_second_than_the_lost_send(fake_bank, draft, alice):  # noqa: F811
    bank = _bank(fake_bank)
    bank.failures.append(bankfake.lost())  # the connection reset after the send
    time.sleep(1.02 - time.time() % 1)  # the start of a second: the send and the check fit in it
    payment = _submit(draft, alice).payment
    # The first check waits 15 s after the loss anyway; without that wait, the second still differs.
    Payment.objects.filter(pk=payment.pk).update(replay_not_before=None)

    outcome = reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)

    assert outcome.state == PaymentState.INITIATED
    first, replay = bank.initiations
    assert replay.headers["x-request-id"] == first.headers["x-request-id"]
    # The signed Date (whole seconds) is all that tells the replay apart from the first send.
    assert parsedate_to_datetime(replay.headers["date"]) > parsedate_to_datetime(first.headers["date"])
