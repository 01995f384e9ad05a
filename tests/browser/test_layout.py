"""The base layout and the pages with money on them, on a phone (390 x 844) and a desktop (1280 x 800): nothing
scrolls sideways, every amount and status is inside the screen, the menu and the filters fold on a phone, the
portal's own static files only, no CSP violation. Screenshots go to test-artifacts/screenshots/layout-*.png."""

from __future__ import annotations

import copy
import re
from decimal import Decimal

import pytest

from tests.browser.problems import portal_problems
from tests.live_bank import live_bank, live_bank_server  # noqa: F401 - the fixtures
from tests.payments.journeys import PRIVATE_2

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}
PASSWORD = "a-long-test-password"
TIMEOUT = 20_000  # ms

#: Where each amount and each status of a page is: the figures and the badges inside the page's content.
MONEY_AND_STATUS = "main td.amount, main dd.amount, main .amount-figure, main .badge"

#: The visible amounts and statuses and the ones not wholly inside the screen's width, and the page's width.
_MEASURE = """(selector) => {
  const width = document.documentElement.clientWidth;
  const seen = [], outside = [];
  for (const element of document.querySelectorAll(selector)) {
    if (!element.checkVisibility()) continue;
    const box = element.getBoundingClientRect();
    const text = element.textContent.trim().replace(/\\s+/g, " ");
    seen.push(text);
    if (box.left < 0 || box.right > width) {
      outside.push(`${text} [${Math.round(box.left)}, ${Math.round(box.right)}]`);
    }
  }
  return {seen, outside, scrollWidth: document.documentElement.scrollWidth, width};
}"""


def _fits(page, device: str, *, at_least: int) -> list[str]:
    """Asserts that the page does not scroll sideways and every amount and status is within the screen; returns
    the texts of the amounts and statuses seen (at least ``at_least``, so the check is never about nothing)."""
    measured = page.evaluate(_MEASURE, MONEY_AND_STATUS)
    assert measured["width"] == VIEWPORTS[device]["width"]
    assert measured["scrollWidth"] <= VIEWPORTS[device]["width"], f"{page.url} scrolls sideways: {measured}"
    assert measured["outside"] == [], f"{page.url}: amounts or statuses off the screen: {measured['outside']}"
    assert len(measured["seen"]) >= at_least, measured["seen"]
    return measured["seen"]


def _open_menu_on_a_phone(page, device: str) -> None:
    """On a phone the menu is folded behind its button; on a desktop it is open and the button is hidden."""
    menu = page.locator("details.nav-menu")
    button = menu.locator("summary")
    if device == "phone":
        assert menu.get_attribute("open") is None and button.is_visible()
        assert not menu.locator(".nav-links").is_visible()
        button.click()
        assert menu.locator(".nav-links").is_visible()
    else:
        assert menu.get_attribute("open") is not None and not button.is_visible()


@pytest.mark.parametrize("device", VIEWPORTS)
def test_home_and_sign_in_fit_the_screen(page, live_server, artifacts_dir, device, django_user_model):
    django_user_model.objects.create_user("layout@example.invalid", "layout@example.invalid", PASSWORD)
    page.set_viewport_size(VIEWPORTS[device])
    static_requests = []
    page.on("request", lambda r: static_requests.append(r.url))

    page.goto(f"{live_server.url}/")
    assert page.locator("nav[aria-label=Main]").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORTS[device]["width"]
    stylesheet = page.evaluate("getComputedStyle(document.querySelector('.site-header')).backgroundColor")
    assert stylesheet == "rgb(11, 79, 108)", "the portal's own stylesheet was not applied"
    page.screenshot(path=artifacts_dir / f"layout-home-{device}.png", full_page=True)

    _open_menu_on_a_phone(page, device)
    page.screenshot(path=artifacts_dir / f"layout-home-menu-{device}.png", full_page=True)
    page.locator("nav").get_by_role("link", name="Sign in").click()
    page.get_by_label("E-mail address or username").fill("layout@example.invalid")
    page.get_by_label("Password").fill(PASSWORD)
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


# --- the pages with money on them, with a connected bank ---------------------------------------------------------


@pytest.fixture
def portal(live_bank, live_server, settings):  # noqa: F811
    """The portal's live server with the bank sending the PSU back to it (the connect form may lead there)."""
    from core.bank import bank_client

    settings.PORTAL_BASE_URL = live_server.url
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"] = ["'self'", live_bank]
    settings.CONTENT_SECURITY_POLICY = policy
    bank_client.cache_clear()
    yield live_server.url
    bank_client.cache_clear()


def _connect(page, base: str, *, context: str) -> None:
    """Connect Private Customer 2 (also a user of Havbruk Nord AS's agreement) at the bank's screens, sharing
    every offered account."""
    page.goto(f"{base}/bank/connect/")
    page.check(f"input[name=context][value={context}]")
    page.check("input[name=access][value=accounts]")
    page.get_by_role("button", name="Continue to the bank").click()
    page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    if page.locator("input[name=identity]").count():
        page.fill("input[name=identity]", PRIVATE_2)
        page.click("button[name=action][value=identify]")
        page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    if page.locator("input[name=agreement]").count():
        page.locator("label", has_text=f"{context} - ").first.locator("input[name=agreement]").check()
        page.click("button[name=action][value=context]")
        page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    boxes = page.locator("input[name=account]")
    for index in range(boxes.count()):
        boxes.nth(index).check()
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(re.compile(re.escape(base) + r"/bank/accounts/\?connection=\d+$"), timeout=TIMEOUT)
    assert page.get_by_text("Your bank is connected.").is_visible()


