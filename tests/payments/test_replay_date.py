"""A "check now" right after the lost send: the replay is signed over the same X-Request-ID, body and PSU
headers, so only its Date (whole seconds) tells it apart from the first send, and a bank refuses a Signature it
has seen. Found by the browser journey (tests/browser/test_lost_answer_journey.py): a quick "check now" was
refused by the sandbox bank as a replayed request and the payment passed to staff in the bank mode that would
have answered it."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from payments.models import Payment, PaymentState
from payments.services import initiation
from tests.payments.test_initiation import PRESENCE, _submit, bank, connection, draft  # noqa: F401 - fixtures
from xs2a.errors import OutcomeUnknownError


def test_a_replay_is_sent_in_a_later_second_than_the_lost_send(bank, draft, alice, monkeypatch):  # noqa: F811
    seconds: list[int] = []
    initiate = bank.initiate

    def initiate_noting_the_second(body, **kwargs):
        seconds.append(int(datetime.now(UTC).timestamp()))  # the second the client would put in Date
        return initiate(body, **kwargs)

    monkeypatch.setattr(bank, "initiate", initiate_noting_the_second)
    bank.raise_on_initiate.append(OutcomeUnknownError("connection reset", request_id=str(draft.request_id)))
    time.sleep(1.02 - time.time() % 1)  # the start of a second: the send and the check fit in it
    payment = _submit(draft, alice).payment
    # The first check waits 15 s after the loss anyway; without that wait, the second still differs.
    Payment.objects.filter(pk=payment.pk).update(replay_not_before=None)

    outcome = initiation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)

    assert outcome.state == PaymentState.INITIATED
    first, replay = seconds
    assert replay > first
