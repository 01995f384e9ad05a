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


@pytest.fixture
def personal_pages(alice, live_server):
    """alice's live payment page (awaiting the bank's batch: it can still be cancelled), her account page and "My
    account": each page, what it shows of her that must go."""
    from decimal import Decimal

    from django.utils import timezone

    from accounts.models import BalanceSnapshot
    from payments.models import PaymentState
    from tests.bank_factories import BankAccountFactory, BankConnectionFactory
    from tests.payments.payment_factories import PaymentFactory

    account = BankAccountFactory(
        connection=BankConnectionFactory(user=alice), name="Brukskonto", iban="NO9386011117947"
    )
    BalanceSnapshot.objects.create(
        account=account,
        balance_type="closingBooked",
        amount=Decimal("65758.21"),
        currency="NOK",
        fetched_at=timezone.now(),
    )
    payment = PaymentFactory(
        user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="ACTC", amount=Decimal("150000.00")
    )
    return {
        "payment": (f"{live_server.url}/payments/{payment.pk}/", ["DE89370400440532013000", "12345678903"]),
        "account": (f"{live_server.url}/bank/accounts/{account.pk}/", ["NO9386011117947"]),
        "my-account": (f"{live_server.url}/account/", ["alice@example.com"]),
    }


#: The page's whole DOM as HTML without any white space (an IBAN may be shown in groups of four, an amount in
#: bokmål is grouped by no-break spaces).
_DOM = "() => document.documentElement.outerHTML.replace(/&nbsp;|\\s+/g, '')"
AMOUNTS = {
    "en": {"payment": "150,000.00", "account": "65,758.21"},
    "nb": {"payment": "150000,00", "account": "65758,21"},
}
#: "Sign out", "Cancel the payment", the links to the user's accounts (the sign-in link names the page in next=).
ACTIONS = (
    "form[action$='/auth/sign-out/'], a[href$='/cancel/'], form[action$='/cancel/'], a[href^='/bank/accounts/']"
)


@pytest.mark.parametrize("language", ["en", "nb"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_idle_sign_out_removes_the_users_data_and_actions_from_the_page(
    page, live_server, settings, alice, personal_pages, artifacts_dir, width, language
):
    """Not a banner over the page: when the time is up, no amount, account number, name of the account, "Sign
    out" or "Cancel the payment" is left in the DOM of the live payment page, the account page or "My account"."""
    settings.SENSITIVE_IDLE_TIMEOUT = 16
    page.set_viewport_size({"width": width, "height": 844})
    page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    force_login_page(page, live_server.url, alice)
    reads: list[str] = []
    page.on("request", lambda request: reads.append(request.url) if "status.json" in request.url else None)
    for name, (url, numbers) in personal_pages.items():
        page.goto(url)
        before = page.evaluate(_DOM)
        shown = [*numbers, *([AMOUNTS[language][name]] if name in AMOUNTS[language] else [])]
        assert all(text in before for text in shown), (name, [text for text in shown if text not in before])
        assert page.locator(ACTIONS).count() > 0
        page.screenshot(path=artifacts_dir / f"idle-before-{name}-{width}-{language}.png", full_page=True)

        page.wait_for_selector("#signed-out", state="visible", timeout=10_000)
        after = page.evaluate(_DOM)
        assert [text for text in shown if text in after] == [], name
        assert "Brukskonto" not in after and "Müller" not in after
        assert page.locator(ACTIONS).count() == 0
        assert page.locator("#idle-warning").count() == 0  # no banner over anything
        heading = page.locator("#signed-out h1")
        assert heading.text_content() == {"en": "Signed out", "nb": "Logget ut"}[language]
        assert heading.evaluate("h => h === document.activeElement")
        assert page.title() == {"en": "Signed out · Fjordpay", "nb": "Logget ut · Fjordpay"}[language]
        link = page.locator("#signed-out a[href^='/auth/sign-in/']")
        assert link.is_visible()
        page.screenshot(path=artifacts_dir / f"idle-signed-out-{name}-{width}-{language}.png", full_page=True)
        if name == "payment":  # the live status stops reading: the page no longer shows the payment
            reads.clear()
            page.wait_for_timeout(3000)
            assert reads == []
        force_login_page(page, live_server.url, alice)  # a fresh session for the next page
    assert page.problems == []
