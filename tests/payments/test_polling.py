"""Status polling: what a poll stores, when the next one runs, stopping at final statuses, resuming from the
database, the single-poller lease, and a poll that dies half-way."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from datetime import time as clock_time
from email.utils import format_datetime
from urllib.parse import unquote

import pytest
from django.conf import settings
from django.db import OperationalError, connection
from django.utils import timezone

from core.models import BankCall
from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentProduct, PaymentState
from payments.services import polling
from tests import bankfake
from tests.payments.payment_factories import PaymentFactory, status_event

#: The bank's status of a payment (the path the portal builds, or the status link of the bank's answer).
STATUS = "/v1/payments/{product}/{paymentId}/status"
#: The scaStatus of one authorisation of a payment.
SCA_STATUS = "/v1/payments/{product}/{paymentId}/authorisations/{authorisationId}"


def answers(fake_bank, *statuses) -> None:
    """The bank answers the status reads with ``statuses`` (each a status code or an answer), the last repeated."""
    fake_bank.add("GET", STATUS, *(bankfake.payment_status(s) if isinstance(s, str) else s for s in statuses))


def status_reads(fake_bank) -> list[str]:
    """The paths of the status reads the bank received (retries of one read included)."""
    return [unquote(r.path) for r in fake_bank.sent("GET", STATUS)]


def status(value: str, funds: bool | None = None) -> dict:
    return bankfake.payment_status(value, funds_available=funds)


NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)  # a Monday; the bank's batches: 05, 08, 11, 13, 15 UTC


SANDBOX_BATCHES = tuple(clock_time(h, 0) for h in (5, 8, 11, 13, 15))  # the sandbox bank's (BANK_SIM_BATCH_TIMES)


def test_a_poll_stores_the_new_status_with_a_timeline_event_and_plans_the_next_after_the_batch(
    alice, fake_bank, settings
):
    settings.BANK_BATCH_TIMES = SANDBOX_BATCHES
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice, next_poll_at=NOW)

    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert (outcome.ok, outcome.status, outcome.changed, outcome.skipped) == (True, "PDNG", True, False)
    payment.refresh_from_db()
    assert payment.transaction_status == "PDNG"
    assert payment.state == PaymentState.AWAITING_STATUS
    assert payment.poll_count == 1
    # the next batch is at 11:00 UTC: read its result two minutes later, not before
    assert payment.next_poll_at == datetime(2026, 3, 2, 11, 2, tzinfo=UTC)
    assert payment.poll_lease_until is None and payment.poll_lease_token == ""
    event = PaymentEvent.objects.get(payment=payment)
    assert (event.kind, event.transaction_status, event.at) == (PaymentEventKind.STATUS, "PDNG", NOW)
    assert status_reads(fake_bank) == [f"/v1/payments/{payment.product}/{payment.payment_id}/status"]


def test_the_status_link_of_the_bank_is_used_when_it_gave_one(alice, fake_bank):
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice, links={"status": "/v1/payments/x/enc!!abc=/status"})

    polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert status_reads(fake_bank) == ["/v1/payments/x/enc!!abc=/status"]


def test_an_unchanged_status_adds_no_event(alice, fake_bank):
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)
    status_event(payment, "PDNG", at=NOW - timedelta(minutes=5))

    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert (outcome.ok, outcome.changed) == (True, False)
    assert PaymentEvent.objects.filter(payment=payment).count() == 1
    assert Payment.objects.get(pk=payment.pk).poll_count == 1


@pytest.mark.parametrize("final", ["ACSC", "RJCT", "CANC"])
def test_a_final_status_stops_polling(alice, fake_bank, final):
    answers(fake_bank, final)
    payment = PaymentFactory(user=alice, transaction_status="ACSP", next_poll_at=NOW)

    polling.payment_poll(payment_id=payment.pk, now=NOW)

    payment.refresh_from_db()
    assert (payment.transaction_status, payment.state, payment.next_poll_at, payment.final_at) == (
        final,
        PaymentState.FINAL,
        None,
        NOW,
    )
    # a late duplicate task does not call the bank again
    assert polling.payment_poll(payment_id=payment.pk, now=NOW + timedelta(minutes=1)).skipped
    assert len(fake_bank.received) == 1


def test_accp_without_funds_is_stored_and_a_later_change_of_funds_is_an_event(alice, fake_bank):
    answers(fake_bank, status("ACCP", False), status("ACCP", True))
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)

    polling.payment_poll(payment_id=payment.pk, now=NOW)
    payment.refresh_from_db()
    assert (payment.transaction_status, payment.funds_available) == ("ACCP", False)

    polling.payment_poll(payment_id=payment.pk, now=NOW + timedelta(hours=2))
    events = list(
        PaymentEvent.objects.filter(payment=payment).values_list("transaction_status", "funds_available")
    )
    assert events == [("ACCP", False), ("ACCP", True)]


def test_patc_keeps_the_payment_waiting_for_signers_and_backs_off(alice, fake_bank):
    answers(fake_bank, "PATC")
    payment = PaymentFactory(user=alice, context="CORPORATE", state=PaymentState.AUTHORISING)

    polling.payment_poll(payment_id=payment.pk, now=NOW)

    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING
    assert payment.next_poll_at == NOW + settings.PAYMENT_POLL_MIN_INTERVAL


def test_backoff_gets_slower_the_longer_the_status_has_not_changed(settings):
    settings.BANK_BATCH_TIMES = ()
    since = NOW
    waits = [
        polling.next_poll_time(status="PDNG", now=NOW + elapsed, unchanged_since=since) - (NOW + elapsed)
        for elapsed in (timedelta(0), timedelta(minutes=1), timedelta(minutes=10), timedelta(hours=1))
    ]
    assert waits == [timedelta(seconds=30), timedelta(minutes=1), timedelta(minutes=10), timedelta(hours=1)]
    far = polling.next_poll_time(status="PDNG", now=NOW + timedelta(days=1), unchanged_since=since)
    assert far - (NOW + timedelta(days=1)) == settings.PAYMENT_POLL_MAX_INTERVAL


def test_with_batches_the_next_poll_follows_the_next_batch_and_the_day_wraps(settings):
    settings.BANK_BATCH_TIMES = SANDBOX_BATCHES
    evening = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)
    # after the last batch the next is 05:00 the next morning, but overnight never more than 6 hours apart
    assert polling.next_poll_time(status="ACSP", now=evening, unchanged_since=evening) == evening + timedelta(
        hours=6
    )
    late = datetime(2026, 3, 3, 4, 0, tzinfo=UTC)
    assert polling.next_poll_time(status="ACSP", now=late, unchanged_since=evening) == datetime(
        2026, 3, 3, 5, 2, tzinfo=UTC
    )


def test_waiting_for_a_signer_slows_to_the_longest_wait_after_the_sca_window(settings):
    later = polling.next_poll_time(status="RCVD", now=NOW, unchanged_since=NOW - timedelta(hours=3))
    assert later == NOW + settings.PAYMENT_POLL_MAX_INTERVAL
    for final in ("ACSC", "ACCC", "RJCT", "CANC"):
        assert polling.next_poll_time(status=final, now=NOW, unchanged_since=NOW) is None


def test_a_status_the_portal_does_not_know_is_polled_with_backoff(settings):
    settings.BANK_BATCH_TIMES = ()
    soon = polling.next_poll_time(status="XXXX", now=NOW, unchanged_since=NOW)
    late = polling.next_poll_time(status="XXXX", now=NOW, unchanged_since=NOW - timedelta(days=1))
    assert NOW < soon < late <= NOW + settings.PAYMENT_POLL_MAX_INTERVAL


def test_domestic_status_unreadable_before_approval_is_not_an_error(alice, fake_bank):
    answers(fake_bank, bankfake.error(404, "RESOURCE_UNKNOWN"))
    payment = PaymentFactory(user=alice, product=PaymentProduct.DOMESTIC, state=PaymentState.AUTHORISING)

    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert outcome.ok and outcome.status == "RCVD"
    assert "approved" in outcome.message
    payment.refresh_from_db()
    assert payment.next_poll_at is not None and payment.next_poll_at > NOW
    assert not PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.BANK_ERROR).exists()


def test_a_bank_error_gives_the_banks_text_and_tries_again_later(alice, fake_bank):
    answers(fake_bank, bankfake.error(503, "SYSTEM_ERROR", "Maintenance until 10:00"))
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)

    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert (outcome.ok, outcome.message, outcome.status) == (False, "Maintenance until 10:00", "PDNG")
    payment.refresh_from_db()
    assert payment.transaction_status == "PDNG" and payment.next_poll_at > NOW


def test_a_429_waits_until_the_banks_reset(alice, fake_bank):
    reset = NOW + timedelta(hours=5)
    # The bank's reset moment as Retry-After (an HTTP date): past on the client's clock, so it tries again at
    # once (twice, as for any GET), then gives the 429 with the moment to the poll.
    until = {"Retry-After": format_datetime(reset, usegmt=True)}
    answers(fake_bank, bankfake.error(429, "ACCESS_EXCEEDED", "too many", headers=until))
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)

    polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert Payment.objects.get(pk=payment.pk).next_poll_at == reset


def test_an_unknown_payment_is_noted_once_on_the_timeline(alice, fake_bank):
    answers(fake_bank, bankfake.error(404, "RESOURCE_UNKNOWN", "No such payment"))
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)

    polling.payment_poll(payment_id=payment.pk, now=NOW)
    Payment.objects.filter(pk=payment.pk).update(next_poll_at=NOW)
    polling.payment_poll(payment_id=payment.pk, now=NOW + timedelta(minutes=1))

    errors = PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.BANK_ERROR)
    assert list(errors.values_list("detail", flat=True)) == ["No such payment"]


def test_a_payment_without_a_bank_id_is_not_polled(alice, fake_bank):
    payment = PaymentFactory(user=alice, payment_id="", state=PaymentState.OUTCOME_UNKNOWN, next_poll_at=NOW)

    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert outcome.skipped and fake_bank.received == []
    assert Payment.objects.get(pk=payment.pk).next_poll_at is None


# --- scheduling and resuming ---------------------------------------------------------------------------------


def test_poll_soon_sets_the_poll_due_and_enqueues_it_on_commit(
    alice, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("payments.tasks.poll_payment.apply_async", lambda args, **kw: sent.append(args[0]))
    payment = PaymentFactory(user=alice, next_poll_at=None)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        polling.poll_soon(payment)
        assert sent == []  # not before the commit
    assert Payment.objects.get(pk=payment.pk).next_poll_at is not None
    for callback in callbacks:
        callback()
    assert sent == [payment.pk]


def test_a_broker_that_cannot_be_reached_does_not_fail_the_approval(
    alice, monkeypatch, django_capture_on_commit_callbacks
):
    def broker_down(args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr("payments.tasks.poll_payment.apply_async", broker_down)
    payment = PaymentFactory(user=alice, next_poll_at=None)

    with django_capture_on_commit_callbacks(execute=True):
        polling.poll_soon(payment)

    # the poll stays due: beat's dispatcher enqueues it
    assert polling.due_payment_ids(now=timezone.now() + timedelta(seconds=1)) == [payment.pk]


def test_dispatch_enqueues_due_payments_once_and_again_when_the_task_was_lost(alice, monkeypatch):
    sent = []
    monkeypatch.setattr("payments.tasks.poll_payment.apply_async", lambda args, **kw: sent.append(args[0]))
    due = PaymentFactory(user=alice, next_poll_at=NOW - timedelta(minutes=1))
    PaymentFactory(user=alice, next_poll_at=NOW + timedelta(minutes=5))  # not yet
    PaymentFactory(user=alice, next_poll_at=None, transaction_status="ACSC")  # final
    leased = PaymentFactory(
        user=alice, next_poll_at=NOW - timedelta(minutes=1), poll_lease_until=NOW + timedelta(minutes=1)
    )

    assert polling.polls_dispatch(now=NOW) == [due.pk]
    assert polling.polls_dispatch(now=NOW + timedelta(seconds=60)) == []  # queued: not enqueued twice
    # the task never ran (a worker killed with it): due again after one lease, and the lease of the other ended
    later = NOW + settings.PAYMENT_POLL_LEASE + timedelta(seconds=1)
    assert sorted(polling.polls_dispatch(now=later)) == sorted([due.pk, leased.pk])
    assert sent[0] == due.pk and sorted(sent[1:]) == sorted([due.pk, leased.pk])


def test_the_beat_schedule_runs_the_dispatcher_every_minute(settings):
    from tpp_portal.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["dispatch-payment-status-polls"]
    assert entry["task"] == "payments.dispatch_due_polls" and entry["schedule"] == 60.0
    app.loader.import_default_modules()
    assert "payments.dispatch_due_polls" in app.tasks and "payments.poll_payment" in app.tasks


def test_the_poll_task_runs_a_poll(alice, fake_bank):
    from payments.tasks import poll_payment

    answers(fake_bank, "PDNG")

    payment = PaymentFactory(user=alice)

    assert poll_payment.apply(args=[payment.pk]).get() == "PDNG"
    assert Payment.objects.get(pk=payment.pk).transaction_status == "PDNG"


# --- one poller per payment ----------------------------------------------------------------------------------


def test_a_second_poller_does_nothing_while_the_first_holds_the_lease(alice, fake_bank):
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice)
    token = polling.lease_take(payment_id=payment.pk, now=NOW)

    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW + timedelta(seconds=30))

    assert token and outcome.skipped and not outcome.ok and fake_bank.received == []
    # an expired lease (its holder died) is taken over
    resumed = NOW + settings.PAYMENT_POLL_LEASE + timedelta(seconds=1)
    assert polling.payment_poll(payment_id=payment.pk, now=resumed).ok
    assert len(fake_bank.received) == 1


def test_a_poller_whose_lease_was_taken_over_writes_nothing(alice, fake_bank):
    payment = PaymentFactory(user=alice)

    def slow_bank(received):
        # while this poller waits for the bank beyond its lease, another takes the lease over
        Payment.objects.filter(pk=payment.pk).update(poll_lease_token="someone-else")
        return bankfake.Answer(200, status("ACSC"))

    answers(fake_bank, slow_bank)
    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    assert outcome.skipped
    payment.refresh_from_db()
    assert payment.transaction_status == "RCVD" and not PaymentEvent.objects.exists()
    assert payment.poll_lease_token == "someone-else"  # not released: it is not this poller's


def test_a_lease_lost_between_the_read_and_the_write_rolls_the_poll_back(alice, fake_bank, monkeypatch):
    """On SQLite select_for_update locks nothing: the write itself is conditional on the lease token, and
    when it finds the lease gone, the timeline event written just before is rolled back too."""
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice)
    create = PaymentEvent.objects.create

    def create_then_lose_the_lease(**kwargs):
        event = create(**kwargs)
        Payment.objects.filter(pk=payment.pk).update(poll_lease_token="someone-else")
        return event

    monkeypatch.setattr(PaymentEvent.objects, "create", create_then_lose_the_lease)
    outcome = polling.payment_poll(payment_id=payment.pk, now=NOW)

    payment.refresh_from_db()
    assert outcome.skipped and payment.transaction_status == "RCVD" and payment.poll_count == 0
    assert not PaymentEvent.objects.filter(payment=payment).exists()


class HeldCall:
    """A status answer held back until the test releases it; counts the calls in flight at once."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.inside = 0
        self.most_inside = 0

    def __call__(self, received):
        with self.lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        self.entered.set()
        try:
            assert self.release.wait(10), "the test never released the bank call"
            return bankfake.Answer(200, status("PDNG"))
        finally:
            with self.lock:
                self.inside -= 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_pollers_racing_for_one_payment_make_one_bank_call(fake_bank):
    """Real threads, each with its own database connection, start together; the bank call is held open so
    both are in flight at once. On PostgreSQL and on SQLite the conditional UPDATE lets only one through."""
    from tests.factories import UserFactory

    payment = PaymentFactory(user=UserFactory())
    bank = HeldCall()
    answers(fake_bank, bank)
    start = threading.Barrier(4)
    outcomes: list[polling.PollOutcome] = []
    errors: list[BaseException] = []

    def poll():
        try:
            start.wait(5)
            for _attempt in range(50):
                try:
                    outcomes.append(polling.payment_poll(payment_id=payment.pk))
                    return
                except OperationalError as exc:
                    # SQLite's in-memory test database (shared cache) refuses a concurrent statement at once
                    # instead of waiting as PostgreSQL (and the file database, with its timeout) do: try again.
                    if connection.vendor != "sqlite" or "locked" not in str(exc):
                        raise
                    time.sleep(0.02)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=poll) for _ in range(4)]
    for thread in threads:
        thread.start()
    assert bank.entered.wait(10)
    # the others have run into the lease by now or will; give them time while the first is in the bank call
    for _ in range(50):
        if len(outcomes) == 3:
            break
        threading.Event().wait(0.1)
    bank.release.set()
    for thread in threads:
        thread.join(15)

    assert errors == []
    assert len(fake_bank.received) == 1 and bank.most_inside == 1
    assert sorted(o.skipped for o in outcomes) == [False, True, True, True]
    assert Payment.objects.get(pk=payment.pk).poll_count == 1
    assert PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.STATUS).count() == 1


