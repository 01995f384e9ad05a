"""The payment's page in a real browser (Debian's chromium): the initiator copies the link for the next signer with
the button (copy_link.js). The page's fit, axe and words at both widths and in both languages are the page
tour's (tests/browser/test_tour.py).

No bank is needed: the pages are made from the factories, and the bank refuses."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from devtools.livebank import free_port
from payments.models import PaymentAuthorisation
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.payments.test_initiation import _draft
from tests.payments.test_multisign import corporate_connection
from tests.signin import force_login_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def pages(alice, bob, settings):
    from core.bank import bank_client

    settings.BANK_BASE_URL = f"http://127.0.0.1:{free_port()}"  # a bank that refuses: no page reaches out
    bank_client.cache_clear()
    connection = BankConnectionFactory(user=alice)
    BankAccountFactory(connection=connection, iban="NO9386011117947", name="Brukskonto")
    review = _draft(alice, connection)
    body = json.loads(review.body_json)
    body.update(
        purposeCode="SUPP",
        requestedExecutionDate=timezone.localdate().isoformat(),
        remittanceInformationUnstructured="FP7K2M9QXA Faktura 2026-114",
    )
    review.body_json = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    review.save(update_fields=["body_json"])
    company = corporate_connection(alice)
    corporate_connection(bob)
    shared = PaymentFactory(
        user=alice,
        context="CORPORATE",
        connection=company,
        transaction_status="PATC",
        creditor_name="Bergen Utleie AS",
        creditor_account="NO9386011117947",
        debtor_account="86011117947",
    )
    PaymentAuthorisation.objects.create(payment=shared, signer=alice, completed_at=timezone.now())
    status_event(shared, "PATC")
    cancelled = PaymentFactory(
        user=alice, transaction_status="CANC", state="final", fee_amount="75.00", fee_currency="NOK"
    )
    status_event(cancelled, "CANC")
    yield {
        "review": f"/payments/{review.pk}/review/",
        "shared": f"/payments/{shared.pk}/",
        "cancelled": f"/payments/{cancelled.pk}/",
        "connect": "/bank/connect/",
    }
    bank_client.cache_clear()


def test_the_initiator_copies_the_link_for_the_next_signer(browser, live_server, alice, pages):
    context = browser.new_context(locale="en-GB")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    force_login_page(page, live_server.url, alice)
    page.goto(live_server.url + pages["shared"])

    button = page.get_by_role("button", name="Copy the address")
    button.click()

    page.wait_for_selector(".copy-status:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == live_server.url + pages["shared"]
    assert page.locator("#payment-share-link").input_value() == live_server.url + pages["shared"]
    context.close()
