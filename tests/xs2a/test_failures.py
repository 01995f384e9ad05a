"""Every failure of the client is an ``Xs2aError``: a malformed answer, a link it will not follow, a broken
connection, a bad header value from the bank, or an argument it refuses before sending; never a bare
ValueError, TypeError, RecursionError or a requests exception."""

from __future__ import annotations

import socket
import threading
from decimal import Decimal

import pytest

from tests.bankfake import Answer
from xs2a import errors, models
from xs2a.client import ClientConfig, RetryPolicy
from xs2a.links import BaseUrl
from xs2a.psu import PsuContext
from xs2a.signing import SignatureVerificationError, verify_signature

PSU = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1", ip_address="198.51.100.7")
TRANSACTIONS = "/v1/accounts/a/transactions"


def _payment() -> models.PaymentInitiation:
    return models.PaymentInitiation(
        instructed_amount=models.Amount(Decimal("100000.00"), "NOK"),
        creditor_name="Nordlys Handel AB",
        creditor_account=models.AccountReference(iban="SE4550000000058398257466", currency="SEK"),
        debtor_account=models.AccountReference(bban="12345678903", currency="NOK"),
    )


# --- links ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "link",
    [
        {"href": "https://evil.example/v1/accounts/a/transactions?offset=2"},
        {"href": 42},
        {"href": "   "},
        {"href": "/v1/accounts/a/transactions?offset=2\x00"},
        {"href": "v1/accounts/a/transactions?offset=2"},  # neither absolute nor below the base address
    ],
)
def test_a_next_link_the_client_will_not_follow_is_a_link_error(bank, client, link):
    page = {"transactions": {"booked": [], "_links": {"next": link}}}
    bank.add("GET", TRANSACTIONS, Answer(200, page))
    with pytest.raises(errors.LinkError) as caught:
        client.accounts.transactions("a", psu=PSU)
    assert isinstance(caught.value, errors.UnexpectedResponseError)
    assert len(bank.received) == 1, "nothing sent after the bad link"


@pytest.mark.parametrize("links", ["next", {"next": ["not", "a", "link"]}, {"next": {"verbs": ["GET"]}}])
def test_links_that_are_not_links_are_an_unexpected_answer(bank, client, links):
    bank.add("GET", TRANSACTIONS, Answer(200, {"transactions": {"booked": [], "_links": links}}))
    with pytest.raises(errors.UnexpectedResponseError, match="_links"):
        client.accounts.transactions("a", psu=PSU)
    assert len(bank.received) == 1


def test_a_stored_link_to_another_host_is_refused_before_sending(bank, client):
    with pytest.raises(errors.LinkError, match="does not point at the bank"):
        client.payments.status(href="https://evil.example/v1/payments/x/status")
    with pytest.raises(errors.LinkError):
        BaseUrl(bank.base_url).resolve(None)  # type: ignore[arg-type]
    assert bank.received == []


# --- malformed answers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"{",  # truncated JSON
        b"\xff\xfe{}",  # not UTF-8
        b"[" * 100_000 + b"]" * 100_000,  # nested deeper than the parser's recursion
        b'{"_links": {}, "x": NaN}',  # NaN and Infinity are not JSON
        b'{"_links": {}, "x": ' + b"1" * 5000 + b"}",  # an integer longer than Python reads
    ],
    ids=["truncated", "not-utf8", "too-deep", "nan", "huge-int"],
)
@pytest.mark.parametrize("status", [200, 400])
def test_a_malformed_answer_is_an_xs2a_error(bank, make_client, body, status):
    records = []
    client = make_client(bank.base_url, audit_hook=records.append)
    bank.add("GET", "/v1/users", Answer(status, body))
    with pytest.raises(errors.Xs2aError) as caught:
        client.consents.users()
    expected = errors.UnexpectedResponseError if status == 200 else errors.ClientError
    assert isinstance(caught.value, expected)
    (record,) = records  # audited, with no tppMessages read from the broken body
    assert record.status == status and record.tpp_message_codes == ()


# --- broken HTTP from the bank -------------------------------------------------------------------------------


