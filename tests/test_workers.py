"""The test processes of one run keep apart what they count and consume (tests/workers.py)."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from tests.workers import SMOKE_REDIS_DATABASE, worker_name, worker_redis_url


def test_each_worker_takes_the_redis_database_of_its_own_number_after_the_named_one():
    assert worker_redis_url("redis://127.0.0.1:6379/0", "gw0") == "redis://127.0.0.1:6379/0"
    assert worker_redis_url("redis://127.0.0.1:6379/0", "gw1") == "redis://127.0.0.1:6379/1"
    assert worker_redis_url("redis://127.0.0.1:6379", "gw2") == "redis://127.0.0.1:6379/2"
    assert worker_redis_url("rediss://user:pw@cache.internal:6380/4?ssl_cert_reqs=none", "gw3") == (
        "rediss://user:pw@cache.internal:6380/7?ssl_cert_reqs=none"
    )


@pytest.mark.parametrize(
    ("url", "worker"),
    [
        (f"redis://127.0.0.1:6379/{SMOKE_REDIS_DATABASE - 1}", "gw1"),  # would take the smoke test's database
        (f"redis://127.0.0.1:6379/{SMOKE_REDIS_DATABASE}", "gw0"),
        ("redis://127.0.0.1:6379/15", "gw1"),  # beyond the server's 16 databases
    ],
)
def test_a_worker_without_a_database_of_its_own_stops_the_run(url, worker):
    with pytest.raises(pytest.UsageError, match="TEST_WORKERS"):
        worker_redis_url(url, worker)


def test_this_process_counts_metrics_in_a_folder_of_its_own():
    worker = worker_name()
    if worker is None:
        assert not settings.METRICS_DIR.name.startswith("gw")
    else:
        assert settings.METRICS_DIR.name == worker
        assert os.environ.get("PYTEST_XDIST_WORKER") == worker
