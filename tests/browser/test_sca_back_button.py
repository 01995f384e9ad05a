"""The back button after SCA: once the PSU has approved at the sandbox bank and is back at the portal, going back
shows the bank's "This approval is finished" page with a link back to the provider, never a live Approve
button; in Norwegian too."""

from __future__ import annotations

import re

import pytest

from tests.browser.problems import portal_problems
from tests.browser.test_payment_journeys import TIMEOUT, _connect, _sign_in, portal  # noqa: F401
from tests.live_bank import live_bank, live_bank_server  # noqa: F401 - the fixtures

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_back_after_the_approval_shows_it_finished_and_the_way_back(
    page,
    portal,  # noqa: F811
    live_bank,  # noqa: F811
    django_user_model,
    artifacts_dir,
):
    problems = portal_problems(page, portal)
    _sign_in(page, portal, "back@example.invalid", django_user_model)
    _connect(page, portal, identity="13039319955", context="PRIVATE")
    page.wait_for_selector("text=Your bank is connected.", timeout=TIMEOUT)
    back_at_portal = page.url

    page.go_back()
    page.wait_for_load_state()

    assert page.url.startswith(live_bank), page.url
    body = page.locator("body").inner_text()
    assert "This approval is finished" in body, body
    assert page.get_by_role("button", name="Approve").count() == 0
    assert page.locator("button[name=action]").count() == 0
    page.screenshot(path=artifacts_dir / "sca-back-finished.png", full_page=True)
    link = page.get_by_role("link", name=re.compile("Back to"))
    link.click()
    page.wait_for_url(re.compile(re.escape(portal) + r"/"), timeout=TIMEOUT)
    assert page.url.startswith(portal)
    assert "Back from the bank" in page.locator("h1").inner_text()
    assert "cannot be used" not in page.locator("body").inner_text()
    page.screenshot(path=artifacts_dir / "sca-back-to-the-portal.png", full_page=True)

    # Back again at the bank: the same finished page; in Norwegian for a browser that asks for it.
    page.go_back()
    page.wait_for_load_state()
    assert "This approval is finished" in page.locator("h1").inner_text()
    norwegian = page.context.browser.new_context(locale="nb-NO")
    try:
        bokmal = norwegian.new_page()
        bokmal.goto(page.url)
        assert "Denne godkjenningen er fullført" in bokmal.locator("h1").inner_text()
        assert bokmal.locator("button[name=action]").count() == 0
        bokmal.screenshot(path=artifacts_dir / "sca-back-finished-nb.png", full_page=True)
    finally:
        norwegian.close()
    # The page the user was on before going back was the portal's.
    assert back_at_portal.startswith(portal)
    assert problems == []
