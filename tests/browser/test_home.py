"""The home page in a real browser, in its three states (a visitor; signed in without a connection; with
connections, balances, payments and notices), on a phone (390 x 844) and a desktop (1280 x 800), in English
and bokmål: the main action is on the first screen without opening the menu, nothing scrolls sideways, axe
finds no violation of any impact, no console error or CSP violation. Screenshots:
test-artifacts/screenshots/home-STATE-LANG-WIDTH.png."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone

from accounts.models import BalanceSnapshot
from connections.models import ConnectionState
from payments.models import PaymentState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.signin import force_login_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

VIEWPORTS = {390: 844, 1280: 800}  # width: height
#: The main action of each state, by its words in each language.
MAIN_ACTION = {
    "visitor": {"en": "Create an account", "nb": "Opprett konto"},
    "new": {"en": "Connect your bank", "nb": "Koble til banken din"},
    "busy": {"en": "New payment", "nb": "Ny betaling"},
}


def _balance(connection, name: str, amount: str, currency: str = "NOK"):
    account = BankAccountFactory(
        connection=connection, name=name, currency=currency, balances_refreshed_at=timezone.now()
    )
    BalanceSnapshot.objects.create(
        account=account,
        balance_type="interimAvailable",
        amount=Decimal(amount),
        currency=currency,
        fetched_at=account.balances_refreshed_at,
    )


def _busy(user) -> None:
    """Two connections (one whose consent ends in 5 days, a company's the bank asks consent for again), four
    accounts, and payments: waiting for another signer, rejected for want of money, cancelled, settled, sent,
    a draft."""
    now = timezone.now()
    private = BankConnectionFactory(user=user, consent_valid_until=now + timedelta(days=5))
    _balance(private, "Brukskonto", "18250.00")
    _balance(private, "Høyrentekonto", "84000.00")
    _balance(private, "Mastercard Gull", "-3200.00")
    company = BankConnectionFactory(
        user=user,
        context="CORPORATE",
        agreement_name="Havbruk Nord AS - nettbank bedrift",
        state=ConnectionState.NEEDS_RECONNECT,
    )
    _balance(company, "Valutakonto EUR", "85000.00", "EUR")
    PaymentFactory(user=user, connection=company, context="CORPORATE", transaction_status="PATC")
    rejected = PaymentFactory(
        user=user,
        creditor_name="Müller Maschinenbau und Anlagentechnik GmbH & Co. KG",
        state=PaymentState.FINAL,
        transaction_status="RJCT",
        final_at=now - timedelta(hours=3),
        funds_available=False,
    )
    status_event(rejected, "ACCP", funds_available=False)
    PaymentFactory(
        user=user, state=PaymentState.FINAL, transaction_status="CANC", final_at=now - timedelta(days=1)
    )
    PaymentFactory(
        user=user,
        amount=Decimal("1250000.00"),
        currency="EUR",
        state=PaymentState.FINAL,
        transaction_status="ACSC",
        final_at=now - timedelta(days=2),
    )
    PaymentFactory(user=user, transaction_status="ACSP", state=PaymentState.AWAITING_STATUS)
    PaymentFactory(user=user, state=PaymentState.DRAFT, payment_id="", transaction_status="", submitted_at=None)


#: Whether the page scrolls sideways, and what sticks out.
_WIDTH = """() => ({
  scrollWidth: document.documentElement.scrollWidth,
  outside: [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right >
    document.documentElement.clientWidth + 1).slice(0, 4).map(e => e.outerHTML.slice(0, 80)),
})"""


def _all_axe_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]}" for v in violations]


@pytest.mark.parametrize("state", ["visitor", "new", "busy"])
def test_the_home_page_leads_somewhere_on_a_phone_and_a_desktop(page, live_server, artifacts_dir, alice, state):
    if state == "busy":
        _busy(alice)
    if state != "visitor":
        force_login_page(page, live_server.url, alice)
    failures: dict[str, list[str]] = {}
    for language in ("en", "nb"):
        page.context.add_cookies(
            [{"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": live_server.url}]
        )
        for width, height in VIEWPORTS.items():
            page.set_viewport_size({"width": width, "height": height})
            response = page.goto(f"{live_server.url}/")
            assert response is not None and response.status == 200
            assert page.locator("html").get_attribute("lang") == language
            name = f"home-{state}-{language}-{width}"
            page.screenshot(path=artifacts_dir / f"{name}.png", full_page=True)
            problems = []
            # The main action: in the page, not the menu, on the first screen (the phone's menu stays folded).
            action = page.locator("main .home-start").get_by_role("link", name=MAIN_ACTION[state][language])
            box = action.bounding_box()
            if not action.is_visible() or box is None or box["y"] + box["height"] > height:
                problems.append(f"the main action is not on the first screen: {box}")
            if width == 390 and page.locator("details.nav-menu").get_attribute("open") is not None:
                problems.append("the menu is open on a phone")
            measured = page.evaluate(_WIDTH)
            if measured["scrollWidth"] > width:
                problems.append(f"scrolls sideways: {measured}")
            problems += page.problems  # console errors, script errors, CSP violations
            page.problems.clear()
            problems += _all_axe_violations(page)
            if problems:
                failures[name] = problems
    assert failures == {}


def test_the_busy_home_page_shows_what_needs_the_user_first(page, live_server, alice):
    _busy(alice)
    force_login_page(page, live_server.url, alice)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/")
    notices = page.locator("main .home-notices .notice")
    kinds = [
        notices.nth(n).get_attribute("data-need") or notices.nth(n).get_attribute("data-kind")
        for n in range(notices.count())
    ]
    assert kinds == ["reconnect", "expiring", "other_signer", "rejected", "cancelled", "settled"]
    assert "did not have enough money" in notices.nth(3).inner_text()
    assert page.locator("main .home-balances .glance-row").count() == 4
    assert page.locator("main .home-payments .glance-row").count() == 5
    # The way to the accounts: a balance's name opens its account.
    page.locator("main .home-balances").get_by_role("link", name="Brukskonto").click()
    page.wait_for_url(f"{live_server.url}/bank/accounts/*/")
    assert page.problems == []


def test_a_new_connections_accounts_fit_and_pass_axe(page, live_server, artifacts_dir, alice):
    """Where a new connection lands (the accounts page filtered to it), in both languages and widths."""
    _busy(alice)
    company = alice.bank_connections.get(context="CORPORATE")
    force_login_page(page, live_server.url, alice)
    failures: dict[str, list[str]] = {}
    for language in ("en", "nb"):
        page.context.add_cookies(
            [{"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": live_server.url}]
        )
        for width, height in VIEWPORTS.items():
            page.set_viewport_size({"width": width, "height": height})
            page.goto(f"{live_server.url}/bank/accounts/?connection={company.pk}")
            name = f"home-landing-{language}-{width}"
            page.screenshot(path=artifacts_dir / f"{name}.png", full_page=True)
            problems = []
            rows = page.locator("tr.account-row")
            if rows.count() != 1 or "Valutakonto EUR" not in rows.first.inner_text():
                problems.append("not only the connection's account")
            if page.evaluate(_WIDTH)["scrollWidth"] > width:
                problems.append("scrolls sideways")
            problems += page.problems + _all_axe_violations(page)
            page.problems.clear()
            if problems:
                failures[name] = problems
    assert failures == {}