def test_a_poll_asked_for_while_another_runs_stays_due(alice, fake_bank):
    """The SCA callback (or a cancellation) calls poll_soon while the worker's poll is in the bank call: that
    poll's answer may predate the approval, so it must not push the asked-for poll back to the next batch."""
    payment = PaymentFactory(user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING)
    asked = []

    def approval_during_the_call(received):
        polling.poll_soon(Payment.objects.get(pk=payment.pk))  # its task would find the lease held
        asked.append(Payment.objects.get(pk=payment.pk).next_poll_at)
        return bankfake.Answer(200, status("RCVD"))

    answers(fake_bank, approval_during_the_call)
    outcome = polling.payment_poll(payment_id=payment.pk)

    payment.refresh_from_db()
    assert outcome.ok and not outcome.skipped
    assert payment.next_poll_at == asked[0] <= timezone.now()  # still due: the dispatcher runs it next minute
    assert polling.due_payment_ids() == [payment.pk]


def test_a_poll_not_asked_for_during_it_plans_its_own_next_poll(alice, fake_bank):
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING)
    polling.poll_soon(payment)  # before the poll: this is the poll it asked for

    polling.payment_poll(payment_id=payment.pk)

    payment.refresh_from_db()
    assert payment.next_poll_at > timezone.now()  # PDNG: after the next batch, not due again at once
    assert polling.due_payment_ids() == []


