"""The sandbox area's clock and batch buttons in a real browser against the running sandbox bank, at desktop and
phone widths: the bank's time, the buttons, and the message after one of them."""

from __future__ import annotations

import re

import pytest

from tests.live_bank import live_bank, live_bank_server  # noqa: F401
from tests.signin import force_login_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_staff_move_the_bank_clock_and_run_a_batch(page, live_server, live_bank, charlie, artifacts_dir):  # noqa: F811
    from core.bank import bank_client

    force_login_page(page, live_server.url, charlie)
    page.goto(f"{live_server.url}/admin/")
    page.get_by_role("link", name="The bank's clock and payment batches").click()
    page.wait_for_selector('h1:has-text("The bank\'s clock and its payment batches")')
    assert "(the real time)" in page.locator("main").inner_text()
    page.screenshot(path=artifacts_dir / "sandbox-clock.png", full_page=True)
    try:
        page.get_by_role("button", name="+1 hour").click()
        page.wait_for_selector(".message-success")
        message = page.locator(".message-success").inner_text()
        assert re.match(
            r"The bank's clock moved 1 hour forward and its batches ran: \d+ payment steps?\.", message
        )
        main = page.locator("main").inner_text()
        assert "(1 hour ahead of the real clock)" in main
        shown = re.search(r"Bank time: (.+?) UTC", main).group(1)
        assert f"Bank time {shown} UTC." in message  # the message and the page give the same time, both UTC
        page.screenshot(path=artifacts_dir / "sandbox-clock-moved.png", full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=artifacts_dir / "sandbox-clock-moved-390.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        bank_client().sandbox.initialize()  # the clock back to the real time for later tests
    assert page.problems == []
