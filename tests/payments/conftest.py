"""Fixtures of the payments tests: a local stand-in for Norges Bank's data API, rates, a fixed 'today'."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from payments.models import ExchangeRate, ExchangeRateSource

RECORDED_EXR = (Path(__file__).parents[1] / "fixtures" / "norges_bank_exr.sdmx.json").read_bytes()
TODAY = date(2026, 11, 20)  # a Friday; the recorded response's last business day


@dataclass
class RateServer:
    """Answers every GET with ``status``/``body``; remembers the request paths (with query strings)."""

    url: str = ""
    status: int = 200
    body: bytes = RECORDED_EXR
    content_type: str = "application/vnd.sdmx.data+json; charset=utf-8; version=1.0"
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def rate_server(settings):
    state = RateServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            state.requests.append(self.path)
            self.send_response(state.status)
            self.send_header("Content-Type", state.content_type)
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/api/data/EXR"
    settings.NORGES_BANK_RATES_URL = state.url
    settings.NORGES_BANK_TIMEOUT = 5
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def unreachable_url(settings):
    """An address on this machine where nothing listens (the port was just freed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api/data/EXR"
    settings.NORGES_BANK_RATES_URL = url
    settings.NORGES_BANK_TIMEOUT = 2
    return url


def make_rate(currency: str, rate: str, *, on: date = TODAY, unit: int = 1, source=ExchangeRateSource.NORGES_BANK):
    return ExchangeRate.objects.create(
        currency=currency, rate=Decimal(rate), unit=unit, rate_date=on, source=source
    )


@pytest.fixture
def eur_rate(db):
    """11.50 NOK per euro on TODAY (Norges Bank), with the seed rows also present from the migration."""
    return make_rate("EUR", "11.50")
