"""Payment journeys in a real browser (Debian's chromium) against the portal and the sandbox bank, both running
as servers: sign in, connect the bank at its SCA screens, fill in the payment, review it, approve it at the bank,
come back, and watch the status reach ACSC on the payment page without reloading it (the bank's batches are
run with its sandbox control; the status is read by the poll task, run inline here instead of by a worker).

1. 150 000 NOK to a German IBAN with regulatory code 29, a private customer.
2. Havbruk Nord AS's two-signer agreement: the first signer pays and approves (PATC), the second signs in as
   their own portal user, opens the payment and signs; the batches settle it.

Screenshots of every step go to test-artifacts/screenshots/payment-*.png.
"""

from __future__ import annotations

import copy
import re

import pytest

from payments.models import Payment, PaymentEvent, PaymentEventKind
from payments.services.polling import payment_poll
from tests.browser.problems import portal_problems
from tests.live_bank import live_bank, live_bank_server  # noqa: F401 - the fixtures
from tests.payments.journeys import CORPORATE_2, PRIVATE_2, run_batches

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

PASSWORD = "a-long-test-password-for-payments"
TIMEOUT = 20_000  # ms


@pytest.fixture
def portal(live_bank, live_server, settings):  # noqa: F811
    """The portal's live server, with the bank sending the PSU back to it; the poll task runs inline (the
    worker's job), so the status is read right after the bank's redirect back."""
    from core.bank import bank_client
    from tpp_portal.celery import app

    settings.PORTAL_BASE_URL = live_server.url
    settings.CSRF_TRUSTED_ORIGINS = [live_server.url]
    # The browser may post forms that redirect to the bank (its SCA screens): the CSP names the bank's address,
    # here the sandbox bank's test port.
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"] = ["'self'", live_bank]
    settings.CONTENT_SECURITY_POLICY = policy
    bank_client.cache_clear()
    app.loader.import_default_modules()  # the tasks the services enqueue by name (a worker autodiscovers them)
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield live_server.url
    app.conf.task_always_eager = eager
    bank_client.cache_clear()


def _shot(page, artifacts_dir, name: str) -> None:
    page.screenshot(path=artifacts_dir / f"payment-{name}.png", full_page=True)


# The journey's own sign-in: a new user, then the home page's link and the form's labels, as a person finds them
# (tests/signin.py names the page and fields the other sign-ins use).
def _sign_in(page, base: str, email: str, django_user_model) -> None:
    django_user_model.objects.create_user(email, email, PASSWORD)
    page.goto(f"{base}/")
    page.get_by_role("link", name="Sign in").first.click()
    page.get_by_label("E-mail address or username").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector(f"text=Signed in as {email}", timeout=TIMEOUT)


def _bank_sca(page, *, identity: str, context: str, approve_label: str) -> None:
    """The bank's SCA screens, as the PSU sees them: identity number, context, then approve."""
    try:
        page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    except Exception as exc:
        raise AssertionError(
            f"not at the bank's SCA screen: {page.url}\n{page.locator('body').inner_text()}"
        ) from exc
    if page.locator("input[name=identity]").count():
        page.fill("input[name=identity]", identity)
        page.click("button[name=action][value=identify]")
        page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    if page.locator("input[name=agreement]").count():
        page.locator("label", has_text=f"{context} - ").first.locator("input[name=agreement]").check()
        page.click("button[name=action][value=context]")
        page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    boxes = page.locator("input[name=account]")
    for index in range(boxes.count()):  # share every offered account
        boxes.nth(index).check()
    page.get_by_role("button", name=approve_label).click()


def _connect(page, base: str, *, identity: str, context: str) -> None:
    page.goto(f"{base}/bank/connect/")
    page.check(f"input[name=context][value={context}]")
    page.check("input[name=access][value=accounts]")
    page.get_by_role("button", name="Continue to the bank").click()
    _bank_sca(page, identity=identity, context=context, approve_label="Approve")
    page.wait_for_url(re.compile(re.escape(base) + r"/"), timeout=TIMEOUT)