class WorkerKilled(BaseException):
    """Stands for SIGKILL: raised inside the bank call, with the lease release disabled as a dead process
    runs no cleanup."""


def test_a_poll_killed_in_the_middle_loses_nothing_and_is_resumed(alice, fake_bank, monkeypatch):
    payment = PaymentFactory(user=alice, transaction_status="ACSP", state=PaymentState.AWAITING_STATUS)
    Payment.objects.filter(pk=payment.pk).update(next_poll_at=NOW)

    def killed(received):
        raise WorkerKilled

    answers(fake_bank, killed, "ACSC")
    release = polling.lease_release
    monkeypatch.setattr(polling, "lease_release", lambda **kwargs: None)

    with pytest.raises(WorkerKilled):
        polling.payment_poll(payment_id=payment.pk, now=NOW)

    payment.refresh_from_db()
    assert payment.transaction_status == "ACSP" and payment.next_poll_at == NOW  # still due, nothing written
    assert payment.poll_lease_until is not None
    assert polling.due_payment_ids(now=NOW + timedelta(seconds=30)) == []  # the dead poller's lease holds
    monkeypatch.setattr(polling, "lease_release", release)

    resumed_at = NOW + settings.PAYMENT_POLL_LEASE + timedelta(seconds=1)
    assert polling.due_payment_ids(now=resumed_at) == [payment.pk]
    outcome = polling.payment_poll(payment_id=payment.pk, now=resumed_at)

    assert (outcome.ok, outcome.status) == (True, "ACSC")
    payment.refresh_from_db()
    assert (payment.state, payment.next_poll_at, payment.poll_lease_until) == (PaymentState.FINAL, None, None)
    assert list(PaymentEvent.objects.filter(payment=payment).values_list("transaction_status", flat=True)) == [
        "ACSC"
    ]


