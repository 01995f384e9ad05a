"""The account-information journeys of issue #9 in chromium against the running product (tests/e2e/conftest.py):
a private connection after signing up, refreshes (with the PSU present, and the unattended one the real beat and
worker make), a corporate connection with a choice of agreement, and a consent that expires and is renewed by
reconnecting. Each step leaves a screenshot named after the journey and the step; each portal page type is
checked with axe once; the sign-in and connect forms are also completed by keyboard alone."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from tests.e2e.conftest import (
    authorise_at_bank,
    axe_check,
    connect_bank,
    create_user,
    shot,
    sign_in,
    sign_up,
    wait_until,
    watch,
)

# docs/bank-interface.md, reference 1: 2 accounts + 1 card account; also a user of the first company
PRIVATE_1 = "13039319955"
PRIVATE_2 = "12085592767"
COMPANY = "Fjellbygg Entreprenør AS"  # the first corporate customer, whose agreement Private Customer 1 may use
PASSWORD = "fjord-e2e-journey-2026"


def _accounts_of(product, email: str) -> list[dict]:
    return product.django(
        """
from accounts.models import BankAccount
result = list(BankAccount.objects.filter(connection__user__username=params["email"]).order_by("pk").values(
    "pk", "name", "transactions_refreshed_at", "balances_refreshed_at", "next_refresh_at"))
""",
        email=email,
    )


def _signing_up(page, step: str) -> None:
    """Each page of signing up (the form, the page asking for the mailed code, the welcome)."""
    shot(page, f"private-connection-1-sign-up-{step}")
    axe_check(page)


def _at_bank(page, step: str) -> None:
    """Each SCA screen of the bank (part of the product too): a screenshot and axe."""
    shot(page, f"private-connection-3-bank-{step}")
    axe_check(page)


def test_private_connection_after_signing_up(page, product):
    email = "e2e-private@example.invalid"
    problems = watch(page, product)
    sign_up(page, product, email=email, password=PASSWORD, on_screen=_signing_up)

    page.goto(f"{product.portal_url}/bank/connect/")
    axe_check(page)
    shot(page, "private-connection-2-connect-form")
    connect_bank(page, product, identity=PRIVATE_1, accounts=["Brukskonto", "Høyrentekonto"], on_screen=_at_bank)
    page.wait_for_url(re.compile(r"/bank/accounts/\?connection=\d+$"))  # the new connection's accounts
    assert page.get_by_text("Your bank is connected.").is_visible()
    page.goto(f"{product.portal_url}/bank/connections/")
    connection = page.locator("article[id^=connection-]")
    assert connection.count() == 1
    assert connection.locator(".badge").inner_text() == "Connected"
    assert "Brukskonto" in connection.inner_text() and "Høyrentekonto" in connection.inner_text()
    axe_check(page)
    shot(page, "private-connection-4-connections")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Accounts").click()
    page.wait_for_url(re.compile(r"/bank/accounts/$"))
    rows = page.locator("tr.account-row")
    assert rows.count() == 2
    for index in range(2):
        balance = rows.nth(index).locator("td.headline-balance").inner_text()  # one headline balance, explained
        assert re.search(r"\d[\d,  ]*\.\d\d NOK", balance), balance  # read when the bank sent us back
        assert "Available now" in balance or "Booked" in balance, balance
    axe_check(page)
    shot(page, "private-connection-5-accounts")
    assert len(_accounts_of(product, email)) == 2

    page.get_by_role("link", name="Brukskonto").click()
    page.wait_for_selector("h1:has-text('Brukskonto')")
    axe_check(page)
    shot(page, "private-connection-6-account")
    assert problems == []


def test_refresh_with_the_psu_present_and_in_the_background(page, product):
    email = "e2e-refresh@example.invalid"
    problems = watch(page, product)
    create_user(product, email=email, password=PASSWORD)
    page.goto(f"{product.portal_url}/auth/sign-in/")
    axe_check(page)
    sign_in(page, product, email, PASSWORD, keyboard=True)
    connect_bank(page, product, identity=PRIVATE_2, accounts=["Felles brukskonto"])
    (account,) = _accounts_of(product, email)
    # The callback read balances and transactions while the PSU was there: no unattended call spent.
    assert account["transactions_refreshed_at"] is not None

    # With the PSU present: "Refresh now" reads balances and transactions again.
    page.goto(f"{product.portal_url}/bank/accounts/{account['pk']}/")
    assert page.locator("table.transactions-booked tr.transaction").count() > 0
    shot(page, "refresh-1-account-before")
    page.goto(f"{product.portal_url}/bank/accounts/")
    row = page.locator(f"tr.account-row[data-account='{account['pk']}']")
    assert row.locator(".refresh-remaining").inner_text() == "4 of 4"
    assert "never" not in row.locator("td").nth(1).inner_text()  # balances and transactions read
    shot(page, "refresh-2-before")
    page.get_by_role("button", name="Refresh now").click()
    page.wait_for_selector(".message-success")
    assert "Balances and transactions refreshed." in page.locator(".messages").inner_text()
    refreshed = row.locator("td").nth(1).inner_text()  # "Last refreshed": balances and transactions
    assert "never" not in refreshed, refreshed
    assert row.locator(".refresh-remaining").inner_text() == "4 of 4"  # the PSU's own refresh costs no budget
    shot(page, "refresh-3-refreshed-by-the-psu")
    (present,) = _accounts_of(product, email)
    assert present["transactions_refreshed_at"] is not None
    page.goto(f"{product.portal_url}/bank/accounts/{account['pk']}/")
    booked = page.locator("table.transactions-booked tr.transaction")
    assert booked.count() > 0
    axe_check(page)  # the account page with transactions and the chart
    shot(page, "refresh-4-account-with-transactions")
    booked.first.get_by_role("link").click()
    page.wait_for_selector("dl.transaction-facts")
    assert "Booked" in page.locator("dl.transaction-facts").inner_text()
    axe_check(page)
    shot(page, "refresh-5-transaction")
    page.goto(f"{product.portal_url}/bank/accounts/")

    # In the background: make the account due; beat's planner enqueues it and the worker reads the bank.
    product.django(
        """
