"""The portal's bank client with the bank's seal (BANK_RESPONSE_CERT): an answer not signed for its request, now,
is refused, kept in the audit log with its reason, and shown to staff as not accepted; a POST's refused answer is
an unknown outcome. The scripted bank signs with the seal's real key (tests.xs2a.server.signed_answer)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.urls import reverse

from core import bank as portal_bank
from core.models import BankCall
from devtools import pki
from tests.bankfake import Answer, signed_answer
from xs2a import errors

PAYMENT = {
    "instructedAmount": {"currency": "NOK", "amount": "1.00"},
    "creditorName": "Kari",
    "creditorAccount": {"bban": "12345678903"},
}
CREATED = {"transactionStatus": "RCVD", "paymentId": "p-1", "_links": {}}


@pytest.fixture
def seal(own_seal_bank_settings, settings, tmp_path, fake_bank):
    fake_bank.seal = None  # each answer here is signed by the test itself, or not at all
    issued = pki.issue_qseal(pki.issue_ca(), pki.BANK_NAME, roles=())
    (tmp_path / "bank-seal.pem").write_bytes(issued.cert_pem())
    settings.BANK_RESPONSE_CERT = tmp_path / "bank-seal.pem"
    return issued


@pytest.mark.django_db
def test_a_replayed_answer_to_a_payment_is_audited_with_its_reason_and_an_unknown_outcome(seal, fake_bank, alice):
    replayed = str(uuid.uuid4())
    fake_bank.add(
        "POST",
        "/v1/payments/domestic",
        lambda r: signed_answer(seal, r, CREATED, status=201, request_id=replayed, age=timedelta(days=3)),
    )
    client = portal_bank.build_bank_client()
    with portal_bank.bank_audit_context(user=alice, obj=alice), pytest.raises(errors.OutcomeUnknownError) as lost:
        client.request("POST", "/v1/payments/domestic", json_body=PAYMENT)
    client.close()

    (sent,) = fake_bank.received
    assert lost.value.request_id == sent.headers["x-request-id"]
    call = BankCall.objects.get()
    assert call.status == 201 and call.user == alice
    assert call.error == "ResponseSignatureOutcomeUnknownError"
    assert f"X-Request-ID '{replayed}' of the answer is not the request's" in call.refusal_reason


@pytest.mark.django_db
def test_the_window_is_bank_response_max_age(seal, fake_bank, settings):
    settings.BANK_RESPONSE_MAX_AGE = 60.0
    fake_bank.add(
        "GET",
        "/v1/users",
        lambda r: signed_answer(seal, r, {"_links": {}}, age=timedelta(minutes=2)),
        lambda r: signed_answer(seal, r, {"_links": {}}, age=timedelta(seconds=30)),
    )
    client = portal_bank.build_bank_client()
    with pytest.raises(errors.ResponseSignatureError) as refused:
        client.consents.users()
    assert not isinstance(refused.value, errors.OutcomeUnknownError)
    assert client.consents.users().links == {}
    client.close()

    refused_call, accepted = BankCall.objects.order_by("started_at", "id")
    assert "outside the 60 seconds allowed" in refused_call.refusal_reason
    assert refused_call.error == "ResponseSignatureError"
    assert accepted.error == "" and accepted.refusal_reason == ""


@pytest.mark.django_db
def test_refused_answers_are_listed_as_not_accepted_in_the_audit_log(seal, fake_bank, operator_client):
    fake_bank.add(
        "GET",
        "/v1/accounts",
        # An unsigned refusal is not believed either: a 404 that is the client's refusal, not the bank's.
        Answer(404, {"tppMessages": [{"category": "ERROR", "code": "NOT_FOUND"}]}),
    )
    fake_bank.add("GET", "/v1/users", lambda r: signed_answer(seal, r, {"_links": {}}))
    client = portal_bank.build_bank_client()
    with pytest.raises(errors.ResponseSignatureError, match="no Signature"):
        client.request("GET", "/v1/accounts")
    client.consents.users()
    client.close()

    refused = BankCall.objects.get(path_template="/v1/accounts")
    assert refused.refusal_reason == "the answer carries no Signature header"
    page = operator_client.get(reverse("admin:tpp_portal_bankcall_changelist"), {"status_class": "rejected"})
    assert page.status_code == 200
    listed = list(page.context["cl"].result_list)
    assert listed == [refused]
    assert '404, not accepted (<span translate="no">ResponseSignatureError</span>)' in page.content.decode()