def test_the_poll_is_audited_against_the_payment(alice, fake_bank):
    from django.contrib.contenttypes.models import ContentType

    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice)

    polling.payment_poll(payment_id=payment.pk, actor=alice, now=timezone.now())

    (call,) = BankCall.objects.all()
    assert (call.method, call.status, call.user) == ("GET", 200, alice)
    assert (call.content_type, call.object_id) == (ContentType.objects.get_for_model(Payment), str(payment.pk))


def test_an_approval_whose_redirect_never_comes_back_is_followed_from_the_start_of_its_sca(alice, fake_bank):
    """The PSU approves on another device, closes the tab, or takes longer than the portal's SCA state lives: the
    status is read on a backoff from the start of the SCA, so the payment moves on without the redirect; an SCA
    nobody completes stops being polled once the bank's SCA window is over."""
    started = NOW - timedelta(hours=5)  # initiated long before
    payment = PaymentFactory(user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING)
    Payment.objects.filter(pk=payment.pk).update(submitted_at=started)
    PaymentEvent.objects.create(payment=payment, at=NOW, kind=PaymentEventKind.SCA_STARTED, actor=alice)

    answers(fake_bank, "RCVD", "PDNG")  # then approved elsewhere: no callback came
    polling.payment_poll(payment_id=payment.pk, now=NOW + timedelta(seconds=30))
    payment.refresh_from_db()
    # Still waiting: polled again soon (backoff from the SCA's start, not from the initiation five hours ago).
    assert payment.state == PaymentState.AUTHORISING and payment.next_poll_at is not None
    assert payment.next_poll_at - (NOW + timedelta(seconds=30)) <= timedelta(minutes=1)

    polling.payment_poll(payment_id=payment.pk, now=payment.next_poll_at)
    payment.refresh_from_db()
    assert payment.state == PaymentState.AWAITING_STATUS and payment.transaction_status == "PDNG"


