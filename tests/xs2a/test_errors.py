"""One mapping function from an error response to the exception class a caller acts on."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.bankfake import Answer
from xs2a import errors
from xs2a.psu import PsuContext


def _body(code: str, path: str | None = None, text: str = "why", **extra) -> bytes:
    message = {"category": "ERROR", "code": code, "text": text}
    if path:
        message["path"] = path
    return json.dumps({"tppMessages": [message], **extra}).encode()


SCA = {"_links": {"scaRedirect": {"href": "https://bank.example/sca?s=1", "verbs": ["GET"]}}}


@pytest.mark.parametrize(
    ("status", "body", "method", "expected"),
    [
        (401, _body("CONSENT_EXPIRED", **SCA), "GET", errors.ScaRequiredError),
        (401, _body("CONSENT_INVALID"), "GET", errors.ConsentInvalidError),
        (401, _body("CONSENT_EXPIRED"), "GET", errors.ConsentExpiredError),
        (403, _body("CONSENT_UNKNOWN"), "GET", errors.ConsentUnknownError),
        (429, _body("ACCESS_EXCEEDED"), "GET", errors.AccessExceededError),
        (400, _body("FORMAT_ERROR", "creditorName"), "POST", errors.FormatError),
        (400, _body("HTTP_HEADER_REQUIRED", "PSU-Corporate-ID"), "GET", errors.FormatError),
        (400, _body("BAD_REQUEST", "Signature"), "GET", errors.SignatureRejectedError),
        (400, _body("HTTP_HEADER_REQUIRED", "Signature"), "GET", errors.SignatureRejectedError),
        (401, _body("CERTIFICATE_EXPIRED"), "GET", errors.SignatureRejectedError),
        (400, _body("BAD_REQUEST", "Digest"), "POST", errors.SignatureRejectedError),
        (404, _body("RESOURCE_UNKNOWN"), "GET", errors.ResourceUnknownError),
        (404, b"", "GET", errors.ResourceUnknownError),
        (400, _body("PRODUCT_UNKNOWN"), "POST", errors.ResourceUnknownError),
        (400, _body("PAYMENT_FAILED"), "POST", errors.PaymentFailedError),
        (409, _body("CONFLICT"), "DELETE", errors.ClientError),
        (500, _body("SYSTEM_ERROR"), "GET", errors.ServerError),
        (503, b"<html>down</html>", "POST", errors.ServerOutcomeUnknownError),
        (502, b"", "POST", errors.ServerOutcomeUnknownError),
        (500, _body("SYSTEM_ERROR"), "DELETE", errors.ServerOutcomeUnknownError),
        (500, _body("SYSTEM_ERROR"), "PUT", errors.ServerOutcomeUnknownError),
        (504, b"", "GET", errors.ServerError),
        (302, b"", "GET", errors.UnexpectedResponseError),
    ],
)
def test_error_from_response_maps_each_case(status, body, method, expected):
    error = errors.error_from_response(
        status=status, body=body, request_id="rid-1", method=method, endpoint="/v1/accounts"
    )
    assert type(error) is expected
    assert error.status == status and error.request_id == "rid-1" and error.endpoint == "/v1/accounts"
    assert "rid-1" in str(error)


def test_an_unknown_outcome_is_never_a_transport_error_and_a_5xx_one_is_both_server_and_unknown():
    """A handler of "nothing was sent" (TransportError) can never catch an unknown outcome by accident; a 5xx to a
    request that changes something is caught both as the bank's failure and as an unknown outcome."""
    assert not issubclass(errors.OutcomeUnknownError, errors.TransportError)
    assert not issubclass(errors.TransportError, errors.OutcomeUnknownError)
    assert issubclass(errors.ServerOutcomeUnknownError, errors.ServerError)
    assert issubclass(errors.ServerOutcomeUnknownError, errors.OutcomeUnknownError)
    assert not issubclass(errors.ServerOutcomeUnknownError, errors.TransportError)
    error = errors.error_from_response(
        status=500, body=_body("SYSTEM_ERROR", text="Teknisk feil"), request_id="rid-9", method="post"
    )
    assert isinstance(error, errors.ServerOutcomeUnknownError)
    assert error.codes == ("SYSTEM_ERROR",) and error.text == "Teknisk feil" and error.request_id == "rid-9"


def test_the_error_carries_messages_field_and_sca_redirect():
    error = errors.error_from_response(status=400, body=_body("FORMAT_ERROR", "creditorAccount.iban", "bad IBAN"))
    assert isinstance(error, errors.FormatError)
    assert error.field == "creditorAccount.iban"
    assert error.tpp_messages == (errors.TppMessage("ERROR", "FORMAT_ERROR", "creditorAccount.iban", "bad IBAN"),)
    assert error.code == "FORMAT_ERROR" and error.text == "bad IBAN"

    sca = errors.error_from_response(status=401, body=json.dumps(SCA).encode())
    assert isinstance(sca, errors.ScaRequiredError)
    assert sca.sca_redirect == "https://bank.example/sca?s=1"


def test_access_exceeded_reset_time_from_retry_after():
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    by_seconds = errors.error_from_response(status=429, body=b"", headers={"Retry-After": "120"}, now=now)
    assert by_seconds.retry_after == 120 and by_seconds.reset_at == datetime(2026, 3, 2, 9, 2, tzinfo=UTC)
    by_date = errors.error_from_response(
        status=429, body=b"", headers={"retry-after": "Mon, 02 Mar 2026 10:00:00 GMT"}, now=now
    )
    assert by_date.retry_after == 3600 and by_date.reset_at == datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    unknown = errors.error_from_response(status=429, body=b"", now=now)
    assert unknown.retry_after is None and unknown.reset_at is None


def test_operations_raise_the_mapped_error_with_the_request_id(bank, client):
    bank.add(
        "GET",
        "/v1/accounts",
        Answer(401, {"tppMessages": [{"category": "ERROR", "code": "CONSENT_EXPIRED"}], **SCA}),
    )
    with pytest.raises(errors.ScaRequiredError) as caught:
        client.accounts.list(psu=PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"))
    assert caught.value.sca_redirect == "https://bank.example/sca?s=1"
    assert caught.value.request_id == bank.received[0].headers["x-request-id"]
    assert caught.value.endpoint == "/v1/accounts" and caught.value.method == "GET"
