"""The staff sandbox area in a real browser against the running sandbox bank: the customer list with both
toggles, the time each listing took, and the "use in test" copy box. The staff user signs in as staff do: the
password, then the code of an authenticator app (made with allauth.mfa's API)."""

from __future__ import annotations

import pytest

from tests.live_bank import live_bank, live_bank_server  # noqa: F401
from tests.second_factor import new_totp_secret, totp_code

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.real_second_factor,
]

KNOWN_NUMBERS = ["13039319955", "12085592767", "18129215603", "20079518612"]  # docs/bank-interface.md, reference 1


def test_staff_lists_sandbox_customers_with_both_toggles(page, live_server, live_bank, artifacts_dir):  # noqa: F811
    from allauth.mfa.totp.internal.auth import TOTP
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    staff = get_user_model().objects.create_user(
        "staff@example.invalid", "staff@example.invalid", "a-long-test-password", is_staff=True
    )
    # What the support group gives (its rows are made by a migration, which a transactional test has flushed).
    staff.user_permissions.add(
        Permission.objects.get(content_type__app_label="sandbox_admin", codename="view_sandbox")
    )
    # One account a customer's connection has read: the portal knows its IBAN and name (the bank's sandbox
    # answers give only ids).
    from core.bank import bank_client
    from tests.bank_factories import BankAccountFactory

    read = bank_client().sandbox.customers(with_accounts=True)[0].accounts[0]
    BankAccountFactory(resource_id=read, iban="NO9386011117947", name="Brukskonto")
    secret = new_totp_secret()
    TOTP.activate(staff, secret)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/auth/sign-in/")
    page.get_by_label("E-mail address or username").fill("staff@example.invalid")
    page.get_by_label("Password").fill("a-long-test-password")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/auth/2fa/authenticate/")
    page.locator("input[name=code]").fill(totp_code(secret))
    page.locator("main").get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Signed in as staff@example.invalid")

    # Staff who may not read the dashboard land on the admin, which links the sandbox area.
    page.get_by_role("link", name="Sandbox customers, accounts and mock data").click()
    page.wait_for_selector("h1:has-text('Sandbox customers')")
    assert page.get_by_label("With accounts").is_checked()
    assert page.get_by_label("With agreements").is_checked()
    rows = page.locator("tr.sandbox-customer")
    assert rows.count() == 4
    assert [rows.nth(i).get_attribute("data-customer-number") for i in range(4)] == KNOWN_NUMBERS
    first = rows.nth(0)
    assert first.locator("td.accounts li code").count() == 2
    assert first.locator("td.card-accounts li code").count() == 1
    assert "privat" in first.locator("td.agreements").inner_text()
    assert "withAccounts=true, withAgreements=true" in page.locator(".listing-timing").inner_text()
    assert "enc!!" not in first.inner_text()  # the bank's ids only behind "Details" (closed)
    assert "NO93 8601 1117 947 · Brukskonto" in first.locator("td.accounts").inner_text()
    page.screenshot(path=artifacts_dir / "sandbox-customers-with-accounts-and-agreements.png", full_page=True)
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=artifacts_dir / "sandbox-customers-with-accounts-and-agreements-390.png", full_page=True)
    page.set_viewport_size(size)

    first.get_by_role("button", name="Copy").click()
    page.wait_for_selector("button:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == KNOWN_NUMBERS[0]

    page.get_by_label("With accounts").uncheck()
    page.get_by_label("With agreements").uncheck()
    page.get_by_role("button", name="List customers").click()
    page.wait_for_selector("text=withAccounts=false, withAgreements=false")
    assert page.locator("tr.sandbox-customer").count() == 4
    assert page.locator("tr.sandbox-customer td.accounts").first.inner_text().strip() == "not requested"
    assert not page.get_by_label("With accounts").is_checked()
    timings = page.locator("table.sandbox-timings tbody tr")
    assert timings.count() == 2
    assert timings.nth(0).locator("td").nth(0).inner_text() == "false"
    assert timings.nth(1).locator("td").nth(0).inner_text() == "true"
    assert timings.nth(0).locator("td").nth(3).inner_text().endswith(" ms")
    page.screenshot(path=artifacts_dir / "sandbox-customers-without-flags.png", full_page=True)
    assert page.problems == []
