"""Unknown outcome or not sent, against real sockets on 127.0.0.1 (docs/bank-interface.md, "Unknown outcome or
not sent").

A failure after the request may have reached the bank is an OutcomeUnknownError for a request that changes
something (POST, DELETE), whatever broke: a reset, a close, a TLS alert or a broken record, a read timeout, a 5xx.
Only a failure that proves nothing left is a TransportError: a name that does not resolve, a refused connection,
a TLS handshake that fails, a connect timeout. Each test checks the class the client raised and, as the server
saw it, whether the request reached it. A GET that failed after it was sent is a TransportError (a read changes
nothing) and is asked again.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
import requests

from devtools import pki
from tests.bankfake import Answer
from tests.xs2a.server import LocalBank
from xs2a import errors, models
from xs2a.client import ClientConfig, Xs2aClient
from xs2a.psu import PsuContext
from xs2a.transport import mark_not_sent

PSU = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1", ip_address="198.51.100.7")
PAYMENTS = "/v1/payments/norwegian-cross-border-credit-transfers"
PAYMENT = PAYMENTS + "/enc!!Z78gcpH6="
REQUEST_ID = "1b9e5f0c-6e8a-4c1e-a0e7-3f1c2d9a8b7c"


def _payment() -> models.PaymentInitiation:
    return models.PaymentInitiation(
        instructed_amount=models.Amount(Decimal("100000.00"), "NOK"),
        creditor_name="Nordlys Handel AB",
        creditor_account=models.AccountReference(iban="SE4550000000058398257466", currency="SEK"),
        debtor_account=models.AccountReference(bban="12345678903", currency="NOK"),
    )


# --- a server that misbehaves on purpose -------------------------------------------------------------------------


@dataclass
class Seen:
    """One connection as the server saw it."""

    handshake: bool | None = None  # TLS only: whether the handshake completed on the server's side
    raw: bytes = b""  # what arrived before the request was read (plain TCP servers only: the ClientHello)
    request: bytes = b""  # the request as read (headers and body), decrypted for TLS
    complete: bool = False  # the whole body (Content-Length) was read


def _read_request(conn: socket.socket, seen: Seen) -> None:
    """Read one HTTP request: headers to the blank line, then Content-Length bytes of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            seen.request = data
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    seen.request = head + b"\r\n\r\n" + body
    seen.complete = len(body) == length


def _header(seen: Seen, name: str) -> str | None:
    for line in seen.request.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name.lower().encode():
            return value.strip().decode()
    return None


Behaviour = Callable[[socket.socket, Seen], None]


class SocketBank:
    """A TCP server on 127.0.0.1, TLS on top when given a context, that handles every connection with
    ``behaviour`` in a thread of its own and records what it saw (``seen``, one per connection)."""

    def __init__(self, behaviour: Behaviour, *, tls: ssl.SSLContext | None = None) -> None:
        self.behaviour = behaviour
        self.tls = tls
        self.seen: list[Seen] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}"

    @property
    def requests(self) -> list[Seen]:
        """The connections on which an HTTP request arrived."""
        return [s for s in self.seen if s.request]

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            seen = Seen()
            self.seen.append(seen)
            thread = threading.Thread(target=self._serve, args=(conn, seen), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, seen: Seen) -> None:
        conn.settimeout(5)
        try:
            if self.tls is not None:
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError):
                    seen.handshake = False
                    return
                seen.handshake = True
            self.behaviour(conn, seen)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.listener.close()
        for thread in self.threads:
            thread.join(timeout=10)


@pytest.fixture
def serve(test_pki) -> Iterator[Callable[..., SocketBank]]:
    made: list[SocketBank] = []

    def make(behaviour: Behaviour, *, tls: bool = False, context: ssl.SSLContext | None = None) -> SocketBank:
        bank = SocketBank(behaviour, tls=context or (test_pki.server_context() if tls else None))
        made.append(bank)
        return bank

    yield make
    for bank in made:
        bank.close()


@pytest.fixture
def connect(make_client, test_pki):
    """A client of ``bank`` that trusts the test CA (for TLS)."""

    def make(base_url: str, **overrides):
        return make_client(base_url, ca_bundle=str(test_pki.ca_file), **overrides)

    return make


# --- what the server does after reading the whole request --------------------------------------------------------


