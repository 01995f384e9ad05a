"""The response size cap: an answer longer than ``ClientConfig.max_response_bytes`` is refused after at most the
cap (plus one read chunk), or at once when its Content-Length says so; it never fills the memory, and the
refusal is audited."""

from __future__ import annotations

import threading
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.bankfake import Answer
from xs2a import errors
from xs2a.client import DEFAULT_MAX_RESPONSE_BYTES, ClientConfig

CAP = 64 * 1024
TOTAL = 64 * 1024 * 1024  # what the streaming bank would send if it were let
CHUNK = 64 * 1024
READ_CHUNK = 64 * 1024  # the client's read size: it may overshoot the cap by at most this


class StreamingBank:
    """Answers every GET with ``TOTAL`` bytes, chunked (no Content-Length) or declared; counts what it wrote
    before the client went away."""

    def __init__(self, *, declare_length: bool) -> None:
        self.sent = 0
        self.done = threading.Event()
        bank = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response_only(200)
                self.send_header("Content-Type", "application/json")
                if declare_length:
                    self.send_header("Content-Length", str(TOTAL))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                data = b"[" + b"0," * (CHUNK // 2 - 1) + b"0"
                try:
                    while bank.sent < TOTAL:
                        if declare_length:
                            self.wfile.write(data)
                        else:
                            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        bank.sent += len(data)
                except OSError:  # the client closed the connection: the point of the test
                    pass
                finally:
                    self.close_connection = True
                    bank.done.set()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True

    def __enter__(self) -> StreamingBank:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def test_the_default_cap_is_ten_mebibytes(test_pki):
    config = ClientConfig(
        base_url="https://bank.example",
        signing_key=test_pki.tpp.key,
        signing_certificate=test_pki.tpp.certificate,
        redirect_uri="https://portal.example/bank/callback",
    )
    assert config.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 10 * 1024 * 1024
    with pytest.raises(ValueError, match="max_response_bytes"):
        ClientConfig(**{**config.__dict__, "max_response_bytes": 0})


def test_an_endless_answer_is_cut_at_the_cap_without_taking_the_memory(make_client):
    records = []
    with StreamingBank(declare_length=False) as bank:
        client = make_client(bank.base_url, audit_hook=records.append, max_response_bytes=CAP)
        tracemalloc.start()
        try:
            with pytest.raises(errors.ResponseTooLargeError) as caught:
                client.consents.users()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert bank.done.wait(10), "the bank noticed the client going away"

    error = caught.value
    assert isinstance(error, errors.UnexpectedResponseError) and isinstance(error, errors.Xs2aError)
    assert error.status == 200 and error.limit == CAP and error.declared is None
    assert CAP < error.received <= CAP + READ_CHUNK, "the read stopped just past the cap"
    assert peak < 4 * 1024 * 1024, f"{peak} bytes allocated at the peak for a {TOTAL}-byte answer"
    assert bank.sent < TOTAL // 2, "the bank was stopped early: the rest was never read"
    (record,) = records  # not retried, although a GET
    assert record.error == "ResponseTooLargeError" and record.status == 200
    assert record.bytes_received == error.received and record.will_retry is False
    assert error.request_id == record.request_id


def test_a_declared_content_length_over_the_cap_is_refused_before_reading(make_client):
    records = []
    with StreamingBank(declare_length=True) as bank:
        client = make_client(bank.base_url, audit_hook=records.append, max_response_bytes=CAP)
        with pytest.raises(errors.ResponseTooLargeError, match="longer than 65536 bytes") as caught:
            client.consents.users()
        assert bank.done.wait(10)
    assert caught.value.received == 0 and caught.value.declared == TOTAL
    assert bank.sent < TOTAL // 2
    (record,) = records
    assert record.bytes_received == 0 and record.error == "ResponseTooLargeError"


def test_an_answer_of_exactly_the_cap_is_read(bank, make_client):
    body = b'{"_links": {}}'
    bank.add("GET", "/v1/users", Answer(200, body))
    assert make_client(bank.base_url, max_response_bytes=len(body)).consents.users().links == {}
    with pytest.raises(errors.ResponseTooLargeError):
        make_client(bank.base_url, max_response_bytes=len(body) - 1).consents.users()
    assert len(bank.received) == 2
