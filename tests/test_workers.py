"""The test processes of one run keep apart what they count and consume (tests/workers.py)."""

from __future__ import annotations

import os
import re

import pytest
from django.conf import settings

from tests.own_pytest import run_pytest
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


ORDERED_RUN = {
    "conftest.py": """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    # After pytest-django's order: by name, the committing test first, as a pytest-xdist worker may run it.
    items.sort(key=lambda item: item.name)
""",
    "test_order.py": """
import pytest
from django.contrib.auth.models import Group


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_commits_and_its_database_is_flushed():
    assert Group.objects.filter(name="support").exists()


@pytest.mark.django_db
def test_b_reads_a_role_the_migrations_wrote():
    assert Group.objects.filter(name="support").exists()
    Group.objects.create(name="another role")  # its id from the sequence, past the rows written back


@pytest.mark.django_db(transaction=True)
def test_c_commits_without_asking_for_the_rows():
    assert Group.objects.filter(name="support").exists()
""",
}


def run_ordered(tmp_path, *plugins: str) -> tuple[dict[str, str], str]:
    """The three tests above, in that order, in a pytest of their own (on PostgreSQL when the tests are):
    {test name: outcome}, the output."""
    done = run_pytest(tmp_path, ORDERED_RUN, database="tpp_order", args=[f"-p{p}" for p in plugins])
    found = re.findall(r"^(PASSED|FAILED|ERROR) test_order\.py::(\w+)", done.stdout, re.MULTILINE)
    outcomes = {test: outcome for outcome, test in found}
    assert len(outcomes) == 3, done.stdout + done.stderr
    return outcomes, done.stdout


def test_after_a_committing_test_the_next_one_finds_the_migrations_rows(tmp_path):
    outcomes, output = run_ordered(tmp_path, "tests.workers")
    assert outcomes == {
        "test_a_commits_and_its_database_is_flushed": "PASSED",
        "test_b_reads_a_role_the_migrations_wrote": "PASSED",
        "test_c_commits_without_asking_for_the_rows": "ERROR",  # stopped at its set-up, with the reason
    }, output
    assert "serialized_rollback=True" in output


def test_without_the_plugin_the_committing_test_leaves_the_next_one_without_them(tmp_path):
    outcomes, output = run_ordered(tmp_path)
    assert outcomes == {
        "test_a_commits_and_its_database_is_flushed": "PASSED",
        "test_b_reads_a_role_the_migrations_wrote": "FAILED",
        "test_c_commits_without_asking_for_the_rows": "FAILED",
    }, output
