"""The browser fixtures of every browser test (tests/browser, tests/e2e): Debian's chromium driven by Playwright
(never a browser Playwright downloads itself).

A plugin of the root conftest (``pytest_plugins``), not a conftest of its own: the fixtures are then registered
once, so the browser tests and the end-to-end suite of one session share one Playwright (a second sync
Playwright in the same thread refuses to start). Screenshots go to ``test-artifacts/screenshots/``
(``TEST_ARTIFACTS_DIR`` overrides), kept as CI artefacts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ROOT = Path(__file__).resolve().parents[2]


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    if not path:
        pytest.fail("the browser tests need Debian's chromium: apt-get install chromium (or set CHROMIUM_PATH)")
    return path


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    directory = Path(os.environ.get("TEST_ARTIFACTS_DIR", ROOT / "test-artifacts")) / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="session")
def browser(django_db_setup) -> Iterator:
    """One chromium per session; Playwright gives it a fresh, empty profile directory.

    While Playwright runs, its event loop counts as running in this thread, and Django keeps its database
    connections apart for that time (asgiref's thread-critical ``Local`` holds them per context when a loop
    runs): the tests get connection objects of their own, opened anew, which pytest-django does not know. They
    are closed here, before Playwright stops, and this fixture ends before the test databases are removed
    (``django_db_setup``); left open, they made PostgreSQL refuse to drop the test database at the session's end
    ("being accessed by other users")."""
    from django.db import connections
    from playwright.sync_api import sync_playwright

    # The live server and the ORM calls of the tests are ordinary synchronous code, so Django's async-safety
    # guard must not trip on that loop.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield instance
        instance.close()
        connections.close_all()  # those opened while the loop ran: after Playwright stops, they are out of reach


@pytest.fixture
def page(browser) -> Iterator:
    """A fresh context per test; CSP violations and page errors are collected on ``page.problems``."""
    context = browser.new_context(locale="en-GB")
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    yield page
    context.close()
