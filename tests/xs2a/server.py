"""A scripted bank on 127.0.0.1 for the client tests: a real HTTP(S) server in a thread.

Each test queues answers per (method, path); every request is recorded with its raw target, headers and body,
so that tests check what actually went over the wire. The request signature is checked independently of
``xs2a.signing`` (the signing string is rebuilt here from the received headers).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import ssl
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from xs2a import signing


@dataclass
class Received:
    method: str
    target: str  # raw path and query as sent
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""


@dataclass
class Answer:
    status: int = 200
    body: Any = None  # dict/list -> JSON; bytes as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a timeout test)
    drop: bool = False  # close the connection without answering

    def encoded(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode("utf-8")


Responder = Callable[[Received], Answer]


_PART = re.compile(r'([A-Za-z]+)="((?:[^"\\]|\\.)*)"(?:,|$)')


def _decode_signature(value: str) -> dict[str, str]:
    """The parts of a Signature header: each ``name="quoted-string"``, its backslash escapes undone."""
    if value.startswith("=?utf-8?B?") and value.endswith("?="):
        value = base64.b64decode(value[len("=?utf-8?B?") : -2]).decode("utf-8")
    parts = {m[1]: re.sub(r"\\(.)", r"\1", m[2]) for m in _PART.finditer(value)}
    assert ",".join(f'{k}="{v}"' for k, v in ((m[1], m[2]) for m in _PART.finditer(value))) == value
    return parts


def check_signature(received: Received, certificate: x509.Certificate) -> list[str]:
    """Verify the request's Signature with ``certificate``; returns the signed header names."""
    params = _decode_signature(received.headers["signature"])
    names = params["headers"].split(" ")
    lines = []
    for name in names:
        if name == "(request-target)":
            lines.append(f"(request-target): {received.method.lower()} {received.target}")
        else:
            lines.append(f"{name}: {received.headers[name]}")
    certificate.public_key().verify(  # type: ignore[union-attr]
        base64.b64decode(params["signature"]),
        "\n".join(lines).encode("utf-8"),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )
    return names


def signed_answer(
    seal,
    received: Received,
    body: dict | None,
    *,
    status: int = 200,
    request_id: str | None = None,
    age: timedelta = timedelta(0),
    names: Sequence[str] = ("date", "digest", "x-request-id"),
    digest: bool = True,
    digest_of: bytes | None = None,
) -> Answer:
    """An answer as the bank signs one with its seal (an ``Issued``: key and certificate), to ``received``: its
    Date is the request's less ``age``, its X-Request-ID the request's unless ``request_id`` is given; ``names``
    are signed (those present), ``digest`` False leaves Digest out, ``digest_of`` hashes other bytes than the
    body. The signing string is built here, apart from ``xs2a.signing`` (only the keyId is written by it)."""
    data = json.dumps(body).encode("utf-8") if body is not None else b""
    moment = parsedate_to_datetime(received.headers["date"]) - age
    headers = {
        "Date": format_datetime(moment, usegmt=True),
        "X-Request-ID": received.headers["x-request-id"] if request_id is None else request_id,
    }
    if digest:
        hashed = hashlib.sha256(data if digest_of is None else digest_of).digest()
        headers["Digest"] = "SHA-256=" + base64.b64encode(hashed).decode()
    lowered = {k.lower(): v for k, v in headers.items()}
    signed = [name for name in names if name in lowered]
    text = "\n".join(f"{name}: {lowered[name]}" for name in signed)
    raw = seal.key.sign(text.encode(), padding.PKCS1v15(), hashes.SHA256())
    key_id = signing.key_id(seal.certificate)
    headers["Signature"] = (
        f'keyId={signing.quoted_string(key_id)},algorithm="rsa-sha256",headers="{" ".join(signed)}",'
        f'signature="{base64.b64encode(raw).decode()}"'
    )
    return Answer(status, data if body is not None else None, headers)


class LocalBank:
    def __init__(self, *, ssl_context: ssl.SSLContext | None = None, prefix: str = "") -> None:
        self.prefix = prefix
        self.received: list[Received] = []
        self.routes: dict[tuple[str, str], deque[Answer | Responder]] = defaultdict(deque)
        self.fallback: Answer | Responder = Answer(
            404, {"tppMessages": [{"category": "ERROR", "code": "NOT_FOUND"}]}
        )
        bank = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # one segment per answer: no delayed-ACK stalls

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                received = Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                bank.received.append(received)
                answer = bank._answer_for(received)
                if answer.delay:
                    time.sleep(answer.delay)
                if answer.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                data = answer.encoded()
                self.send_response_only(answer.status)
                if "Date" not in answer.headers:
                    self.send_header("Date", self.date_time_string())
                if data and "Content-Type" not in answer.headers:
                    self.send_header("Content-Type", "application/json")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # a client that gave up (timeout tests)
        if ssl_context is not None:
            self.server.socket = ssl_context.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if ssl_context else "http"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> LocalBank:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{self.prefix}"

    def add(self, method: str, path: str, *answers: Answer | Responder) -> None:
        """Queue answers for ``method`` on ``path`` (below the prefix); the last one repeats."""
        self.routes[(method.upper(), self.prefix + path)].extend(answers)

    def _answer_for(self, received: Received) -> Answer:
        queue = self.routes.get((received.method, received.path))
        if not queue:
            item = self.fallback
        elif len(queue) > 1:
            item = queue.popleft()
        else:
            item = queue[0]
        return item(received) if callable(item) else item
