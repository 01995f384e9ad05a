"""Payment initiation answers lost after the bank stored the payment (BANK_SIM_DROP_PAYMENT_ANSWER).

The view decides, after the payment is committed: one 201 answer in ``BANK_SIM_DROP_PAYMENT_ANSWER_EVERY``
while the setting is on, or the next one when the sandbox armed it (``POST
/v1/sandbox/behaviour/drop-next-payment-answer``). The count and the armed mode are one database row, so every
gunicorn process sees the same. The decision travels in the WSGI environ (``ENVIRON_KEY``, Django's
``request.META`` is the environ) to ``LostAnswerMiddleware``, the WSGI application gunicorn runs, which then:

- ``reset``: writes nothing and resets the connection (SO_LINGER 0, a TCP RST);
- ``tls``: writes a TLS record that does not decrypt under the session (over plain HTTP: those bytes where a
  status line is expected), waits for the client to give up, and closes;
- ``timeout``: holds the answer ``BANK_SIM_DROP_PAYMENT_ANSWER_DELAY`` seconds, then sends it.

Closing the socket object is left to gunicorn (the middleware raises ECONNRESET, which gunicorn takes for a client
gone): a descriptor closed here could be reused by another connection before gunicorn writes to it.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.http import HttpRequest

from bank_simulator.pis.models import SimulatorBehaviour

MODES = ("reset", "tls", "timeout")
ENVIRON_KEY = "bank_simulator.lost_answer"
LOG = logging.getLogger(__name__)
_GIVE_UP_WAIT = 10.0  # seconds the tls mode waits for the client to close after the corrupt record


@dataclass(frozen=True)
class LostAnswer:
    mode: str
    delay: int  # seconds (timeout)


def arm(*, mode: str, delay: int | None = None) -> None:
    """The next 201 initiation answer is lost in ``mode`` ("none": disarm)."""
    SimulatorBehaviour.objects.update_or_create(
        pk=1, defaults={"drop_next": "" if mode == "none" else mode, "drop_next_delay": delay}
    )


def disarm() -> None:
    SimulatorBehaviour.objects.filter(pk=1).update(drop_next="", drop_next_delay=None, payment_answers=0)


def decide(request: HttpRequest) -> LostAnswer | None:
    """Whether this 201 initiation answer is lost (marked on the request's environ when it is)."""
    mode = settings.BANK_SIM_DROP_PAYMENT_ANSWER
    delay = settings.BANK_SIM_DROP_PAYMENT_ANSWER_DELAY
    with transaction.atomic():
        row, _ = SimulatorBehaviour.objects.select_for_update().get_or_create(pk=1)
        if row.drop_next:
            lost = LostAnswer(row.drop_next, row.drop_next_delay or delay)
            SimulatorBehaviour.objects.filter(pk=1).update(drop_next="", drop_next_delay=None)
        elif mode != "none":
            SimulatorBehaviour.objects.filter(pk=1).update(payment_answers=F("payment_answers") + 1)
            counted = row.payment_answers + 1
            lost = LostAnswer(mode, delay) if counted % settings.BANK_SIM_DROP_PAYMENT_ANSWER_EVERY == 0 else None
        else:
            lost = None
    if lost is not None:
        request.META[ENVIRON_KEY] = lost
    return lost


# --- the WSGI side -------------------------------------------------------------------------------------------


def _corrupt_record() -> bytes:
    """An application-data record (TLS 1.2/1.3 framing) whose 64 bytes decrypt under no session."""
    return b"\x17\x03\x03\x00\x40" + secrets.token_bytes(64)


def _write_raw(sock: socket.socket, data: bytes) -> None:
    """Write ``data`` on the TCP connection itself (under any TLS session), then wait until the client closes."""
    with socket.socket(fileno=os.dup(sock.fileno())) as raw:
        raw.setblocking(True)
        raw.sendall(data)
        raw.settimeout(_GIVE_UP_WAIT)
        try:
            while raw.recv(65536):
                pass
        except OSError:
            pass


def _reset(sock: socket.socket) -> None:
    """Reset the connection now (an RST, no FIN), keeping its file descriptor taken until gunicorn closes it.

    With SO_LINGER 0 the last close of a TCP socket sends RST, but gunicorn half-closes first (FIN) after an
    error. So the descriptor is made to point at a fresh unconnected socket (dup2): that closes the connection's
    last reference at once, and gunicorn's half-close then fails (not connected) and closes the stand-in.
    """
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with socket.socket() as stand_in:
        os.dup2(stand_in.fileno(), sock.fileno())


class LostAnswerMiddleware:
    """Wraps the bank's WSGI application: loses the answers ``decide`` marked, as the mark says."""

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        captured: list[tuple[Any, ...]] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
            captured.append((status, headers, exc_info))
            return lambda data: None  # the bank's views never write through it

        result = self.application(environ, capture)
        lost: LostAnswer | None = environ.get(ENVIRON_KEY)
        if lost is None:
            start_response(*captured[0])
            return result
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()  # Django's request_finished: the database connection goes back
        sock = environ.get("gunicorn.socket")
        if lost.mode == "timeout" or sock is None:
            if sock is None and lost.mode != "timeout":
                LOG.warning("BANK_SIM_DROP_PAYMENT_ANSWER=%s needs gunicorn; the answer is held", lost.mode)
            time.sleep(lost.delay)
            start_response(*captured[0])
            return [body]
        if lost.mode == "reset":
            _reset(sock)
            LOG.info("payment initiation answer lost: connection reset (BANK_SIM_DROP_PAYMENT_ANSWER)")
        else:
            _write_raw(sock, _corrupt_record())
            LOG.info(
                "payment initiation answer lost: corrupt TLS record%s (BANK_SIM_DROP_PAYMENT_ANSWER)",
                "" if isinstance(sock, ssl.SSLSocket) else " over plain HTTP",
            )
        # gunicorn takes ECONNRESET for a client gone: it writes nothing and closes the socket.
        raise ConnectionResetError(errno.ECONNRESET, "payment initiation answer lost on purpose")
