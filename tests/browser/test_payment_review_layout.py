"""The payment form and review page in a real browser (Debian's chromium) at 390x844 and 1280x800: choosing a
currency tells from which amount reporting is asked (rate, date, margin); 10 EUR with a rate 8 days old goes to
the review without reporting; on the review a 70-character name and the signed body wrap inside the card (no
sideways scrolling) and the address has no empty parts. No bank is needed: the account paid from is typed.

Screenshots: test-artifacts/screenshots/payment-review-layout-*.png."""

from __future__ import annotations

from datetime import timedelta

import pytest

from payments.models import ExchangeRate, ExchangeRateSource
from payments.validators import oslo_today
from tests.browser.problems import portal_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PASSWORD = "a-long-test-password-for-the-review"
LONG_NAME = "Internationale Maschinenbau- und Anlagenbaugesellschaft Nordrhein mbH"  # 70 characters
TIMEOUT = 20_000


def _overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 800)])
def test_form_and_review_fit_and_say_which_rate(
    page, live_server, artifacts_dir, django_user_model, width, height
):
    ExchangeRate.objects.create(
        currency="EUR",
        rate="11.50",
        unit=1,
        rate_date=oslo_today() - timedelta(days=8),
        source=ExchangeRateSource.NORGES_BANK,
    )
    email = "reviewer@example.com"
    django_user_model.objects.create_user(email, email, PASSWORD)
    problems = portal_problems(page, live_server.url)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{live_server.url}/auth/sign-in/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", PASSWORD)
    page.locator("form button[type=submit]").last.click()
    page.wait_for_selector(f"text=Signed in as {email}", timeout=TIMEOUT)

    page.goto(f"{live_server.url}/payments/new/")
    help_text = page.locator("#id_regulatory_reporting_code_helptext")
    assert help_text.inner_text() == "Required for payments of 100 000 NOK or more."
    page.select_option("[name=currency]", "EUR")
    text = help_text.inner_text()
    assert text.startswith("Required from 7 914 EUR, about 91 000 NOK. We use 1 EUR = 11.50 NOK"), text
    assert "8 days old" in text
    page.select_option("[name=currency]", "GHS")
    assert help_text.inner_text().startswith("Required for any amount in GHS:")
    page.select_option("[name=currency]", "EUR")
    for name, value in {
        "debtor_account": "NO9386011117947",
        "amount": "10",
        "creditor_name": LONG_NAME,
        "creditor_account": "DE89370400440532013000",
        "creditor_city": "Berlin",
    }.items():
        page.fill(f"[name={name}]", value)
    page.select_option("[name=creditor_country]", "DE")
    assert _overflow(page) <= 0
    help_text.scroll_into_view_if_needed()
    page.screenshot(path=artifacts_dir / f"payment-review-layout-form-{width}.png", full_page=True)
    page.get_by_role("button", name="Review the payment").click()
    page.wait_for_selector("text=Send to the bank and approve", timeout=TIMEOUT)

    main = page.locator("main").inner_text()
    assert "About, in NOK" in main and "115.00 NOK" in main and "1 EUR = 11.50 NOK, Norges Bank's rate of" in main
    assert "Berlin, Germany" in main and ", ," not in main
    page.locator("details.payment-body summary").click()
    card = page.locator("section.payment-review").bounding_box()
    name = page.locator(".payment-summary dd", has_text=LONG_NAME).bounding_box()
    body = page.locator("pre.payment-body-json").bounding_box()
    assert name["x"] + name["width"] <= card["x"] + card["width"]
    assert body["x"] + body["width"] <= card["x"] + card["width"]
    assert _overflow(page) <= 0, "the review page scrolls sideways"
    page.screenshot(path=artifacts_dir / f"payment-review-layout-review-{width}.png", full_page=True)
    assert problems == []


def test_in_norwegian_on_a_phone(browser, live_server, artifacts_dir, django_user_model):
    """The same journey in bokmål at 390 px: the texts of the rate and margin, the review's rate line."""
    ExchangeRate.objects.create(
        currency="EUR",
        rate="11.50",
        unit=1,
        rate_date=oslo_today() - timedelta(days=8),
        source=ExchangeRateSource.NORGES_BANK,
    )
    email = "leser@example.com"
    django_user_model.objects.create_user(email, email, PASSWORD)
    context = browser.new_context(locale="nb-NO", viewport={"width": 390, "height": 844})
    page = context.new_page()
    problems = portal_problems(page, live_server.url)
    try:
        page.goto(f"{live_server.url}/auth/sign-in/")
        page.fill("input[name=login]", email)
        page.fill("input[name=password]", PASSWORD)
        page.locator("form button[type=submit]").last.click()
        page.wait_for_load_state()
        page.goto(f"{live_server.url}/payments/new/")
        page.select_option("[name=currency]", "EUR")
        text = page.locator("#id_regulatory_reporting_code_helptext").inner_text()
        assert text.startswith("Kreves fra 7 914 EUR, omtrent 91 000 NOK. Vi bruker 1 EUR = 11,5"), text
        assert "8 dager gammel" in text
        for name, value in {
            "debtor_account": "NO9386011117947",
            "amount": "10",
            "creditor_name": LONG_NAME,
            "creditor_account": "DE89370400440532013000",
            "creditor_city": "Berlin",
        }.items():
            page.fill(f"[name={name}]", value)
        page.select_option("[name=creditor_country]", "DE")
        page.locator("form button[type=submit]", has_text="betalingen").click()
        page.wait_for_selector("details.payment-body", timeout=TIMEOUT)
        page.locator("details.payment-body summary").click()
        main = page.locator("main").inner_text()
        assert "Norges Banks kurs fra" in main and "Berlin, Tyskland" in main, main
        assert _overflow(page) <= 0
        page.screenshot(path=artifacts_dir / "payment-review-layout-review-390-nb.png", full_page=True)
        assert problems == []
    finally:
        context.close()