def reset(conn: socket.socket, seen: Seen) -> None:
    """Read the whole request, then reset the connection (SO_LINGER 0: RST, no FIN)."""
    _read_request(conn, seen)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def close(conn: socket.socket, seen: Seen) -> None:
    """Read the whole request, then close cleanly without answering (TLS: close_notify first)."""
    _read_request(conn, seen)
    if isinstance(conn, ssl.SSLSocket):
        conn.settimeout(1)
        try:
            conn.unwrap()
        except (ssl.SSLError, OSError):
            pass
    else:
        conn.shutdown(socket.SHUT_RDWR)


def silence(conn: socket.socket, seen: Seen) -> None:
    """Read the whole request and never answer: wait until the client gives up."""
    _read_request(conn, seen)
    conn.settimeout(10)
    while conn.recv(1024):
        pass


def _raw_write(conn: socket.socket, data: bytes) -> None:
    """Write ``data`` on the TCP connection under the TLS session, as a record the session never made."""
    with socket.socket(fileno=os.dup(conn.fileno())) as raw:
        raw.sendall(data)
    time.sleep(0.3)  # let the client read it before the connection closes


def corrupt_record(conn: socket.socket, seen: Seen) -> None:
    """Read the whole request, then send an application-data record that does not decrypt."""
    _read_request(conn, seen)
    _raw_write(conn, b"\x17\x03\x03\x00\x40" + os.urandom(64))


def fatal_alert(conn: socket.socket, seen: Seen) -> None:
    """Read the whole request, then send a fatal alert record (internal_error)."""
    _read_request(conn, seen)
    _raw_write(conn, b"\x15\x03\x03\x00\x02\x02\x50")


AFTER_SENDING = {
    "reset": (reset, False),
    "close": (close, False),
    "reset-tls": (reset, True),
    "close-tls": (close, True),
    "corrupt-record-tls": (corrupt_record, True),
    "fatal-alert-tls": (fatal_alert, True),
}


@pytest.mark.parametrize("behaviour, tls", AFTER_SENDING.values(), ids=AFTER_SENDING.keys())
def test_a_post_broken_after_the_bank_read_it_is_an_unknown_outcome(serve, connect, behaviour, tls):
    bank = serve(behaviour, tls=tls)
    client = connect(bank.base_url)
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(_payment(), psu=PSU, request_id=REQUEST_ID)
    assert isinstance(caught.value, errors.OutcomeUnknownError), repr(caught.value)
    assert not isinstance(caught.value, errors.TransportError)
    assert caught.value.request_id == REQUEST_ID and caught.value.status is None
    (seen,) = bank.seen  # sent once, never again
    assert seen.complete and seen.request.startswith(b"POST " + PAYMENTS.encode()), (
        "the bank had the whole request"
    )
    assert _header(seen, "X-Request-ID") == REQUEST_ID


@pytest.mark.parametrize("behaviour, tls", AFTER_SENDING.values(), ids=AFTER_SENDING.keys())
def test_a_delete_broken_after_the_bank_read_it_is_an_unknown_outcome(serve, connect, behaviour, tls):
    bank = serve(behaviour, tls=tls)
    client = connect(bank.base_url)
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.delete(payment_id="enc!!Z78gcpH6=", psu=PSU)
    assert isinstance(caught.value, errors.OutcomeUnknownError), repr(caught.value)
    (seen,) = bank.seen
    assert seen.complete and seen.request.startswith(b"DELETE " + PAYMENT.encode())
    assert _header(seen, "X-Request-ID") == caught.value.request_id


@pytest.mark.parametrize("behaviour, tls", AFTER_SENDING.values(), ids=AFTER_SENDING.keys())
def test_a_get_broken_after_sending_is_a_transport_error_and_is_asked_again(
    serve, connect, sleeps, behaviour, tls
):
    """A read changes nothing: its lost answer is no unknown outcome; the client asks again (same X-Request-ID)."""
    bank = serve(behaviour, tls=tls)
    client = connect(bank.base_url)
    with pytest.raises(errors.Xs2aError) as caught:
        client.consents.users()
    assert type(caught.value) is errors.TransportError, repr(caught.value)
    assert "after it was sent" in caught.value.message
    assert len(bank.requests) == 3 and len(sleeps) == 2, "three attempts, each reached the server"
    assert {_header(s, "X-Request-ID") for s in bank.requests} == {caught.value.request_id}


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_a_post_whose_answer_times_out_is_an_unknown_outcome(serve, connect, tls):
    bank = serve(silence, tls=tls)
    client = connect(bank.base_url, timeout=(2.0, 0.3))
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(_payment(), psu=PSU, request_id=REQUEST_ID)
    assert isinstance(caught.value, errors.OutcomeUnknownError), repr(caught.value)
    assert "timed out" in caught.value.message
    (seen,) = bank.seen
    assert seen.complete and _header(seen, "X-Request-ID") == REQUEST_ID


