"""The staff journeys of issue #9 in chromium against the running product (tests/e2e/conftest.py): an operator
who first sets up the second factor through the pages, with the link of a mailed invitation (an authenticator
app, its recovery codes; the password alone enrols nothing) and signs in
again with its code, then uses the Django admin (a connection, the bank-call audit log with a filter, the staff
dashboard); a support user who may look but not change, and the sandbox admin (the customer list with both
toggles, a new customer, and the bank's own words when it refuses a form), both with an authenticator app made
for them and its code at sign-in. Screenshots are named after the journey and the step; each page type is checked
with axe once."""

from __future__ import annotations

import re

import pytest
from stdnum.no import fodselsnummer

from tests import product as whole
from tests.e2e.conftest import (
    axe_check,
    create_user,
    enrol_totp,
    new_totp_secret,
    shot,
    sign_in,
    tab_to,
    watch,
)

PRIVATE_1 = "13039319955"
KNOWN_NUMBERS = ["13039319955", "12085592767", "18129215603", "20079518612"]  # docs/bank-interface.md, reference 1
PASSWORD = "fjord-e2e-staff-2026"


def _national_identity_number(birth: str, individual: str) -> str:
    """A valid Norwegian national identity number (two mod-11 check digits) for ``ddmmyy`` + 3 digits."""
    number = birth + individual
    number += fodselsnummer.calc_check_digit1(number)
    number += fodselsnummer.calc_check_digit2(number)
    assert fodselsnummer.is_valid(number)
    return number


@pytest.fixture(scope="module")
def customer_connection(product) -> int:
    """A customer of the portal with a bank connection (made over HTTP: the customer's pages are not the point
    here), so that the admin and the audit log have something to show. Returns the connection's id."""
    product.identities_release()  # a module fixture: made before the journeys' own release (tests/e2e/conftest.py)
    whole.user_create(product, "e2e-staff-customer@example.invalid", PASSWORD)
    session = whole.sign_in(product, "e2e-staff-customer@example.invalid", PASSWORD)
    answer = whole.connect_bank(product, session, identity=PRIVATE_1)
    assert answer.status_code == 200, answer.text[:500]
    return product.django(
        """
from connections.models import BankConnection
result = BankConnection.objects.get(user__username="e2e-staff-customer@example.invalid").pk
"""
    )


def test_operator_uses_the_admin_audit_log_and_dashboard(page, product, customer_connection):
    problems = watch(page, product)
    email = "e2e-operator@example.invalid"
    create_user(product, email=email, password=PASSWORD, staff=True, groups=("operators",))
    sign_in(page, product, email, PASSWORD)  # the password alone: no second factor yet

    def enrolling(page, step: str) -> None:
        shot(page, f"staff-admin-0-second-factor-{step}")
        axe_check(page)

    secret = enrol_totp(page, product, email=email, password=PASSWORD, on_screen=enrolling)
    # From now on the password alone signs nobody in: the sign-in asks for the app's code.
    page.locator("header").get_by_role("button", name="Sign out").click()
    page.wait_for_selector("header a:has-text('Sign in')")
    sign_in(page, product, email, PASSWORD, totp_secret=secret)
    page.get_by_role("link", name="Staff").click()
    page.wait_for_url(re.compile(r"/admin/$"))
    axe_check(page)
    shot(page, "staff-admin-1-index")

    # The customer's connection: the list, then its page (read-only for everyone; operators run the actions).
    page.goto(f"{product.portal_url}/admin/connections/bankconnection/")
    row = page.locator("#result_list tbody tr", has=page.locator(f"a[href$='/{customer_connection}/change/']"))
    assert row.count() == 1
    options = page.locator("select[name=action] option").all_inner_texts()
    assert "Mark as needing reconnection" in options, options
    axe_check(page)
    shot(page, "staff-admin-2-connections")
    row.locator(f"a[href$='/{customer_connection}/change/']").first.click()
    page.wait_for_url(re.compile(rf"/admin/connections/bankconnection/{customer_connection}/change/"))
    content = page.locator("#content").inner_text()
    assert "Connected" in content or "active" in content, content[:800]
    assert page.locator("input[name=_save]").count() == 0  # no form to change it
    assert PRIVATE_1 not in page.content()  # a PSU identifier never shows on a staff page
    axe_check(page)
    shot(page, "staff-admin-3-connection")

    # The audit log of bank calls, filtered to the calls made with the PSU present (the connect of the customer).
    page.goto(f"{product.portal_url}/admin/tpp_portal/bankcall/")
    everything = page.locator("#result_list tbody tr").count()
    assert everything > 0
    page.locator("#changelist-filter details[data-filter-title='PSU present'] a", has_text="Yes").click()
    page.wait_for_url(re.compile(r"psu_present__exact=1"))
    present = page.locator("#result_list tbody tr")
    assert 0 < present.count() <= everything
    icons = page.locator("#result_list tbody td.field-psu_present img").evaluate_all("e => e.map(i => i.alt)")
    assert icons and set(icons) == {"True"}, icons
    axe_check(page)
    shot(page, "staff-admin-4-audit-log-psu-present")

    # The staff dashboard: calls per operation, including the consent the customer just gave.
    page.goto(f"{product.portal_url}/staff/dashboard/")
    page.wait_for_selector("h1:has-text('Bank integration dashboard')")
    assert "consent" in page.locator("main").inner_text().lower()
    axe_check(page)
    shot(page, "staff-admin-5-dashboard")
    assert problems == []