def test_an_sca_nobody_completes_is_read_now_and_then_after_the_window(alice, fake_bank, settings):
    payment = PaymentFactory(
        user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING, submitted_at=NOW
    )
    PaymentEvent.objects.create(payment=payment, at=NOW, kind=PaymentEventKind.SCA_STARTED, actor=alice)
    answers(fake_bank, "RCVD")
    moment = NOW + settings.PAYMENT_POLL_SIGNERS_WINDOW + timedelta(seconds=1)

    polling.payment_poll(payment_id=payment.pk, now=moment)

    payment.refresh_from_db()
    assert payment.next_poll_at == moment + settings.PAYMENT_POLL_MAX_INTERVAL
    assert payment.staff_flagged_at is None


@pytest.mark.parametrize("answer", ["XXXX", "RCVD", "error"])
def test_a_payment_not_final_at_the_horizon_goes_to_staff_and_is_polled_no_more(
    alice, fake_bank, settings, answer
):
    payment = PaymentFactory(
        user=alice, transaction_status="ACTC", state=PaymentState.AWAITING_STATUS, submitted_at=NOW
    )
    answers(fake_bank, answer if answer != "error" else bankfake.error(503, "SERVICE_UNAVAILABLE"))
    moment = NOW + settings.PAYMENT_POLL_HORIZON + timedelta(minutes=1)

    polling.payment_poll(payment_id=payment.pk, now=moment)
    polling.payment_poll(payment_id=payment.pk, now=moment + timedelta(minutes=1))  # nothing due: one note

    payment.refresh_from_db()
    assert payment.next_poll_at is None
    assert payment.staff_flagged_at == moment
    assert "7 days" in payment.staff_reason
    assert payment.events.filter(kind=PaymentEventKind.STAFF).count() == 1


