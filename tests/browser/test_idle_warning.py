"""The warning before the idle sign-out in a real browser, with a short timeout (16 s: the page counts 6 s, the
activity stamp's 10 s interval allowed for): the banner comes with "Stay signed in", which keeps the session past
the timeout; without it the banner says the session has ended and the next page asks to sign in."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.signin import force_login_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_the_warning_comes_before_the_idle_sign_out_and_stay_signed_in_keeps_the_session(
    page, live_server, settings, alice, artifacts_dir
):
    settings.SENSITIVE_IDLE_TIMEOUT = 16
    force_login_page(page, live_server.url, alice)
    started = time.monotonic()
    page.goto(f"{live_server.url}/account/")
    banner = page.locator("#idle-warning")
    assert banner.is_hidden()

    page.wait_for_selector("#idle-warning", state="visible", timeout=6000)
    button = page.get_by_role("button", name="Stay signed in")
    assert button.is_visible() and button.evaluate("b => b === document.activeElement")
    expect(page.locator("#idle-warning-status")).to_contain_text("signed out in about a minute")
    page.screenshot(path=artifacts_dir / "idle-warning.png", full_page=False)
    button.click()
    page.wait_for_selector("#idle-warning", state="hidden")
    expect(page.locator("#idle-warning-status")).to_contain_text("You are still signed in.")

    # Past the timeout counted from the page's load, within it counted from "Stay signed in": still signed in.
    time.sleep(max(0.0, 17 - (time.monotonic() - started)))
    page.goto(f"{live_server.url}/account/")
    assert page.url == f"{live_server.url}/account/"
    reloaded = time.monotonic()

    # No answer: the banner says the session has ended, and the next page is the sign-in page.
    page.wait_for_selector("#idle-warning-ended", state="visible", timeout=8000)
    assert page.locator("#idle-warning-form").is_hidden()
    page.screenshot(path=artifacts_dir / "idle-warning-ended.png", full_page=False)
    time.sleep(max(0.0, 17 - (time.monotonic() - reloaded)))
    page.goto(f"{live_server.url}/account/")
    assert "/auth/sign-in/" in page.url
    assert page.problems == []
