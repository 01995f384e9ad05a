"""The audit hook: one record per attempt, with PSU identifiers and signatures redacted."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.bankfake import Answer
from xs2a import errors, models
from xs2a.audit import REDACTED
from xs2a.psu import PsuContext

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"
CORPORATE_ID = "0b4f9f5e-8d55-4ad4-9d2f-9f0d8a3f8f10"


def test_every_attempt_is_recorded_without_psu_identifiers_or_signatures(bank, make_client):
    records = []
    client = make_client(bank.base_url, audit_hook=records.append)
    psu = PsuContext(psu_id=PSU_ID, corporate_id=CORPORATE_ID, ip_address="198.51.100.7")
    refusal = {
        "tppMessages": [{"category": "ERROR", "code": "CONSENT_UNKNOWN", "text": f"No consent for PSU {PSU_ID}"}]
    }
    bank.add("GET", "/v1/accounts/enc!!secret=/transactions", Answer(503, b""), Answer(403, refusal))

    with pytest.raises(errors.ConsentUnknownError):
        client.accounts.transactions("enc!!secret=", psu=psu)

    first, second = records
    assert (first.attempt, first.status, first.will_retry) == (1, 503, True)
    assert (second.attempt, second.status, second.will_retry) == (2, 403, False)
    assert first.request_id == second.request_id == bank.received[0].headers["x-request-id"]
    assert second.method == "GET"
    assert second.path_template == "/v1/accounts/{account_id}/transactions"
    assert second.psu_present is True
    assert second.tpp_message_codes == ("CONSENT_UNKNOWN",)
    assert second.tpp_message_texts == (f"No consent for PSU {REDACTED}",)
    assert second.error == "ConsentUnknownError"
    assert second.bytes_sent == 0 and second.bytes_received == len(json.dumps(refusal).encode())
    assert second.duration_ms >= 0 and second.started_at.tzinfo is not None
    for header in ("PSU-ID", "PSU-Corporate-ID", "PSU-IP-Address", "Signature", "TPP-Signature-Certificate"):
        assert second.request_headers[header] == REDACTED
    assert second.request_headers["X-Request-ID"] == second.request_id
    everything = repr(records)
    for secret in (
        PSU_ID,
        CORPORATE_ID,
        "198.51.100.7",
        "enc!!secret=",
        bank.received[1].headers["signature"][:40],
    ):
        assert secret not in everything


def test_a_lost_payment_answer_is_recorded_with_no_status(bank, make_client):
    records = []
    client = make_client(bank.base_url, audit_hook=records.append, timeout=(2.0, 0.2))
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", Answer(201, {}, delay=0.6))
    payment = models.PaymentInitiation(
        instructed_amount=models.Amount(Decimal("1.00"), "NOK"),
        creditor_name="X",
        creditor_account=models.AccountReference(bban="1", currency="NOK"),
        debtor_account=models.AccountReference(bban="2", currency="NOK"),
    )
    with pytest.raises(errors.OutcomeUnknownError):
        client.payments.initiate(payment, psu=PsuContext(psu_id=PSU_ID, ip_address="10.1.2.3"))
    (record,) = records
    assert record.status is None and record.error == "OutcomeUnknownError"
    assert record.path_template == "/v1/payments/{product}"
    assert record.bytes_sent == len(bank.received[0].body) > 0


def test_a_failing_audit_hook_does_not_lose_the_bank_answer(bank, make_client, caplog):
    def broken(record):
        raise RuntimeError("audit store down")

    client = make_client(bank.base_url, audit_hook=broken)
    bank.add("GET", "/v1/users", Answer(200, {"_links": {}}))
    assert client.consents.users().links == {}
    assert "audit hook failed" in caplog.text


def test_a_customer_number_echoed_by_the_bank_is_not_recorded(bank, make_client):
    records = []
    client = make_client(bank.base_url, audit_hook=records.append)
    number = "13039319955"
    refusal = {
        "tppMessages": [
            {"category": "ERROR", "code": "CONFLICT", "text": f"A customer with customerNumber {number} exists."}
        ]
    }
    bank.add("POST", "/v1/sandbox/customers", Answer(409, refusal))

    with pytest.raises(errors.Xs2aError) as refused:
        client.sandbox.create_customer({"customerNumber": number, "customerType": "PRIVATE", "name": "Test"})

    (record,) = records
    assert record.tpp_message_texts == (f"A customer with customerNumber {REDACTED} exists.",)
    assert number not in repr(records)
    # The caller (the staff page) still gets the bank's own words.
    assert number in str(refused.value)
