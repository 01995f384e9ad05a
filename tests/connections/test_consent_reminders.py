"""Reminders by mail 14, 7 and 1 days before a consent expires: once each, idempotent, retried after a failure."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from connections import services
from connections.models import ConnectionState, ConsentReminder
from connections.tasks import send_consent_reminders
from tests.bank_factories import BankConnectionFactory


def _expiring(user, days: float, **kwargs):
    return BankConnectionFactory(user=user, consent_valid_until=timezone.now() + timedelta(days=days), **kwargs)


@pytest.mark.parametrize(
    ("days_left", "expected"),
    [(20, None), (14.5, None), (13.9, 14), (8, 14), (6.5, 7), (2, 7), (0.5, 1)],
)
def test_the_most_urgent_threshold_reached_is_mailed(alice, days_left, expected):
    _expiring(alice, days_left)

    sent = services.consent_reminders_send()

    if expected is None:
        assert sent == 0 and not mail.outbox
    else:
        assert sent == 1 and len(mail.outbox) == 1
        assert mail.outbox[0].to == ["alice@example.com"]
        assert f"expires in {expected} day" in mail.outbox[0].subject
        assert "/bank/connections/" in mail.outbox[0].body
        assert ConsentReminder.objects.get().days_before == expected


def test_each_reminder_goes_out_once_and_the_next_threshold_later(alice):
    connection = _expiring(alice, 10)
    now = timezone.now()

    assert services.consent_reminders_send(now=now) == 1
    assert services.consent_reminders_send(now=now) == 0  # repeated run (or a second beat): nothing new
    assert send_consent_reminders() == 0  # the task, delivered twice
    assert services.consent_reminders_send(now=now + timedelta(days=4)) == 1  # 6 days left: the 7-day one
    assert services.consent_reminders_send(now=now + timedelta(days=9, hours=12)) == 1  # the 1-day one
    assert services.consent_reminders_send(now=now + timedelta(days=9, hours=13)) == 0
    assert sorted(ConsentReminder.objects.filter(connection=connection).values_list("days_before", flat=True)) == [
        1,
        7,
        14,
    ]
    assert len(mail.outbox) == 3


def test_a_renewed_consent_gets_its_own_reminders(alice):
    connection = _expiring(alice, 5)
    services.consent_reminders_send()
    connection.consent_valid_until = timezone.now() + timedelta(days=6)  # reconnected: a new consent
    connection.save(update_fields=["consent_valid_until"])

    assert services.consent_reminders_send() == 1
    assert len(mail.outbox) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"state": ConnectionState.DISCONNECTED},
        {"state": ConnectionState.PENDING},
        {"access": "payments"},
    ],
)
def test_no_reminder_for_connections_without_a_live_consent(alice, kwargs):
    _expiring(alice, 3, **kwargs)
    assert services.consent_reminders_send() == 0 and not mail.outbox


def test_an_expired_consent_gets_no_reminder(alice):
    _expiring(alice, -1)
    assert services.consent_reminders_send() == 0


def test_a_mail_that_fails_is_retried_by_the_next_run(alice, monkeypatch):
    _expiring(alice, 3)

    def broken(*args, **kwargs):
        raise OSError("mail server down")

    monkeypatch.setattr(services, "send_mail", broken)
    assert services.consent_reminders_send() == 0
    assert not ConsentReminder.objects.exists()

    monkeypatch.undo()
    assert services.consent_reminders_send() == 1 and len(mail.outbox) == 1


def test_a_claim_held_by_another_sender_is_left_alone_until_it_is_stale(alice):
    connection = _expiring(alice, 3)
    now = timezone.now()
    ConsentReminder.objects.create(
        connection=connection, consent_valid_until=connection.consent_valid_until, days_before=7, claimed_at=now
    )

    assert services.consent_reminders_send(now=now) == 0  # another worker is sending it right now
    assert services.consent_reminders_send(now=now + timedelta(hours=2)) == 1  # it never finished: taken over
    assert ConsentReminder.objects.get().sent_at is not None
