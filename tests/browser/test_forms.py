"""Forms in a browser: the error summary takes the focus and leads to each field (error-summary.js), and a
limited text field counts as the user types instead of cutting (character-count.js). Both languages, phone and
desktop, under the portal's CSP."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.browser.problems import portal_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

TEXTS = {
    "en": {
        "login": "E-mail address or username",
        "password": "Password",
        "sign_in": "Sign in",
        "name": "Recipient's name",
        "submit": "Review the payment",
        "summary": "There is a problem",
        "remaining": "You have 5 characters remaining",
        "one_left": "You have 1 character remaining",
        "over": "You have 2 characters too many",
        "too_long": "Use at most 70 characters (this has 72).",
    },
    "nb": {
        "login": "E-postadresse eller brukernavn",
        "password": "Passord",
        "sign_in": "Logg inn",
        "name": "Mottakers navn",
        "submit": "Kontroller betalingen",
        "summary": "Det er et problem",
        "remaining": "Du har 5 tegn igjen",
        "one_left": "Du har 1 tegn igjen",
        "over": "Du har 2 tegn for mye",
        "too_long": "Bruk høyst 70 tegn (dette har 72).",
    },
}


@pytest.mark.parametrize(("language", "width"), [("en", 1280), ("nb", 390)])
def test_the_summary_takes_the_focus_and_the_name_is_counted_not_cut(
    browser, live_server, artifacts_dir, alice, password, language, width
):
    text = TEXTS[language]
    BankAccountFactory(connection=BankConnectionFactory(user=alice))
    context = browser.new_context(
        locale="en-GB" if language == "en" else "nb-NO", viewport={"width": width, "height": 844}
    )
    page = context.new_page()
    problems = portal_problems(page, live_server.url)
    try:
        page.goto(f"{live_server.url}{reverse('login')}?next={reverse('payment-new')}")
        page.get_by_label(text["login"]).fill(alice.email)
        page.get_by_label(text["password"]).fill(password)
        page.get_by_role("button", name=text["sign_in"]).click()
        page.wait_for_url(f"**{reverse('payment-new')}")

        name = page.get_by_label(text["name"])
        status = page.locator("#id_creditor_name_count + .character-count-status")
        name.fill("N" * 65)
        assert status.inner_text() == text["remaining"]
        name.press("End")
        for _ in range(4):
            name.press("N")
        assert status.inner_text() == text["one_left"]
        name.press("N")
        name.press("N")
        name.press("N")  # 72: nothing is cut, the count says how many too many
        assert len(name.input_value()) == 72
        assert status.inner_text() == text["over"]
        assert "character-count-over" in status.get_attribute("class")
        live = page.locator("#id_creditor_name_count ~ [aria-live=polite]")
        live.filter(has_text=text["over"]).wait_for(timeout=5000)  # spoken once the typing pauses
        page.screenshot(path=artifacts_dir / f"form-count-{language}-{width}.png", full_page=True)

        page.get_by_role("button", name=text["submit"]).click()
        summary = page.locator("[data-error-summary]")
        summary.wait_for()
        assert page.evaluate("document.activeElement.hasAttribute('data-error-summary')"), "the focus is not on it"
        assert text["summary"] in summary.inner_text()
        assert page.evaluate("document.querySelector('[data-error-summary]').getBoundingClientRect().top") < 844
        assert len(page.get_by_label(text["name"]).input_value()) == 72  # kept for the user to shorten
        page.screenshot(path=artifacts_dir / f"form-summary-{language}-{width}.png", full_page=False)

        summary.get_by_role("link", name=text["too_long"]).click()
        assert page.evaluate("document.activeElement.id") == "id_creditor_name"
        label_top = page.evaluate(
            "document.querySelector('label[for=id_creditor_name]').getBoundingClientRect().top"
        )
        assert -1 < label_top < 844, "the field's label is not in view"  # (-1: sub-pixel rounding)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert problems == []
    finally:
        context.close()


@pytest.mark.parametrize(("language", "width"), [("en", 1280), ("nb", 390)])
def test_our_404_page_and_a_cancelled_payment_in_plain_words(
    browser, live_server, artifacts_dir, alice, password, language, width
):
    from payments.models import PaymentState
    from tests.payments.payment_factories import PaymentFactory, status_event

    payment = PaymentFactory(user=alice, transaction_status="CANC", state=PaymentState.FINAL)
    status_event(payment, "RCVD")
    status_event(payment, "CANC")
    text = TEXTS[language]
    context = browser.new_context(
        locale="en-GB" if language == "en" else "nb-NO", viewport={"width": width, "height": 844}
    )
    page = context.new_page()
    problems = portal_problems(page, live_server.url)
    try:
        response = page.goto(f"{live_server.url}/no-such-page/")
        assert response.status == 404
        heading = {"en": "Page not found", "nb": "Fant ikke siden"}[language]
        assert page.locator("h1").inner_text() == heading
        page.screenshot(path=artifacts_dir / f"error-404-{language}-{width}.png", full_page=True)
        page.locator("main a[href='/']").click()
        page.wait_for_url(f"{live_server.url}/")

        page.goto(f"{live_server.url}{reverse('login')}?next={reverse('payment-detail', args=[payment.pk])}")
        page.get_by_label(text["login"]).fill(alice.email)
        page.get_by_label(text["password"]).fill(password)
        page.get_by_role("button", name=text["sign_in"]).click()
        page.wait_for_selector("#payment")
        status_box = page.locator(".payment-status")
        assert (
            "CANC" not in status_box.inner_text() and "RCVD" not in page.locator("#payment-timeline").inner_text()
        )
        page.locator("#payment details.technical-details summary").click()  # after the facts, folded
        assert "CANC" in page.locator("#payment details.technical-details").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=artifacts_dir / f"payment-cancelled-{language}-{width}.png", full_page=True)
        assert [p for p in problems if "/no-such-page/" not in p] == []  # (chromium logs the 404 itself)
    finally:
        context.close()