from datetime import timedelta
from django.utils import timezone
from accounts.models import BankAccount
BankAccount.objects.filter(pk=params["pk"]).update(next_refresh_at=timezone.now() - timedelta(minutes=1))
""",
        pk=account["pk"],
    )
    wait_until(
        lambda: (
            _accounts_of(product, email)[0]["transactions_refreshed_at"] != present["transactions_refreshed_at"]
        ),
        timeout=60,
        message=f"the worker refreshed the account\n{product.log('worker')}\n{product.log('beat')}",
    )
    unattended = product.django(
        """
from django.contrib.contenttypes.models import ContentType
from accounts.models import BankAccount
from core.models import BankCall
calls = BankCall.objects.filter(
    content_type=ContentType.objects.get_for_model(BankAccount), object_id=str(params["pk"]), psu_present=False)
result = sorted({call.path_template for call in calls})
""",
        pk=account["pk"],
    )
    assert any("transactions" in path for path in unattended), unattended
    page.reload()
    assert row.locator(".refresh-remaining").inner_text() == "3 of 4"  # one of the 4 unattended calls is used
    axe_check(page)
    shot(page, "refresh-6-refreshed-in-the-background")
    assert problems == []


def test_corporate_connection_with_a_choice_of_agreement(page, product):
    email = "e2e-corporate@example.invalid"
    problems = watch(page, product)
    create_user(product, email=email, password=PASSWORD)
    sign_in(page, product, email, PASSWORD)
    # The connect form by keyboard alone; at the bank, Private Customer 1 chooses the company's agreement among
    # its own and the company's.
    connect_bank(page, product, identity=PRIVATE_1, context="corporate", agreement=COMPANY, keyboard=True)
    page.wait_for_url(re.compile(r"/bank/accounts/\?connection=\d+$"))  # the new connection's accounts
    assert page.get_by_text("Your bank is connected.").is_visible()
    page.goto(f"{product.portal_url}/bank/connections/")
    connection = page.locator("article[id^=connection-]")
    assert connection.count() == 1
    heading = connection.locator("h2").inner_text()
    assert heading.startswith("Corporate") and COMPANY in heading, heading
    assert "Driftskonto" in connection.inner_text() and "Skattetrekkskonto" in connection.inner_text()
    shot(page, "corporate-connection-1-connected")

    # The portal's own agreement step: the agreements the bank lists for this PSU.
    connection.get_by_role("link", name="Corporate agreements").click()
    page.wait_for_selector("h1:has-text('Corporate agreements')")
    choices = page.locator("input[name=agreement]")
    assert choices.count() >= 1
    assert COMPANY in page.locator("form:has(input[name=agreement])").inner_text()
    axe_check(page)
    shot(page, "corporate-connection-2-agreements")

    page.goto(f"{product.portal_url}/bank/accounts/")
    overview = page.locator("table.accounts-overview").inner_text()
    assert "Driftskonto" in overview and "Skattetrekkskonto" in overview
    assert "Brukskonto" not in overview  # the private accounts were not part of this consent
    shot(page, "corporate-connection-3-accounts")
    assert problems == []


def test_consent_expiry_and_reconnection(page, product):
    email = "e2e-expiry@example.invalid"
    problems = watch(page, product)
    create_user(product, email=email, password=PASSWORD)
    sign_in(page, product, email, PASSWORD)
    connect_bank(page, product, identity=PRIVATE_1, accounts=["Brukskonto"])
    page.wait_for_url(re.compile(r"/bank/accounts/\?connection=\d+$"))
    before = product.django(
        """
