"""Payment journeys in chromium against the whole product whose sandbox bank plays a behaviour the specification
leaves open (spec 3 rule 2, 5 rule 7: the bank may exempt any payment from SCA or require it on any). The suite's
product serves each setting: its bank is restarted with the test's setting (same port and database, as a redeploy
would) and as it was after the test:

1. ``BANK_SIM_SCA_EXEMPT_BELOW=500``: 400 NOK needs no approval. "Send to the bank and approve" ends on the
   payment page, which says in plain words that the bank did not ask for approval, and follows the bank's
   status by itself (the worker polls it at once) until the payment settles.
2. ``BANK_SIM_SCA_AT_INITIATION=true``: the initiation answer carries the SCA address; the browser goes straight
   to the bank's SCA screens, and back on the payment page the bank's PDNG shows up through the worker's poll.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.problems import portal_problems
from tests.e2e.conftest import connect_bank, create_user, shot, sign_in
from tests.e2e.payment_support import (
    GERMAN_CREDITOR,
    PRIVATE_1,
    TIMEOUT,
    approve_at_bank,
    at_review,
    choose_debtor,
    fill,
    payment_pk,
    payment_row,
    review_the_payment,
    send_to_bank,
    settle_while_watching,
    wait_for_shown_status,
)
from tests.product import Product

pytestmark = [pytest.mark.timeout(420)]

PASSWORD = "a long e2e password for sca settings"
BANK_SETTINGS = {
    "exempt-below-500": {"BANK_SIM_SCA_EXEMPT_BELOW": "500"},
    "sca-at-initiation": {"BANK_SIM_SCA_AT_INITIATION": "true"},
}


@pytest.fixture
def product(request, product) -> Iterator[Product]:
    """The suite's product (tests/e2e/conftest.py) with its bank playing the setting the test names."""
    with product.bank_settings(BANK_SETTINGS[request.param]) as running:
        yield running


def _payer_at_review(page, product, email: str, amount: str) -> None:
    create_user(product, email=email, password=PASSWORD)
    sign_in(page, product, email, PASSWORD)
    connect_bank(page, product, identity=PRIVATE_1, context="private")
    page.goto(f"{product.portal_url}/payments/new/")
    choose_debtor(page, "Brukskonto")
    fill(page, {"amount": amount, "currency": "NOK", **GERMAN_CREDITOR, "remittance_information": "Faktura 7"})
    review_the_payment(page)
    at_review(page, PASSWORD)


@pytest.mark.parametrize("product", ["exempt-below-500"], indirect=True)
def test_a_payment_the_bank_exempts_from_sca_is_followed_to_settlement(page, product):
    problems = portal_problems(page, product.portal_url)
    _payer_at_review(page, product, "exempt@payer.example", "400")

    page.get_by_role("button", name="Send to the bank and approve").click()
    page.wait_for_selector("#payment-timeline", timeout=TIMEOUT)  # the payment's page, not the bank's

    shot(page, "payment-exempted-sent")
    assert page.url.startswith(product.portal_url)
    assert "The bank did not ask you to approve this payment" in page.locator("main").inner_text()
    pk = payment_pk(page)
    wait_for_shown_status(page, "PDNG")  # read at once by the worker, without an approval
    shown = settle_while_watching(page, product, pk, shot=lambda step: shot(page, f"payment-exempted-{step}"))
    assert shown[0] == "PDNG" and shown[-1] == "ACSC", shown
    assert payment_row(product, pk)["state"] == "final"
    assert problems == [], problems


@pytest.mark.parametrize("product", ["sca-at-initiation"], indirect=True)
def test_the_sca_address_in_the_initiation_answer_is_followed(page, product):
    problems = portal_problems(page, product.portal_url)
    _payer_at_review(page, product, "at-initiation@payer.example", "12 700")

    send_to_bank(page)  # straight to the bank's SCA screen: the address came with the initiation answer

    shot(page, "payment-at-initiation-bank")
    calls = product.sql(
        "SELECT path_template FROM tpp_portal_bankcall WHERE method = 'POST' AND path_template LIKE %s",
        ("/v1/payments/%",),
    )
    assert [row[0] for row in calls] == ["/v1/payments/{product}"], calls  # no startAuthorisation
    approve_at_bank(page, identity=PRIVATE_1, agreement="PRIVATE - ")
    pk = payment_pk(page)
    wait_for_shown_status(page, "PDNG")
    shot(page, "payment-at-initiation-approved")
    assert payment_row(product, pk)["state"] == "awaiting_status"
    assert problems == [], problems