def test_a_payment_inside_the_horizon_keeps_being_polled(alice, fake_bank, settings):
    payment = PaymentFactory(
        user=alice, transaction_status="ACTC", state=PaymentState.AWAITING_STATUS, submitted_at=NOW
    )
    answers(fake_bank, "XXXX")

    polling.payment_poll(payment_id=payment.pk, now=NOW + settings.PAYMENT_POLL_HORIZON - timedelta(minutes=1))

    payment.refresh_from_db()
    assert payment.next_poll_at is not None and payment.staff_flagged_at is None
    assert payment.state == PaymentState.AWAITING_STATUS


def test_starting_an_approval_plans_the_first_status_read(alice, fake_bank):
    from payments.services import authorisation
    from xs2a.psu import PsuContext

    fake_bank.add(
        "POST",
        "/v1/payments/{product}/{paymentId}/authorisations",
        bankfake.Answer(201, bankfake.authorisation("https://bank.test/sca", sca_status="started")),
    )
    payment = PaymentFactory(
        user=alice, transaction_status="RCVD", state=PaymentState.INITIATED, next_poll_at=None
    )
    before = timezone.now()

    authorisation.authorisation_start(
        payment=payment, signer=alice, session_key="s" * 32, presence=PsuContext(ip_address="192.0.2.1")
    )

    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING
    assert (
        before + settings.PAYMENT_POLL_MIN_INTERVAL
        <= payment.next_poll_at
        <= timezone.now() + settings.PAYMENT_POLL_MIN_INTERVAL
    )