def _fill(page, name: str, value: str) -> None:
    field = page.locator(f"[name={name}]")
    if field.evaluate("e => e.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)


def _new_payment(page, base: str, *, debtor_label: str) -> None:
    page.goto(f"{base}/payments/new/")
    debtor = page.locator("[name=debtor_account]")
    option = debtor.locator("option", has_text=debtor_label).first.get_attribute("value")
    debtor.select_option(option)
    for name, value in {
        "amount": "150000",
        "currency": "NOK",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": "DE89 3704 0044 0532 0130 00",
        "creditor_agent": "COBADEFFXXX",
        "creditor_country": "DE",
        "creditor_city": "München",
        "remittance_information": "Invoice 2026-114",
        "regulatory_reporting_code": "29",
        "regulatory_reporting_information": "Engineering services",
    }.items():
        if page.locator(f"[name={name}]").count():
            _fill(page, name, value)
    page.get_by_role("button", name="Review the payment").click()
    page.wait_for_selector("text=Send to the bank and approve", timeout=TIMEOUT)


def _payment_on_page(page) -> Payment:
    match = re.search(r"/payments/(\d+)/", page.url)
    assert match, page.url
    return Payment.objects.get(pk=int(match.group(1)))


def _settle_while_watching(page, payment: Payment, artifacts_dir, name: str) -> None:
    """Run the bank's batches and read the status (the worker's job) until ACSC, while the page stays open: the
    badge must reach ACSC by the page's own script, without a reload."""
    page.evaluate("window.__sameDocument = true")
    for _ in range(4):
        if payment_poll(payment_id=payment.pk).status == "ACSC":
            break
        run_batches()
    payment.refresh_from_db()
    assert payment.transaction_status == "ACSC"
    try:
        page.wait_for_selector("#payment-status-label[data-status=ACSC]", timeout=60_000)
    except Exception as exc:
        raise AssertionError(f"the page did not follow: {page.locator('main').inner_text()}") from exc
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
    assert page.locator("#payment-status-label").inner_text() == "Completed"
    assert not page.locator("#payment-check-form").is_visible()  # nothing changes any more
    assert not page.locator("#payment-cancel-link").is_visible()
    timeline = page.locator("#payment-timeline").inner_text()
    for words in ("Received", "Pending", "Being settled", "Completed", "The money has left your account"):
        assert words.lower() in timeline.lower(), timeline
    _shot(page, artifacts_dir, f"{name}-completed")


def test_cross_border_payment_to_germany_reaches_acsc(page, portal, artifacts_dir, django_user_model):
    problems = portal_problems(page, portal)
    _sign_in(page, portal, "payer@example.com", django_user_model)
    _connect(page, portal, identity=PRIVATE_2, context="PRIVATE")

    # Private Customer 2's BSU holds 212 000 NOK: enough for 150 000 NOK and the fee
    _new_payment(page, portal, debtor_label="BSU")
    _shot(page, artifacts_dir, "germany-review")
    review = page.locator("main").inner_text()
    assert "Müller Maschinenbau GmbH" in review and "DE89 3704 0044 0532 0130 00" in review
    assert "29 - Other purchase or sale of services" in review

    page.get_by_role("button", name="Send to the bank and approve").click()
    page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    _shot(page, artifacts_dir, "germany-bank-sca")
    _bank_sca(page, identity=PRIVATE_2, context="PRIVATE", approve_label="Approve payment")
    page.wait_for_selector("#payment-timeline", timeout=TIMEOUT)
    payment = _payment_on_page(page)
    assert payment.amount == 150000 and payment.currency == "NOK"
    page.wait_for_selector("#payment-status-label[data-status=PDNG]", timeout=TIMEOUT)
    assert "50.00 NOK" in page.locator("#payment-fee").inner_text()
    _shot(page, artifacts_dir, "germany-pending")

    _settle_while_watching(page, payment, artifacts_dir, "germany")
    assert problems == []


def test_two_signer_corporate_payment_reaches_acsc(browser, portal, artifacts_dir, django_user_model):
    first = browser.new_context(locale="en-GB").new_page()
    second = browser.new_context(locale="en-GB").new_page()
    problems_first, problems_second = portal_problems(first, portal), portal_problems(second, portal)

    _sign_in(first, portal, "finance@havbruk.example", django_user_model)
    _connect(first, portal, identity=PRIVATE_2, context="CORPORATE")
    _sign_in(second, portal, "ceo@havbruk.example", django_user_model)
    _connect(second, portal, identity=CORPORATE_2, context="CORPORATE")

    _new_payment(first, portal, debtor_label="Driftskonto")
    first.get_by_role("button", name="Send to the bank and approve").click()
    _bank_sca(first, identity=PRIVATE_2, context="CORPORATE", approve_label="Approve payment")
    first.wait_for_selector("#payment-status-label[data-status=PATC]", timeout=TIMEOUT)
    payment = _payment_on_page(first)
    link = first.locator("input.share-link").input_value()
    assert link.endswith(f"/payments/{payment.pk}/")
    _shot(first, artifacts_dir, "corporate-patc-first-signer")

    second.goto(link)
    second.wait_for_selector("text=More signatures needed", timeout=TIMEOUT)
    _shot(second, artifacts_dir, "corporate-patc-second-signer")
    second.get_by_role("button", name="Sign at the bank").click()
    _bank_sca(second, identity=CORPORATE_2, context="CORPORATE", approve_label="Approve payment")
    second.wait_for_selector("#payment-status-label[data-status=PDNG]", timeout=TIMEOUT)
    signatures = second.locator("#payment-signature-list").inner_text()
    assert "finance@havbruk.example" in signatures and "ceo@havbruk.example" in signatures

    # the first signer's page, open all along, follows without a reload
    first.wait_for_selector("#payment-status-label[data-status=PDNG]", timeout=60_000)
    assert not first.locator("#payment-patc").is_visible()  # no more signatures asked for
    _settle_while_watching(first, payment, artifacts_dir, "corporate")
    timeline = first.locator("#payment-timeline").inner_text()
    assert "Signature added" in timeline and "ceo@havbruk.example" in timeline
    assert PaymentEvent.objects.filter(payment=payment, kind=PaymentEventKind.SIGNATURE).count() == 1
    assert problems_first == [] and problems_second == []
    first.context.close()
    second.context.close()
