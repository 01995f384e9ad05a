"""The payment's page (issue 31): the facts first and the technical "Details" after them, the message to the
recipient and the KID shown, account numbers grouped for reading, and a copy button for the link the initiator
passes on to the next signer (a script of its own, no inline script)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.payments.payment_factories import PaymentFactory
from tests.payments.test_multisign import _signed_in, corporate_pair

pytestmark = pytest.mark.django_db


def _page(client, payment) -> str:
    response = client.get(reverse("payment-detail", args=[payment.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _with_body(payment, **fields):
    body = json.loads(payment.body_json)
    body.update(fields)
    payment.body_json = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    payment.save(update_fields=["body_json"])
    return payment


def test_the_facts_come_before_the_folded_details(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="ACSC")

    page = _page(alice_client, payment)

    facts, details, actions = (
        page.index(mark) for mark in ('class="payment-facts"', "<summary>Details", "payment-actions")
    )
    assert facts < details < actions
    assert page.index("payment-status-meaning") < facts


def test_the_message_to_the_recipient_and_the_kid_are_shown(alice_client, alice):
    payment = _with_body(
        PaymentFactory(user=alice),
        remittanceInformationUnstructured="FP7K2M9QXA Invoice 2026-114",
        remittanceInformationStructuredArray=[{"reference": "1234567890128", "referenceType": "KID"}],
    )

    page = _page(alice_client, payment)

    assert re.search(r"<dt>Message to the recipient</dt>\s*<dd[^>]*>FP7K2M9QXA Invoice 2026-114</dd>", page)
    assert re.search(r"<dt>KID \(customer reference\)</dt>\s*<dd>1234567890128</dd>", page)


def test_without_a_message_there_is_no_empty_line(alice_client, alice):
    page = _page(alice_client, PaymentFactory(user=alice))
    assert "Message to the recipient" not in page


def test_account_numbers_are_grouped_for_reading(alice_client, alice):
    payment = PaymentFactory(user=alice, creditor_account="DE89370400440532013000", debtor_account="86011117947")
    page = _page(alice_client, payment)
    assert "DE89 3704 0044 0532 0130 00" in page and "8601 11 17947" in page


def test_the_share_link_has_a_copy_button_run_by_a_script_file(alice, bob):
    payment = corporate_pair(alice, bob, transaction_status="PATC")

    page = _page(_signed_in(alice), payment)

    button = re.search(r"<button [^>]*data-copy=\"payment-share-link\"[^>]*>([^<]*)</button>", page)
    assert button and button.group(1) == "Copy the address"
    assert " hidden" in button.group(0)  # shown by the script: without it the address is still there to copy
    assert 'id="payment-share-link"' in page and 'role="status"' in page
    assert "js/copy_link.js" in page
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)  # no inline script (CSP script-src 'self')
    script = (Path(settings.BASE_DIR) / "static/js/copy_link.js").read_text()
    assert "navigator.clipboard" in script and "data-copy" in script


def test_only_the_initiator_of_a_company_payment_gets_the_script(alice_client, alice):
    page = _page(alice_client, PaymentFactory(user=alice))
    assert "js/copy_link.js" not in page and "data-copy=" not in page
