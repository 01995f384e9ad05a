"""Pruning the audit log of bank calls: only rows older than the retention go, in batches, nightly."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core import tasks
from core.models import BankCall
from core.services import bank_calls_prune
from tests.staff.fixtures import bank_call
from tpp_portal import settings as portal_settings

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_only_rows_older_than_the_retention_are_deleted_in_batches():
    now = timezone.now()
    old = [bank_call(started_at=now - timedelta(days=31, minutes=i)) for i in range(7)]
    kept = [
        bank_call(started_at=now - timedelta(days=29)),
        bank_call(started_at=now - timedelta(days=30) + timedelta(seconds=1)),
        bank_call(started_at=now),
    ]

    with CaptureQueriesContext(connection) as queries:
        deleted = bank_calls_prune(now=now, days=30, batch_size=3)

    assert deleted == len(old) == 7
    assert set(BankCall.objects.values_list("pk", flat=True)) == {call.pk for call in kept}
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("DELETE")]
    assert len(deletes) == 3  # 3 + 3 + 1 rows


def test_the_task_uses_the_configured_retention(settings):
    settings.BANK_CALL_RETENTION_DAYS = 2
    now = timezone.now()
    bank_call(started_at=now - timedelta(days=3))
    recent = bank_call(started_at=now - timedelta(days=1))

    assert tasks.prune_bank_calls.apply().get() == 1
    assert list(BankCall.objects.all()) == [recent]
    assert tasks.prune_bank_calls.apply().get() == 0  # a second run finds nothing


def test_nothing_to_prune_and_bad_arguments():
    assert bank_calls_prune(days=1) == 0
    with pytest.raises(ValueError):
        bank_calls_prune(days=0)
    with pytest.raises(ValueError):
        bank_calls_prune(days=1, batch_size=0)


def read_setting(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_"))}
    environment.update(env)
    return subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings as s; print(s.BANK_CALL_RETENTION_DAYS)",
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_retention_comes_from_the_environment_and_is_scheduled_nightly():
    assert portal_settings.env.variables["BANK_CALL_RETENTION_DAYS"] == "180"
    assert read_setting(BANK_CALL_RETENTION_DAYS="30").stdout.strip().splitlines()[-1] == "30"
    refused = read_setting(BANK_CALL_RETENTION_DAYS="0")
    assert refused.returncode != 0 and "BANK_CALL_RETENTION_DAYS" in refused.stderr
    entry = portal_settings.CELERY_BEAT_SCHEDULE["prune-bank-calls"]
    assert entry["task"] == tasks.prune_bank_calls.name == "tpp_portal.prune_bank_calls"
    assert entry["schedule"].hour == {2} and entry["schedule"].minute == {40}
    from tpp_portal.celery import app

    assert "tpp_portal.prune_bank_calls" in app.tasks  # a worker knows the task beat sends