def test_a_payment_initiation_reset_after_its_body_was_read_carries_the_request_id_sent(serve, connect):
    """At the level of the payment service: the X-Request-ID on the error is the one the bank received, to
    reconcile with; the body arrived whole."""
    bank = serve(reset)
    client = connect(bank.base_url)
    with pytest.raises(errors.OutcomeUnknownError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    (seen,) = bank.seen
    assert seen.complete and b'"creditorName":"Nordlys Handel AB"' in seen.request
    assert caught.value.request_id == _header(seen, "X-Request-ID")
    assert caught.value.request_id in str(caught.value)


# --- 5xx ---------------------------------------------------------------------------------------------------------

FAILED = {"tppMessages": [{"category": "ERROR", "code": "SYSTEM_ERROR", "text": "Teknisk feil"}]}


@pytest.mark.parametrize("status", [500, 503])
@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_a_5xx_to_a_post_or_a_delete_is_an_unknown_outcome_with_the_banks_messages(
    test_pki, connect, sleeps, status, tls
):
    with LocalBank(ssl_context=test_pki.server_context() if tls else None) as bank:
        bank.add("POST", PAYMENTS, Answer(status, FAILED))
        bank.add("DELETE", PAYMENT, Answer(status, FAILED))
        client = connect(bank.base_url)
        with pytest.raises(errors.OutcomeUnknownError) as posted:
            client.payments.initiate(_payment(), psu=PSU, request_id=REQUEST_ID)
        with pytest.raises(errors.OutcomeUnknownError) as deleted:
            client.payments.delete(payment_id="enc!!Z78gcpH6=", psu=PSU)
        for caught, received in zip((posted, deleted), bank.received, strict=True):
            error = caught.value
            assert isinstance(error, errors.ServerError) and isinstance(error, errors.ServerOutcomeUnknownError)
            assert error.status == status and error.codes == ("SYSTEM_ERROR",) and error.text == "Teknisk feil"
            assert error.request_id == received.headers["x-request-id"]
        assert posted.value.request_id == REQUEST_ID
        assert [r.method for r in bank.received] == ["POST", "DELETE"], "each sent once"
        assert sleeps == []


def test_a_5xx_to_a_get_stays_a_server_error_and_is_retried(bank, client, sleeps):
    bank.add("GET", "/v1/users", Answer(503, FAILED))
    with pytest.raises(errors.ServerError) as caught:
        client.consents.users()
    assert not isinstance(caught.value, errors.OutcomeUnknownError)
    assert len(bank.received) == 3 and len(sleeps) == 2


# --- failures that prove nothing left ----------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _not_sent(caught: pytest.ExceptionInfo[errors.Xs2aError]) -> None:
    assert type(caught.value) is errors.TransportError, repr(caught.value)
    assert "not sent" in caught.value.message


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_refused_connection_is_not_sent(connect, sleeps, scheme):
    port = _closed_port()
    client = connect(f"{scheme}://127.0.0.1:{port}")
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    _not_sent(caught)
    with pytest.raises(errors.Xs2aError) as deleted:
        client.payments.delete(payment_id="enc!!Z78gcpH6=", psu=PSU)
    _not_sent(deleted)
    assert sleeps == [], "a request that changes something is never sent again by the client"


def test_an_untrusted_server_certificate_is_not_sent(serve, connect, tmp_path):
    other_ca = pki.issue_ca()
    other_tls = pki.issue_tls_server(other_ca)
    (tmp_path / "tls.pem").write_bytes(other_tls.cert_pem())
    (tmp_path / "tls.key").write_bytes(other_tls.key_pem())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.pem", tmp_path / "tls.key")
    bank = serve(close, context=context)
    client = connect(bank.base_url)
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    _not_sent(caught)
    assert "TLS" in caught.value.message
    bank.close()
    (seen,) = bank.seen
    assert seen.handshake is False and seen.request == b"", "the server never got past the handshake"


def test_a_server_that_answers_the_client_hello_with_garbage_is_not_sent(serve, connect, sleeps):
    def garbage(conn: socket.socket, seen: Seen) -> None:
        seen.raw = conn.recv(65536)  # the ClientHello
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.settimeout(2)
        while chunk := conn.recv(65536):
            seen.raw += chunk

    bank = serve(garbage)
    client = connect(bank.base_url.replace("http://", "https://"))
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    _not_sent(caught)
    with pytest.raises(errors.Xs2aError) as read:
        client.consents.users()
    _not_sent(read)
    assert sleeps == [], "a refused handshake is not tried again, not even for a GET"
    bank.close()
    assert len(bank.seen) == 2
    for seen in bank.seen:
        assert seen.raw[:1] == b"\x16", "a TLS handshake record (the ClientHello) arrived"
        assert b"POST" not in seen.raw and b"X-Request-ID" not in seen.raw and b"GET" not in seen.raw


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_connect_timeout_is_not_sent(connect, scheme):
    """A listener whose accept queue is full: Linux drops the SYN, so the connection is never made (loopback)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=2)  # fills the queue of one
    try:
        client = connect(f"{scheme}://127.0.0.1:{port}", timeout=(0.3, 2.0))
        started = time.monotonic()
        with pytest.raises(errors.Xs2aError) as caught:
            client.payments.initiate(_payment(), psu=PSU)
        assert time.monotonic() - started < 2.0, "it was the connect timeout (0.3 s), not the read timeout"
        _not_sent(caught)
        # As the server saw it: only the filler was ever queued, and nothing arrived on it.
        accepted, _ = listener.accept()
        with accepted:
            accepted.settimeout(0.2)
            with pytest.raises(TimeoutError):
                accepted.recv(1)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        filler.close()
        listener.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_name_that_does_not_resolve_is_not_sent(connect, monkeypatch, scheme):
    """The resolver is replaced: a real look-up could leave this machine."""
    looked_up: list[str] = []

    def no_such_name(host, *args, **kwargs):
        looked_up.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def no_connection(*args, **kwargs):
        raise AssertionError("no connection may be attempted")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    monkeypatch.setattr(socket.socket, "connect", no_connection)
    client = connect(f"{scheme}://bank.invalid")
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(_payment(), psu=PSU)
    _not_sent(caught)
    assert looked_up == ["bank.invalid"]


# --- the conservative readings -----------------------------------------------------------------------------------


def test_a_client_certificate_refused_after_a_tls_1_3_handshake_reads_as_unknown(serve, connect, test_pki):
    """In TLS 1.3 the bank judges the client certificate after the client has finished its handshake and written
    the request: the refusal (a fatal alert) comes where an answer was awaited. The client cannot tell it from an
    alert after the bank processed the request, so a POST is an unknown outcome, although this server never read
    it. Reconciliation then asks again with the same X-Request-ID."""
    context = test_pki.server_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(test_pki.ca_file)
    bank = serve(reset, context=context)
    client = connect(bank.base_url)
    with pytest.raises(errors.OutcomeUnknownError):
        client.payments.initiate(_payment(), psu=PSU)
    bank.close()
    (seen,) = bank.seen
    assert seen.handshake is False and seen.request == b""


@dataclass
class _FakeAdapter:
    """A stand-in for the network that raises ``error`` for every request (as test fakes do)."""

    error: BaseException
    sent: list[str] = field(default_factory=list)

    def send(self, request, **kwargs):
        self.sent.append(request.method)
        raise self.error

    def close(self) -> None:
        pass


def test_an_unmarked_failure_is_read_conservatively(test_pki):
    """An exception that carries no "not sent" mark (a stand-in adapter's) is "may have reached the bank": an
    unknown outcome for a POST, even when its class would suggest a connect failure; marked, it is not sent."""

    def client_raising(error: BaseException) -> Xs2aClient:
        config = ClientConfig(
            base_url="https://bank.test",
            signing_key=test_pki.tpp.key,
            signing_certificate=test_pki.tpp.certificate,
            redirect_uri="https://portal.example/bank/callback",
        )
        return Xs2aClient(config, http_adapter=_FakeAdapter(error))

    unmarked = client_raising(requests.exceptions.ConnectTimeout("connect timed out"))
    with pytest.raises(errors.OutcomeUnknownError):
        unmarked.payments.initiate(_payment(), psu=PSU)
    marked = client_raising(mark_not_sent(requests.exceptions.ConnectTimeout("connect timed out")))
    with pytest.raises(errors.Xs2aError) as caught:
        marked.payments.initiate(_payment(), psu=PSU)
    _not_sent(caught)
