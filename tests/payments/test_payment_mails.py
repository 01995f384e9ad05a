"""The mails that let a user follow a payment (payments.services.notifications): one mail per event in the
user's language, the rejection's reason in plain words, none when the user turned them off, at most
PAYMENT_MAILS_PER_HOUR per user and hour with the rest in the next mail, and never the same event twice (a
status read twice, two pollers at once, two senders at once)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.db import OperationalError, connection

from payments.models import Payment, PaymentAuthorisation, PaymentMail, PaymentMailKind, PaymentState
from payments.services import notifications, polling
from payments.services.lifecycle import payment_move
from payments.status import rejection_reason
from tests import bankfake
from tests.factories import UserFactory
from tests.payments.payment_factories import PaymentFactory
from tests.payments.test_multisign import corporate_connection, corporate_pair
from users.models import MailSettings

STATUS = "/v1/payments/{product}/{paymentId}/status"
NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


@pytest.fixture
def eager_tasks():
    """The tasks the services enqueue on commit run at once, in the test (as in the browser journeys)."""
    from tpp_portal.celery import app

    app.loader.import_default_modules()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


def poll_answering(fake_bank, payment, *statuses, funds=None, psu_message=None):
    answer = bankfake.payment_status(statuses[0], funds_available=funds)
    if psu_message:
        answer["psuMessage"] = psu_message
    fake_bank.add("GET", STATUS, answer, *(bankfake.payment_status(s) for s in statuses[1:]))
    return polling.payment_poll(payment_id=payment.pk)


def mail_language(user, language: str, *, on: bool = True) -> None:
    MailSettings.objects.update_or_create(user=user, defaults={"language": language, "payment_mails": on})


EVENTS = [
    # status, state before, (English subject, bokmål subject), a phrase of the English body
    (
        "PATC",
        PaymentState.AUTHORISING,
        ("needs another signature", "trenger en signatur til"),
        "another signature",
    ),
    ("RJCT", PaymentState.AWAITING_STATUS, ("was rejected", "ble avvist"), "No money was moved"),
    ("CANC", PaymentState.AWAITING_STATUS, ("was cancelled", "ble kansellert"), "was cancelled"),
    ("ACSC", PaymentState.AWAITING_STATUS, ("is settled", "er gjennomført"), "the money has left your account"),
]


@pytest.mark.parametrize(("status", "state", "subjects", "phrase"), EVENTS, ids=[e[0] for e in EVENTS])
@pytest.mark.parametrize("language", ["en", "nb"])
def test_each_event_sends_one_mail_in_the_users_language(
    alice, fake_bank, eager_tasks, django_capture_on_commit_callbacks, status, state, subjects, phrase, language
):
    mail_language(alice, language)
    payment = PaymentFactory(user=alice, state=state, transaction_status="RCVD", reference="FP1234567")

    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, status)

    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert sent.to == ["alice@example.com"]
    assert subjects[0 if language == "en" else 1] in sent.subject
    assert f"/payments/{payment.pk}/" in sent.body and "FP1234567" in sent.body and "/account/" in sent.body
    if language == "en":
        assert phrase in sent.body and "150,000.00 NOK" in sent.body and "Müller Maschinenbau GmbH" in sent.body
    else:
        assert "Hei," in sent.body and "150\xa0000,00 NOK" in sent.body and phrase not in sent.body
    row = PaymentMail.objects.get(payment=payment)
    assert row.sent_at is not None and row.transaction_status == status


def test_a_status_not_mailed_about_sends_nothing(
    alice, fake_bank, eager_tasks, django_capture_on_commit_callbacks
):
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACTC")
    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, "ACSP")
    assert mail.outbox == [] and not PaymentMail.objects.exists()


@pytest.mark.parametrize(
    ("funds", "psu_message", "reason"),
    [
        (False, None, "The account did not have enough money for the payment and its fee. No money was moved."),
        (None, "Creditor account closed.", "No money was moved. The bank says: Creditor account closed."),
        (None, None, "No money was moved. The bank gave no reason; your bank can tell you more."),
    ],
    ids=["funds", "bank-message", "none-given"],
)
def test_a_rejection_says_why_in_plain_words(
    alice, fake_bank, eager_tasks, django_capture_on_commit_callbacks, funds, psu_message, reason
):
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACCP")
    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, "RJCT", funds=funds, psu_message=psu_message)
    assert len(mail.outbox) == 1
    body = mail.outbox[0].body
    # The words of the payment page and the home page (payments.status.rejection_reason), said once.
    assert reason in body and reason == rejection_reason(
        Payment.objects.get(pk=payment.pk), lacked_funds=funds is False
    )
    assert body.count("No money was moved.") == 1


def test_the_rejection_reason_is_in_bokmal_for_a_bokmal_user(
    alice, fake_bank, eager_tasks, django_capture_on_commit_callbacks
):
    mail_language(alice, "nb")
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACCP")
    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, "RJCT", funds=False)
    assert "ikke nok penger" in mail.outbox[0].body


def test_no_mail_when_the_user_turned_them_off(alice, fake_bank, eager_tasks, django_capture_on_commit_callbacks):
    mail_language(alice, "en", on=False)
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACSP")
    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, "ACSC")
    assert mail.outbox == [] and not PaymentMail.objects.exists()


def test_events_waiting_when_the_user_turns_mails_off_are_dropped(alice):
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACSP")
    assert payment_move(payment.pk, source=payment.state, target=PaymentState.FINAL, transaction_status="ACSC")
    mail_language(alice, "en", on=False)

    assert notifications.payment_mails_send(alice.pk).events == 0
    assert mail.outbox == [] and PaymentMail.objects.get().dropped_at is not None
    mail_language(alice, "en", on=True)
    assert notifications.payment_mails_send(alice.pk).events == 0 and mail.outbox == []


def test_a_status_read_twice_is_mailed_once(alice, fake_bank, eager_tasks, django_capture_on_commit_callbacks):
    payment = PaymentFactory(user=alice, state=PaymentState.AUTHORISING, transaction_status="RCVD")
    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, "PATC", "PATC")
    with django_capture_on_commit_callbacks(execute=True):
        polling.payment_poll(payment_id=payment.pk)
    # ACSC after ACCC (or the other way) is one "settled"
    for status in ("ACSC", "ACCC"):
        payment_move(payment.pk, source=PaymentState.AUTHORISING, target=None, transaction_status=status)
    notifications.payment_mails_send(alice.pk)
    notifications.payment_mails_send(alice.pk)

    assert len(fake_bank.sent("GET", STATUS)) == 2
    assert [m.subject for m in mail.outbox] == [
        "Fjordpay: a payment needs another signature",
        "Fjordpay: a payment is settled",
    ]
    assert sorted(PaymentMail.objects.values_list("kind", flat=True)) == [
        PaymentMailKind.NEEDS_SIGNER,
        PaymentMailKind.SETTLED,
    ]


def test_the_hours_limit_holds_mails_back_and_folds_the_rest_into_the_next(alice, settings):
    settings.PAYMENT_MAILS_PER_HOUR = 2
    payments = [
        PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACSP") for _ in range(4)
    ]

    def settle(payment):
        payment_move(payment.pk, source=payment.state, target=PaymentState.FINAL, transaction_status="ACSC")

    settle(payments[0])
    assert notifications.payment_mails_send(alice.pk, now=NOW).events == 1
    settle(payments[1])
    assert notifications.payment_mails_send(alice.pk, now=NOW + timedelta(minutes=10)).events == 1
    settle(payments[2])
    settle(payments[3])
    held = notifications.payment_mails_send(alice.pk, now=NOW + timedelta(minutes=20))
    assert held == notifications.MailRun(events=0, wait_until=NOW + timedelta(hours=1))
    assert len(mail.outbox) == 2
    assert notifications.users_with_waiting_mails() == [alice.pk]

    later = notifications.payment_mails_send(alice.pk, now=NOW + timedelta(minutes=61))
    assert later.events == 2 and len(mail.outbox) == 3
    assert mail.outbox[2].subject == "Fjordpay: news about your payments"
    assert all(p.creditor_name in mail.outbox[2].body for p in payments[2:])
    assert mail.outbox[2].body.count("is settled") == 2
    assert notifications.users_with_waiting_mails() == []


def test_a_mail_the_server_refused_is_sent_by_the_next_try(alice, monkeypatch):
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACSP")
    payment_move(payment.pk, source=payment.state, target=PaymentState.FINAL, transaction_status="ACSC")

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("no mail server")

    monkeypatch.setattr(notifications, "send_mail", refuse)
    with pytest.raises(OSError):
        notifications.payment_mails_send(alice.pk)
    monkeypatch.undo()
    assert notifications.payment_mails_send(alice.pk).events == 1
    assert len(mail.outbox) == 1


def test_a_user_without_a_confirmed_address_gets_nothing(alice):
    alice.emailaddress_set.update(verified=False)
    payment = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACSP")
    payment_move(payment.pk, source=payment.state, target=PaymentState.FINAL, transaction_status="ACSC")
    assert notifications.payment_mails_send(alice.pk).events == 0
    assert mail.outbox == [] and PaymentMail.objects.get().dropped_at is not None


def _race(work, count: int = 4) -> list[BaseException]:
    """Run ``work`` in ``count`` threads (each its own database connection) started together."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run():
        try:
            start.wait(5)
            for _attempt in range(100):
                try:
                    work()
                    return
                except OperationalError as exc:
                    # SQLite's in-memory test database refuses a concurrent statement at once: try again.
                    if connection.vendor != "sqlite" or "locked" not in str(exc):
                        raise
                    time.sleep(0.02)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    return errors


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_writers_of_one_status_and_concurrent_senders_mail_once(eager_tasks):
    user = UserFactory()
    payment = PaymentFactory(user=user, state=PaymentState.AWAITING_STATUS, transaction_status="ACSP")

    def settle():
        # each writer stores the final status (as two pollers, or a poller and staff, would); the sender runs
        # on each commit (eager), so senders race too
        payment_move(
            payment.pk,
            source=(PaymentState.AWAITING_STATUS, PaymentState.FINAL),
            target=PaymentState.FINAL,
            transaction_status="ACSC",
        )

    assert _race(settle) == []
    assert _race(lambda: notifications.payment_mails_send(user.pk)) == []
    assert len(mail.outbox) == 1
    assert PaymentMail.objects.filter(payment=payment, sent_at__isnull=False).count() == 1


