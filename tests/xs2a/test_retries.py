"""Retries only where safe: GET on connection errors, 429/502/503/504; a payment POST is sent exactly once."""

from __future__ import annotations

import socket
from decimal import Decimal

import pytest

from devtools.pki import CountingKey
from tests.bankfake import Answer, check_signature
from xs2a import errors, models
from xs2a.client import RetryPolicy
from xs2a.psu import PsuContext

PSU = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1", ip_address="198.51.100.7")
BUSY = Answer(503, {"tppMessages": [{"category": "ERROR", "code": "SYSTEM_ERROR", "text": "busy"}]})
OK = Answer(200, {"_links": {"scaRedirect": {"href": "https://bank.example/sca"}}})


def _payment() -> models.PaymentInitiation:
    return models.PaymentInitiation(
        instructed_amount=models.Amount(Decimal("100000.00"), "NOK"),
        creditor_name="Nordlys Handel AB",
        creditor_account=models.AccountReference(iban="SE4550000000058398257466", currency="SEK"),
        debtor_account=models.AccountReference(bban="12345678903", currency="NOK"),
    )


def test_get_is_retried_on_503_and_re_signed_each_time(bank, make_client, sleeps, test_pki):
    key = CountingKey(test_pki.tpp.key)
    client = make_client(bank.base_url, signing_key=key, rng=lambda: 0.5)
    bank.add("GET", "/v1/users", BUSY, BUSY, OK)

    assert client.consents.users().sca_redirect == "https://bank.example/sca"

    assert len(bank.received) == 3
    assert len({r.headers["x-request-id"] for r in bank.received}) == 1, "the same X-Request-ID on each attempt"
    assert len({r.headers["date"] for r in bank.received}) == 3, "a new Date on each attempt"
    assert len({r.headers["signature"] for r in bank.received}) == 3
    for received in bank.received:
        check_signature(received, test_pki.tpp.certificate)
    assert key.signatures == 3, "one RSA signature per attempt"
    policy = RetryPolicy()
    assert sleeps == [0.5 * policy.backoff_base, 0.5 * policy.backoff_base * 2], "exponential, with jitter"


def test_429_retry_after_is_honoured(bank, client, sleeps):
    bank.add(
        "GET",
        "/v1/users",
        Answer(429, {"tppMessages": [{"category": "ERROR", "code": "ACCESS_EXCEEDED"}]}, {"Retry-After": "7"}),
        OK,
    )
    client.consents.users()
    assert sleeps == [7.0]
    assert len(bank.received) == 2


def test_a_retry_after_too_long_is_given_to_the_caller(bank, client, sleeps):
    bank.add(
        "GET",
        "/v1/users",
        Answer(429, {"tppMessages": [{"category": "ERROR", "code": "ACCESS_EXCEEDED"}]}, {"Retry-After": "3600"}),
    )
    with pytest.raises(errors.AccessExceededError) as caught:
        client.consents.users()
    assert caught.value.retry_after == 3600.0
    assert caught.value.reset_at is not None
    assert sleeps == [] and len(bank.received) == 1


def test_retries_are_bounded(bank, client, sleeps):
    bank.add("GET", "/v1/users", BUSY)
    with pytest.raises(errors.ServerError) as caught:
        client.consents.users()
    assert len(bank.received) == RetryPolicy().max_attempts == 3
    assert len(sleeps) == 2
    assert all(0 <= s <= RetryPolicy().backoff_max for s in sleeps)
    assert caught.value.request_id == bank.received[0].headers["x-request-id"]


def test_4xx_is_never_retried(bank, client, sleeps):
    bank.add(
        "GET",
        "/v1/users",
        Answer(400, {"tppMessages": [{"category": "ERROR", "code": "FORMAT_ERROR", "path": "PSU-ID"}]}),
        OK,
    )
    with pytest.raises(errors.FormatError):
        client.consents.users()
    assert len(bank.received) == 1 and sleeps == []


def test_a_payment_post_is_never_retried_on_503(bank, client, sleeps):
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", BUSY, Answer(201, {}))
    with pytest.raises(errors.ServerError):
        client.payments.initiate(_payment(), psu=PSU)
    assert len(bank.received) == 1 and sleeps == []


def test_a_payment_post_that_times_out_has_an_unknown_outcome(bank, make_client, sleeps):
    client = make_client(bank.base_url, timeout=(2.0, 0.3))
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", Answer(201, {}, delay=1.0))
    with pytest.raises(errors.OutcomeUnknownError) as caught:
        client.payments.initiate(_payment(), psu=PSU, request_id="1b9e5f0c-6e8a-4c1e-a0e7-3f1c2d9a8b7c")
    assert caught.value.request_id == "1b9e5f0c-6e8a-4c1e-a0e7-3f1c2d9a8b7c"
    assert caught.value.status is None
    assert len(bank.received) == 1, "sent exactly once"
    assert bank.received[0].headers["x-request-id"] == caught.value.request_id
    assert sleeps == []


def test_a_payment_post_whose_connection_drops_has_an_unknown_outcome(bank, client):
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", Answer(drop=True))
    with pytest.raises(errors.OutcomeUnknownError):
        client.payments.initiate(_payment(), psu=PSU)
    assert len(bank.received) == 1


def test_a_gateway_timeout_on_a_payment_post_is_an_unknown_outcome(bank, client):
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", Answer(504, b""))
    with pytest.raises(errors.OutcomeUnknownError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    assert caught.value.status == 504


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_a_transport_error_and_a_get_is_retried(make_client, sleeps):
    client = make_client(f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(errors.TransportError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    assert not isinstance(caught.value, errors.OutcomeUnknownError), "never sent, so the outcome is known"
    assert sleeps == []
    with pytest.raises(errors.TransportError):
        client.consents.users()
    assert len(sleeps) == 2


def test_a_get_timeout_is_retried_then_reported(bank, make_client, sleeps):
    client = make_client(bank.base_url, timeout=(2.0, 0.2))
    bank.add("GET", "/v1/users", Answer(200, {}, delay=0.6))
    with pytest.raises(errors.TransportError) as caught:
        client.consents.users()
    assert not isinstance(caught.value, errors.OutcomeUnknownError)
    assert len(bank.received) == 3 and len(sleeps) == 2


def test_a_retry_is_signed_in_a_later_second_so_the_bank_never_sees_one_signature_twice(bank, test_pki):
    """Date counts whole seconds and the bank refuses a Signature it has seen: a retry whose backoff is shorter
    than the rest of the second waits into the next one."""
    from datetime import UTC, datetime, timedelta

    from xs2a.client import ClientConfig, Xs2aClient

    moment = [datetime(2026, 3, 2, 9, 0, 0, 200_000, tzinfo=UTC)]  # moves only when the client sleeps
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        moment[0] += timedelta(seconds=seconds)

    config = ClientConfig(
        base_url=bank.base_url,
        signing_key=test_pki.tpp.key,
        signing_certificate=test_pki.tpp.certificate,
        redirect_uri="https://portal.example/bank/callback",
    )
    bank.add("GET", "/v1/users", BUSY, OK)
    with Xs2aClient(config, clock=lambda: moment[0], sleep=sleep, rng=lambda: 0.0) as client:
        client.consents.users()

    assert slept == [pytest.approx(0.8)]
    dates = [r.headers["date"] for r in bank.received]
    assert len(dates) == 2 and dates[0] != dates[1]
    assert len({r.headers["signature"] for r in bank.received}) == 2
