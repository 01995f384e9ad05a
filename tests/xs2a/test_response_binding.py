"""Signed answers bound to their request: with the bank's seal configured, an answer is accepted only when its
signature covers Date, X-Request-ID and (with a body) Digest, its X-Request-ID is the request's, its Date is within
the window of the client's clock and its Digest matches the body.

The scripted bank signs with the seal's real key, on its own (``tests.xs2a.server.signed_answer``: cryptography
directly, in the bank's profile, ``date digest x-request-id`` and no request target), so a refusal is the client's
rule and not a broken signature.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from tests.bankfake import signed_answer
from xs2a import errors, signing

USERS = {"_links": {}}
CREATED = {"transactionStatus": "RCVD", "paymentId": "p-1", "_links": {}}
PAYMENT = {
    "instructedAmount": {"currency": "NOK", "amount": "1.00"},
    "creditorName": "Kari",
    "creditorAccount": {"bban": "12345678903"},
}


@pytest.fixture
def records():
    return []


@pytest.fixture
def sealed(bank, make_client, test_pki, records):
    """A client that verifies the bank's answers against its seal (the default window: 5 minutes)."""
    seal = test_pki.bank_seal.certificate
    return make_client(bank.base_url, audit_hook=records.append, response_certificate=seal)


def answering(bank, test_pki, method: str, path: str, body: dict | None, **signed) -> None:
    bank.add(method, path, lambda r: signed_answer(test_pki.bank_seal, r, body, **signed))


def test_an_answer_signed_for_this_request_now_is_accepted(bank, sealed, test_pki, records):
    answering(bank, test_pki, "GET", "/v1/users", USERS)
    assert sealed.consents.users().links == {}
    assert records[-1].error is None and records[-1].refusal_reason == ""


def test_an_answer_without_a_body_needs_no_digest(bank, sealed, test_pki):
    answering(bank, test_pki, "DELETE", "/v1/payments/domestic/p-1", None, status=204, digest=False)
    response = sealed.request("DELETE", "/v1/payments/domestic/p-1")
    assert response.status == 204


def test_an_answer_signed_three_days_earlier_for_another_request_is_refused(bank, sealed, test_pki, records):
    answering(bank, test_pki, "GET", "/v1/users", USERS, request_id=str(uuid.uuid4()), age=timedelta(days=3))
    with pytest.raises(errors.ResponseSignatureError, match="X-Request-ID") as refused:
        sealed.consents.users()
    assert not isinstance(refused.value, errors.OutcomeUnknownError)  # a read changed nothing
    assert records[-1].error == "ResponseSignatureError"
    assert "is not the request's" in records[-1].refusal_reason
    assert refused.value.reason == records[-1].refusal_reason


def test_an_old_answer_with_this_requests_id_is_refused_by_its_date(bank, sealed, test_pki, records):
    answering(bank, test_pki, "GET", "/v1/users", USERS, age=timedelta(days=3))
    with pytest.raises(errors.ResponseSignatureError, match="Date"):
        sealed.consents.users()
    assert "of the answer is 2592" in records[-1].refusal_reason  # three days and the fake clock's second or two
    assert "seconds old, outside the 300 seconds allowed" in records[-1].refusal_reason


def test_an_answer_with_another_requests_id_is_refused(bank, sealed, test_pki, records):
    other = str(uuid.uuid4())
    answering(bank, test_pki, "GET", "/v1/users", USERS, request_id=other)
    with pytest.raises(errors.ResponseSignatureError, match="X-Request-ID"):
        sealed.consents.users()
    assert other in records[-1].refusal_reason and records[-1].request_id in records[-1].refusal_reason


@pytest.mark.parametrize(
    ("age", "accepted"),
    [
        (timedelta(minutes=4), True),
        (timedelta(minutes=-4), True),  # a bank clock a little ahead
        (timedelta(minutes=6), False),
        (timedelta(minutes=-6), False),
    ],
)
def test_the_date_must_be_within_the_window_either_way(bank, sealed, test_pki, records, age, accepted):
    answering(bank, test_pki, "GET", "/v1/users", USERS, age=age)
    if accepted:
        assert sealed.consents.users().links == {}
        return
    with pytest.raises(errors.ResponseSignatureError, match="outside the 300 seconds allowed"):
        sealed.consents.users()
    assert ("old" if age > timedelta(0) else "ahead") in records[-1].refusal_reason


