"""The browser fixture leaves no database connection open behind it (tests/browser/fixtures.py).

While Playwright runs, Django gives the tests connection objects of their own (asgiref's thread-critical
``Local`` sees Playwright's event loop running in the thread). Left open, one of them kept the test database
in use at the end of the session, and PostgreSQL refused to drop it: "Error when trying to teardown test
databases: ... being accessed by other users" (two such warnings in every run on PostgreSQL in November 2026).
A pytest of its own, on a test database of its own on the same server, runs a test that reads the database, then
one that reads it with the browser up: once with the fixture as it is, once with one that does not close them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.own_pytest import run_pytest

pytestmark = pytest.mark.browser

TEARDOWN_WARNING = "Error when trying to teardown test databases"

# As in a whole run: the test databases are made before the browser starts, by a test without it.
TEST_MODULE = """
import pytest
from django.contrib.auth.models import Group


@pytest.mark.django_db
def test_a_reads_a_role():
    assert Group.objects.filter(name="support").exists()


@pytest.mark.django_db
def test_b_reads_a_role_while_the_browser_runs(browser):
    assert browser.is_connected()
    assert Group.objects.filter(name="support").exists()
"""

# The fixture as it was: the connections opened while Playwright ran stay open.
FIXTURE_LEAVING_THEM_OPEN = """
import os

import pytest

from tests.browser.fixtures import CHROMIUM_FLAGS, chromium_path


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield instance
        instance.close()
"""


def run_with_browser(tmp_path: Path, *, conftest: str) -> tuple[list[str], str]:
    """The tests above in a pytest of their own on PostgreSQL: their outcomes and the whole output."""
    files = {"test_reads.py": TEST_MODULE, "conftest.py": conftest}
    done = run_pytest(tmp_path, files, database="tpp_browser", args=["-p", "tests.browser.fixtures"])
    output = done.stdout + done.stderr
    found = re.findall(r"^(PASSED|FAILED|ERROR) test_reads\.py::", done.stdout, re.MULTILINE)
    assert len(found) == 2, output
    return found, output


@pytest.fixture
def on_postgresql():
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("SQLite removes a test database with connections open: the refusal is PostgreSQL's")


def test_the_browser_fixture_leaves_the_test_database_free_to_drop(tmp_path, on_postgresql):
    outcomes, output = run_with_browser(tmp_path, conftest="")
    assert outcomes == ["PASSED", "PASSED"], output
    assert TEARDOWN_WARNING not in output, output


def test_a_fixture_leaving_them_open_keeps_the_test_database_in_use(tmp_path, on_postgresql):
    outcomes, output = run_with_browser(tmp_path, conftest=FIXTURE_LEAVING_THEM_OPEN)
    assert outcomes == ["PASSED", "PASSED"], output
    assert TEARDOWN_WARNING in output and "being accessed by other users" in output, output