def test_support_can_view_but_not_change(page, product, customer_connection):
    problems = watch(page, product)
    email = "e2e-support@example.invalid"
    secret = new_totp_secret()
    create_user(product, email=email, password=PASSWORD, staff=True, groups=("support",), totp_secret=secret)
    sign_in(page, product, email, PASSWORD, totp_secret=secret)

    page.goto(f"{product.portal_url}/admin/connections/bankconnection/")
    assert page.locator(f"#result_list a[href$='/{customer_connection}/change/']").count() == 1
    options = page.locator("select[name=action] option").all_inner_texts()
    assert "Mark as needing reconnection" not in options, options  # an action that changes needs "change"
    shot(page, "staff-support-1-connections")
    page.goto(f"{product.portal_url}/admin/connections/bankconnection/{customer_connection}/change/")
    assert page.locator("#content h1").is_visible()
    assert page.locator("input[name=_save]").count() == 0
    shot(page, "staff-support-2-connection")

    page.goto(f"{product.portal_url}/admin/tpp_portal/bankcall/")
    assert page.locator("#result_list tbody tr").count() > 0  # the audit log is readable

    # Operators may add an exchange rate; support may not (403), and the list offers no "Add" link.
    page.goto(f"{product.portal_url}/admin/payments/exchangerate/")
    assert page.locator("a.addlink").count() == 0
    shot(page, "staff-support-3-exchange-rates")
    # Asked with the browser's session, outside the page: Django's bare 403 page would make chromium ask for a
    # /favicon.ico that the portal does not serve.
    refused = page.request.get(f"{product.portal_url}/admin/payments/exchangerate/add/")
    assert refused.status == 403
    assert problems == []


def test_sandbox_admin_lists_creates_and_shows_the_banks_refusal(page, product):
    problems = watch(page, product)
    email = "e2e-sandbox@example.invalid"
    secret = new_totp_secret()
    create_user(product, email=email, password=PASSWORD, staff=True, groups=("operators",), totp_secret=secret)
    sign_in(page, product, email, PASSWORD, keyboard=True, totp_secret=secret)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sandbox bank").click()
    page.wait_for_selector("h1:has-text('Sandbox customers')")

    # The list with both toggles (accounts and agreements), then without either.
    assert page.get_by_label("With accounts").is_checked() and page.get_by_label("With agreements").is_checked()
    rows = page.locator("tr.sandbox-customer")
    listed = [rows.nth(i).get_attribute("data-customer-number") for i in range(rows.count())]
    assert set(KNOWN_NUMBERS) <= set(listed), listed
    first = page.locator(f"tr.sandbox-customer[data-customer-number='{PRIVATE_1}']")
    assert first.locator("td.accounts li code").count() == 2
    assert first.locator("td.card-accounts li code").count() == 1
    assert "withAccounts=true, withAgreements=true" in page.locator(".listing-timing").inner_text()
    axe_check(page)
    shot(page, "sandbox-admin-1-customers-with-accounts-and-agreements")
    page.get_by_label("With accounts").uncheck()
    page.get_by_label("With agreements").uncheck()
    page.get_by_role("button", name="List customers").click()
    page.wait_for_selector("text=withAccounts=false, withAgreements=false")
    assert page.locator("tr.sandbox-customer td.accounts").first.inner_text().strip() == "not requested"
    shot(page, "sandbox-admin-2-customers-without-either")

    # A new private customer.
    number = _national_identity_number("150690", "417")
    page.get_by_role("navigation", name="Sandbox bank").get_by_role("link", name="New customer").click()
    page.wait_for_selector("h1:has-text('New sandbox customer')")
    axe_check(page)
    page.locator("input[name=customer_type][value=PRIVATE]").check()
    page.get_by_label("Customer number").fill(number)
    page.get_by_label("Name").fill("Kari E2E Nordmann")
    shot(page, "sandbox-admin-3-new-customer")
    page.get_by_role("button", name="Create customer").click()
    page.wait_for_selector("h1:has-text('Kari E2E Nordmann')")
    assert "Customer Kari E2E Nordmann created." in page.locator(".messages").inner_text()
    assert page.locator(".sca-number-value").input_value() == number  # to type at the bank's SCA screen
    axe_check(page)
    shot(page, "sandbox-admin-4-customer-created")
    assert product.bank_sql("SELECT name FROM bank_simulator_customer WHERE customer_number = ?", (number,)) == [
        ("Kari E2E Nordmann",)
    ]

    # The bank refuses a customer number it has already: its own words show beside the field. This time the form
    # is completed by keyboard alone (the type stays the preselected "private").
    page.get_by_role("navigation", name="Sandbox bank").get_by_role("link", name="New customer").click()
    page.wait_for_selector("h1:has-text('New sandbox customer')")
    tab_to(page, "input[name=customer_type]")
    page.keyboard.press("Tab")
    page.keyboard.type(PRIVATE_1)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.name") == "customer_name"
    page.keyboard.type("Someone Else")
    page.keyboard.press("Enter")
    error = page.locator("#id_customer_number_error")
    error.wait_for()
    assert "exists already" in error.inner_text(), error.inner_text()
    axe_check(page)  # a form with the bank's error
    shot(page, "sandbox-admin-5-refused-by-the-bank")
    assert problems == []
