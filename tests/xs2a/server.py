"""A scripted bank on 127.0.0.1 for the client tests: a real HTTP(S) server in a thread.

Each test queues answers per (method, path); every request is recorded with its raw target, headers and body,
so that tests check what actually went over the wire (TLS, sockets, timeouts: what the portal's in-process
``tests.bankfake.FakeBank`` leaves out). ``Received``, ``Answer``, ``check_signature`` and ``signed_answer`` are
shared with it (tests/bankfake.py).
"""

from __future__ import annotations

import ssl
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.bankfake import Answer, Received, Responder


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
