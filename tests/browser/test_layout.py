"""The base layout: readable on a phone and a desktop, served with its own static files, no CSP violation."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"phone": {"width": 375, "height": 740}, "desktop": {"width": 1280, "height": 800}}


@pytest.mark.parametrize("device", VIEWPORTS)
def test_home_and_sign_in_fit_the_screen(page, live_server, artifacts_dir, device, django_user_model):
    django_user_model.objects.create_user(
        "layout@example.invalid", "layout@example.invalid", "a-long-test-password"
    )
    page.set_viewport_size(VIEWPORTS[device])
    static_requests = []
    page.on("request", lambda r: static_requests.append(r.url))

    page.goto(f"{live_server.url}/")
    assert page.locator("nav[aria-label=Main]").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORTS[device]["width"]
    stylesheet = page.evaluate("getComputedStyle(document.querySelector('.site-header')).backgroundColor")
    assert stylesheet == "rgb(11, 79, 108)", "the portal's own stylesheet was not applied"
    page.screenshot(path=artifacts_dir / f"layout-home-{device}.png", full_page=True)

    page.get_by_role("link", name="Sign in").first.click()
    page.get_by_label("E-mail address or username").fill("layout@example.invalid")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Signed in as layout@example.invalid")
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORTS[device]["width"]
    page.screenshot(path=artifacts_dir / f"layout-signed-in-{device}.png", full_page=True)

    assert all(url.startswith(live_server.url) for url in static_requests), "something was fetched from outside"
    assert page.problems == []


def test_language_switch_to_bokmal(page, live_server, artifacts_dir):
    page.goto(f"{live_server.url}/")
    page.get_by_label("Language").select_option("nb")
    page.get_by_role("button", name="Change").click()
    page.wait_for_selector("html[lang=nb]")
    assert page.get_by_role("link", name="Logg inn").first.is_visible()
    page.screenshot(path=artifacts_dir / "layout-home-nb.png", full_page=True)
    assert page.problems == []