def test_the_window_is_the_configured_one(bank, make_client, test_pki):
    client = make_client(bank.base_url, response_certificate=test_pki.bank_seal.certificate, response_max_age=60.0)
    answering(bank, test_pki, "GET", "/v1/users", USERS, age=timedelta(minutes=2))
    with pytest.raises(errors.ResponseSignatureError, match="outside the 60 seconds allowed"):
        client.consents.users()


def test_an_answer_with_a_body_and_no_digest_is_refused(bank, sealed, test_pki, records):
    answering(bank, test_pki, "GET", "/v1/users", USERS, names=("date", "x-request-id"), digest=False)
    with pytest.raises(errors.ResponseSignatureError, match="no digest header"):
        sealed.consents.users()
    assert records[-1].error == "ResponseSignatureError"


def test_a_digest_the_signature_does_not_cover_is_refused(bank, sealed, test_pki):
    answering(bank, test_pki, "GET", "/v1/users", USERS, names=("date", "x-request-id"))
    with pytest.raises(errors.ResponseSignatureError, match="the digest header is not signed"):
        sealed.consents.users()


def test_a_signed_digest_of_another_body_is_refused(bank, sealed, test_pki):
    answering(bank, test_pki, "GET", "/v1/users", USERS, digest_of=b'{"_links": {"x": 1}}')
    with pytest.raises(errors.ResponseSignatureError, match="hash does not match the body"):
        sealed.consents.users()


@pytest.mark.parametrize("left_out", ["date", "x-request-id"])
def test_a_signature_that_leaves_out_date_or_request_id_is_refused(bank, sealed, test_pki, left_out):
    names = [name for name in ("date", "digest", "x-request-id") if name != left_out]
    answering(bank, test_pki, "GET", "/v1/users", USERS, names=names)
    with pytest.raises(errors.ResponseSignatureError, match=f"the {left_out} header is not signed"):
        sealed.consents.users()


def test_a_refused_answer_to_a_payment_is_an_unknown_outcome(bank, sealed, test_pki, records):
    """The bank had the request: a refused answer to a POST says nothing of whether it was processed."""
    answering(bank, test_pki, "POST", "/v1/payments/domestic", CREATED, status=201, request_id=str(uuid.uuid4()))
    with pytest.raises(errors.OutcomeUnknownError) as refused:
        sealed.request("POST", "/v1/payments/domestic", json_body=PAYMENT)
    assert isinstance(refused.value, errors.ResponseSignatureOutcomeUnknownError)
    assert isinstance(refused.value, errors.ResponseSignatureError)
    assert not isinstance(refused.value, errors.TransportError)
    assert refused.value.request_id == records[-1].request_id and refused.value.status == 201
    assert "reconcile with X-Request-ID" in str(refused.value)
    assert len(bank.received) == 1, "never sent again by the client"
    assert records[-1].error == "ResponseSignatureOutcomeUnknownError" and records[-1].refusal_reason


def test_without_the_seal_configured_nothing_is_checked(bank, make_client, test_pki):
    client = make_client(bank.base_url)
    answering(bank, test_pki, "GET", "/v1/users", USERS, request_id="another", age=timedelta(days=3))
    assert client.consents.users().links == {}


def test_the_window_must_be_a_positive_number_of_seconds(test_pki, make_client):
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(errors.ConfigurationError, match="response_max_age"):
            make_client("https://bank.example", response_max_age=bad)


def test_verify_response_needs_an_aware_clock(test_pki):
    from datetime import datetime

    with pytest.raises(ValueError, match="timezone-aware"):
        signing.verify_response(
            'keyId="x",signature="AAAA"',
            headers={},
            body=b"",
            certificate=test_pki.bank_seal.certificate,
            request_id="r",
            now=datetime(2026, 3, 2, 9, 0),  # noqa: DTZ001 - the naive value refused
            max_age=300,
        )