# --- approvals in the bank's app: the authorisation's scaStatus --------------------------------------------


@pytest.mark.parametrize(
    ("sca_status", "kind", "signed"),
    [("finalised", PaymentEventKind.SCA_DONE, True), ("failed", PaymentEventKind.SCA_FAILED, False)],
)
def test_an_approval_in_the_app_is_read_from_its_sca_status(alice, fake_bank, sca_status, kind, signed):
    from payments.models import PaymentAuthorisation

    payment = PaymentFactory(user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING)
    approval = PaymentAuthorisation.objects.create(
        payment=payment,
        signer=alice,
        started_at=timezone.now(),
        authorisation_id="auth-1",
        sca_status_href="/v1/payments/p/x/authorisations/auth-1",
    )
    fake_bank.add("GET", SCA_STATUS, bankfake.sca_status("started"), bankfake.sca_status(sca_status))
    answers(fake_bank, "RCVD")

    polling.payment_poll(payment_id=payment.pk)  # still started: nothing recorded
    approval.refresh_from_db()
    assert approval.sca_status == "started" and approval.completed_at is None and approval.failed_at is None

    polling.payment_poll(payment_id=payment.pk)

    approval.refresh_from_db()
    assert (approval.completed_at is not None) is signed and (approval.failed_at is not None) is not signed
    assert payment.events.filter(kind=kind, actor=alice).count() == 1
    sca_reads = [unquote(r.path) for r in fake_bank.sent("GET", SCA_STATUS)]
    assert sca_reads[-1] == "/v1/payments/p/x/authorisations/auth-1"
    polling.payment_poll(payment_id=payment.pk)  # ended: not read again
    assert len(fake_bank.sent("GET", SCA_STATUS)) == 2


def test_an_approval_read_that_fails_changes_nothing(alice, fake_bank):
    from payments.models import PaymentAuthorisation

    payment = PaymentFactory(user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING)
    approval = PaymentAuthorisation.objects.create(
        payment=payment, signer=alice, started_at=timezone.now(), authorisation_id="auth-1"
    )
    fake_bank.add("GET", SCA_STATUS, bankfake.error(503, "SERVICE_UNAVAILABLE", "down"))
    answers(fake_bank, "RCVD")

    outcome = polling.payment_poll(payment_id=payment.pk)

    approval.refresh_from_db()
    assert outcome.status == "RCVD" and approval.completed_at is None and approval.failed_at is None