class RawBank:
    """Answers every connection with fixed raw bytes (whatever the request), then closes it."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.connections = 0
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.socket.accept()
            except OSError:
                return
            with conn:
                self.connections += 1
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(self.raw)
                except OSError:
                    pass

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def close(self) -> None:
        self.socket.close()


BROKEN = {
    "status-line": b"HTTP/1.1 abc OK\r\n\r\n",
    "not-http": b"hello\r\n\r\n",
    "too-many-headers": b"HTTP/1.1 200 OK\r\n"
    + b"".join(b"X-%d: a\r\n" % i for i in range(200))
    + b"Content-Length: 2\r\n\r\n{}",
    "truncated-body": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}",
    "bad-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    # Well framed, so it says that the bank closes the connection (as RawBank does): the pool must not hand the
    # closed connection to the next request, whose failure would then depend on how soon the close is seen.
    "bad-gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
}


@pytest.mark.parametrize("raw", BROKEN.values(), ids=BROKEN.keys())
def test_broken_http_is_a_transport_error_and_a_payment_outcome_unknown(make_client, raw):
    bank = RawBank(raw)
    try:
        records = []
        client = make_client(bank.base_url, audit_hook=records.append, retry=RetryPolicy(max_attempts=2))
        with pytest.raises(errors.TransportError) as read:
            client.consents.users()
        assert not isinstance(read.value, errors.OutcomeUnknownError)
        with pytest.raises(errors.OutcomeUnknownError) as sent:
            client.payments.initiate(_payment(), psu=PSU)
        assert sent.value.request_id
        assert [r.status for r in records] == [None, None, None], "each attempt audited, no status read"
        assert bank.connections == 3, "the GET tried twice, the payment once"
    finally:
        bank.close()


# --- bad header values from the bank ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["soon", "-1", "99999999999999999999", "Mon, 99 Foo 2026 10:00:00 GMT", "²"])
def test_an_unreadable_retry_after_is_ignored(bank, client, sleeps, value):
    refusal = {"tppMessages": [{"category": "ERROR", "code": "ACCESS_EXCEEDED"}]}
    bank.add("GET", "/v1/users", Answer(429, refusal, {"Retry-After": value}))
    with pytest.raises(errors.AccessExceededError) as caught:
        client.consents.users()
    assert caught.value.retry_after is None and caught.value.reset_at is None
    assert len(sleeps) == 2, "retried with the client's own backoff instead"


@pytest.mark.parametrize(
    "signature",
    [
        "garbage",
        'keyId="x",signature="not base64!"',
        "=?utf-8?B?not base64?=",
        "=?koi8-r?B?AAAA?=",
        'keyId="SN=1,CA=CN=x",algorithm="hmac-sha256",signature="AAAA"',
    ],
)
def test_a_malformed_response_signature_is_a_response_signature_error(bank, make_client, test_pki, signature):
    records = []
    client = make_client(
        bank.base_url, audit_hook=records.append, response_certificate=test_pki.bank_seal.certificate
    )
    bank.add("GET", "/v1/users", Answer(200, {"_links": {}}, {"Signature": signature}))
    with pytest.raises(errors.ResponseSignatureError):
        client.consents.users()
    assert records[-1].error == "ResponseSignatureError"


def test_a_header_value_no_signing_string_can_hold_fails_verification_cleanly(test_pki):
    with pytest.raises(SignatureVerificationError):
        verify_signature(
            'keyId="x",signature="AAAA"',
            headers={"Date": "a\r\nb"},
            body=b"",
            certificate=test_pki.bank_seal.certificate,
        )


# --- arguments refused before sending --------------------------------------------------------------------------


def test_arguments_refused_before_sending_are_invalid_request_errors(bank, client):
    cases = [
        lambda: client.request("POST", "/v1/sandbox/customers", json_body={"amount": 1.5}),
        lambda: client.request("POST", "/v1/sandbox/customers", json_body={"amount": Decimal("NaN")}),
        lambda: client.request("POST", "/v1/sandbox/customers", json_body={"when": object()}),
        lambda: client.request("GET", "/v1/users", href="/v1/users"),
        lambda: client.request("GET", "v1/users"),
        lambda: client.accounts.balances("", psu=PSU),
        lambda: client.accounts.transactions("a", psu=PSU, booking_status="everything"),
        lambda: client.payments.initiate(_payment(), psu=PsuContext(psu_id=PSU.psu_id)),
        lambda: client.request("GET", "/v1/users", headers={"X-Note": "two\r\nlines"}),
        lambda: PsuContext(psu_id="not-a-uuid"),
        lambda: PsuContext(psu_id=42),  # type: ignore[arg-type]
    ]
    for case in cases:
        with pytest.raises(errors.InvalidRequestError) as caught:
            case()
        assert isinstance(caught.value, ValueError), "callers that check input with ValueError still catch it"
    assert bank.received == []


def test_a_configuration_the_client_cannot_use_is_a_configuration_error(test_pki, tmp_path):
    good = {
        "base_url": "https://bank.example",
        "signing_key": test_pki.tpp.key,
        "signing_certificate": test_pki.tpp.certificate,
        "redirect_uri": "https://portal.example/bank/callback",
    }
    from xs2a.client import Xs2aClient

    for change in (
        {"timeout": 0},
        {"redirect_uri": "portal"},
        {"accept_fix": ("a,b",)},
        {"max_response_bytes": -1},
    ):
        with pytest.raises(errors.ConfigurationError):
            ClientConfig(**{**good, **change})
    with pytest.raises(errors.ConfigurationError):
        RetryPolicy(max_attempts=0)
    for change in (
        {"base_url": "bank.example"},
        {"signing_key": test_pki.bank_seal.key},
        {"digest_algorithm": "MD5"},
        {"ca_bundle": str(tmp_path / "missing.pem")},
        {"tls_client_cert": str(tmp_path / "missing.pem")},
    ):
        with pytest.raises(errors.ConfigurationError):
            Xs2aClient(ClientConfig(**{**good, **change}))
