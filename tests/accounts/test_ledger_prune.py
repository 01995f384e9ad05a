"""The ledger of unattended calls keeps its 24-hour window only (issue #32, item 4): an hourly task deletes the
older rows in batches, leaves the window's rows (which the allowance still counts) alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts import ledger, tasks
from accounts.models import RefreshCall, RefreshKind
from tests.bank_factories import BankAccountFactory


def _calls(account, *ages: timedelta, now):
    return RefreshCall.objects.bulk_create(
        RefreshCall(
            account=account,
            resource_key=RefreshCall.key_for(account),
            kind=RefreshKind.BALANCES,
            reserved_at=now - age,
        )
        for age in ages
    )


def test_rows_older_than_the_window_are_deleted_in_batches_and_the_window_kept(alice, django_assert_num_queries):
    now = timezone.now()
    account = BankAccountFactory(connection__user=alice)
    second = timedelta(seconds=1)
    _calls(account, *(timedelta(hours=24) + second * n for n in range(1, 6)), timedelta(days=30), now=now)
    # The window's edge is kept too; three calls inside it.
    kept = _calls(account, timedelta(hours=24), timedelta(hours=23), timedelta(hours=1), timedelta(0), now=now)

    # 6 old rows in batches of 2: three full batches (a read and a delete each), then a read that finds none.
    with django_assert_num_queries(7):
        assert ledger.prune(now=now, batch_size=2) == 6

    assert sorted(RefreshCall.objects.values_list("pk", flat=True)) == sorted(c.pk for c in kept)
    # The window's rows still count: a fourth call of the kind is allowed, a fifth is not.
    ledger.reserve(account=account, kinds=(RefreshKind.BALANCES,), now=now)
    with pytest.raises(ledger.RefreshRefused):
        ledger.reserve(account=account, kinds=(RefreshKind.BALANCES,), now=now)


def test_the_hourly_task_prunes_and_a_second_run_finds_nothing(alice, settings):
    now = timezone.now()
    account = BankAccountFactory(connection__user=alice)
    _calls(account, timedelta(hours=25), timedelta(hours=1), now=now)

    assert tasks.prune_refresh_calls.apply().get() == 1
    assert tasks.prune_refresh_calls.apply().get() == 0
    assert RefreshCall.objects.count() == 1
    assert any(entry["task"] == "accounts.prune_refresh_calls" for entry in settings.CELERY_BEAT_SCHEDULE.values())


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(ValueError):
        ledger.prune(batch_size=0)