from connections.models import BankConnection
connection = BankConnection.objects.get(user__username=params["email"])
result = {"pk": connection.pk, "state": connection.state, "until": connection.consent_valid_until.isoformat()}
""",
        email=email,
    )
    assert before["state"] == "active"
    shot(page, "consent-expiry-1-active")

    # The consent's 180 days are over: beat's expiry task, run by the worker, marks the connection.
    product.django(
        """
from datetime import timedelta
from django.utils import timezone
from connections.models import BankConnection
BankConnection.objects.filter(pk=params["pk"]).update(consent_valid_until=timezone.now() - timedelta(minutes=1))
""",
        pk=before["pk"],
    )
    wait_until(
        lambda: (
            product.scalar("SELECT state FROM connections_bankconnection WHERE id = %s", (before["pk"],))
            == "needs_reconnect"
        ),
        timeout=60,
        message=f"the worker expired the consent\n{product.log('worker')}",
    )
    page.goto(f"{product.portal_url}/bank/accounts/")
    assert page.get_by_role("link", name="needs reconnecting").is_visible()
    shot(page, "consent-expiry-2-accounts-need-reconnecting")
    page.get_by_role("link", name="needs reconnecting").click()
    page.wait_for_url(re.compile(r"/bank/connections/"))
    card = page.locator(f"#connection-{before['pk']}")
    assert card.locator(".badge").inner_text() == "Needs reconnecting"
    assert card.locator(".message-warning").is_visible()
    axe_check(page)  # the connections page with a warning
    shot(page, "consent-expiry-3-needs-reconnecting")

    # Reconnect: SCA again at the bank (this browser signed in there before: the bank may skip the identity).
    card.get_by_role("button", name="Reconnect").click()
    authorise_at_bank(page, product, identity=PRIVATE_1, accounts=["Brukskonto"])
    page.wait_for_url(re.compile(rf"/bank/accounts/\?connection={before['pk']}$"))  # its accounts again
    after = product.django(
        """
from connections.models import BankConnection
connection = BankConnection.objects.get(pk=params["pk"])
result = {"state": connection.state, "until": connection.consent_valid_until.isoformat(),
          "accounts": connection.accounts.count()}
""",
        pk=before["pk"],
    )
    assert after["state"] == "active" and after["accounts"] == 1, after
    renewed = datetime.fromisoformat(after["until"]) - datetime.fromisoformat(before["until"])
    assert renewed > timedelta(0)  # a fresh 180 days from the new SCA
    page.goto(f"{product.portal_url}/bank/connections/")
    card = page.locator(f"#connection-{before['pk']}")
    assert card.locator(".badge").inner_text() == "Connected"
    assert card.locator(".message-warning").count() == 0
    shot(page, "consent-expiry-4-reconnected")
    page.goto(f"{product.portal_url}/bank/accounts/")
    assert page.get_by_role("link", name="needs reconnecting").count() == 0
    assert page.locator("tr.account-row").count() == 1
    shot(page, "consent-expiry-5-accounts")
    assert problems == []