def _payments(user) -> None:
    """A sent payment with a long name and a large amount, a corporate one, a refused one and a draft."""
    from connections.models import BankConnection
    from payments.models import PaymentState
    from tests.payments.payment_factories import PaymentFactory

    company = BankConnection.objects.get(user=user, context="CORPORATE")
    PaymentFactory(
        user=user,
        creditor_name="Müller Maschinenbau und Anlagentechnik GmbH & Co. KG, Niederlassung Nord"[:70],
        amount=Decimal("1250000.00"),
        currency="EUR",
        transaction_status="ACSC",
        state=PaymentState.FINAL,
    )
    PaymentFactory(
        user=user, context="CORPORATE", connection=company, transaction_status="PATC", amount=Decimal("98765.43")
    )
    PaymentFactory(user=user, state=PaymentState.REFUSED, payment_id="", transaction_status="")
    PaymentFactory(
        user=user,
        creditor_name="Kari Nordmann",
        amount=Decimal("250.00"),
        state=PaymentState.DRAFT,
        payment_id="",
        transaction_status="",
        submitted_at=None,
    )


def _filters_fold(page, device: str) -> None:
    """The filters are folded on a phone and open on a desktop (no filter is active)."""
    filters = page.locator("details.filters")
    assert (filters.get_attribute("open") is None) == (device == "phone")
    assert filters.locator("summary").is_visible()


@pytest.mark.live_bank
def test_accounts_transactions_and_payments_fit_a_phone_and_a_desktop(
    page, portal, artifacts_dir, django_user_model
):
    from accounts.models import BankAccount

    problems = portal_problems(page, portal)  # the bank's SCA screens are not the portal's
    user = django_user_model.objects.create_user("money@example.invalid", "money@example.invalid", PASSWORD)
    page.set_viewport_size(VIEWPORTS["phone"])
    page.goto(f"{portal}/auth/sign-in/")
    page.get_by_label("E-mail address or username").fill("money@example.invalid")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Signed in as money@example.invalid")
    _connect(page, portal, context="PRIVATE")
    _connect(page, portal, context="CORPORATE")
    _payments(user)
    main = BankAccount.objects.get(connection__user=user, connection__context="PRIVATE", name__startswith="Felles")
    page.goto(f"{portal}/bank/accounts/{main.pk}/")
    page.get_by_role("button", name="Refresh now").click()  # the PSU is here: read the transactions
    page.wait_for_selector(".message-success", timeout=TIMEOUT)

    for device in VIEWPORTS:
        page.set_viewport_size(VIEWPORTS[device])

        page.goto(f"{portal}/bank/accounts/")
        rows = page.locator("tr.account-row")
        assert rows.count() >= 5  # private: two accounts and a card; Havbruk Nord AS: at least two
        figures = _fits(page, device, at_least=rows.count())
        assert len([text for text in figures if "NOK" in text or "EUR" in text]) == rows.count()  # one each
        company = page.locator("tr.account-row", has_text="Driftskonto").locator(".account-company")
        assert company.inner_text().startswith("Havbruk Nord AS") and company.is_visible()  # its agreement's name
        _open_menu_on_a_phone(page, device)
        page.screenshot(path=artifacts_dir / f"layout-accounts-{device}.png", full_page=True)

        page.goto(f"{portal}/bank/accounts/{main.pk}/")
        _filters_fold(page, device)
        amounts = page.locator("table.transactions-booked tr.transaction td.amount")
        assert amounts.count() == 50
        _fits(page, device, at_least=50)
        page.screenshot(path=artifacts_dir / f"layout-account-{device}.png", full_page=True)

        page.goto(f"{portal}/payments/")
        _filters_fold(page, device)
        seen = _fits(page, device, at_least=8)  # four amounts and four statuses
        assert "Draft, not sent" in seen
        draft = page.locator("tr.payment-draft")
        assert draft.get_by_role("link", name="Continue").is_visible()
        assert draft.get_by_role("link", name=re.compile("^Delete")).is_visible()
        assert page.get_by_text("Paid by Havbruk Nord AS").is_visible()
        page.screenshot(path=artifacts_dir / f"layout-payments-{device}.png", full_page=True)

    page.goto(f"{portal}/payments/?q=Kari")  # an active filter stays open on a phone too
    page.set_viewport_size(VIEWPORTS["phone"])
    page.reload()
    assert page.locator("details.filters").get_attribute("open") is not None
    assert page.locator("details.filters form").is_visible()
    page.screenshot(path=artifacts_dir / "layout-payments-filtered-phone.png", full_page=True)

    # The draft is deleted after the question, from the phone.
    page.locator("tr.payment-draft").get_by_role("link", name=re.compile("^Delete")).click()
    page.wait_for_selector("h1:has-text('Delete the draft?')")
    _fits(page, "phone", at_least=0)
    page.screenshot(path=artifacts_dir / "layout-draft-delete-phone.png", full_page=True)
    page.get_by_role("button", name="Delete the draft").click()
    page.wait_for_selector("text=The draft was deleted.")
    assert page.locator("tr.payment-draft").count() == 0 and page.locator("tr.payment-row").count() == 3

    # In Norwegian (longer words) the phone's pages fit too.
    page.locator("details.nav-menu summary").click()
    page.get_by_label("Language").select_option("nb")
    page.get_by_role("button", name="Change").click()
    page.wait_for_selector("html[lang=nb]")
    for name, path, at_least in [
        ("accounts", "/bank/accounts/", 5),
        ("account", f"/bank/accounts/{main.pk}/", 50),
        ("payments", "/payments/", 6),
    ]:
        page.goto(f"{portal}{path}")
        _fits(page, "phone", at_least=at_least)
        page.screenshot(path=artifacts_dir / f"layout-{name}-phone-nb.png", full_page=True)

    assert problems == []