def test_a_payment_that_needs_another_signer_is_mailed_to_the_signers_who_have_not_signed(
    alice, bob, fake_bank, eager_tasks, django_capture_on_commit_callbacks
):
    signed, elsewhere = UserFactory(email="signed@example.com"), UserFactory(email="elsewhere@example.com")
    payment = corporate_pair(alice, bob, state=PaymentState.AUTHORISING, transaction_status="RCVD")
    corporate_connection(signed)
    PaymentAuthorisation.objects.create(payment=payment, signer=signed, completed_at=NOW)
    corporate_connection(elsewhere, company="0b6f3a52-3d5e-4c1e-8f27-7d4a9b1c2e3f")
    mail_language(bob, "nb")

    with django_capture_on_commit_callbacks(execute=True):
        poll_answering(fake_bank, payment, "PATC")

    by_address = {m.to[0]: m for m in mail.outbox}
    assert sorted(by_address) == ["alice@example.com", "bob@example.com"]
    assert "needs another signature" in by_address["alice@example.com"].body
    assert by_address["bob@example.com"].subject == "Fjordpay: en betaling trenger en signatur til"
    assert "trenger signaturen din" in by_address["bob@example.com"].body
    assert f"/payments/{payment.pk}/" in by_address["bob@example.com"].body
