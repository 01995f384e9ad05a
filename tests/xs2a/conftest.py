"""Fixtures of the bank client tests: a throw-away PKI, a scripted local bank, and a client factory."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from devtools import pki
from tests.xs2a.server import LocalBank
from xs2a.client import ClientConfig, RetryPolicy, Xs2aClient


@dataclass
class Pki:
    directory: Path
    ca: pki.Issued
    tpp: pki.Issued
    bank_seal: pki.Issued
    bank_tls: pki.Issued

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    def server_context(self, *, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.directory / "bank-tls.pem", self.directory / "bank-tls.key")
        if maximum is not None:
            context.minimum_version = ssl.TLSVersion.TLSv1
            context.maximum_version = maximum
            context.set_ciphers("DEFAULT:@SECLEVEL=0")
        return context


@pytest.fixture(scope="session")
def test_pki(tmp_path_factory) -> Pki:
    """A CA named like the development CA (Norwegian letters, organizationIdentifier) and its certificates."""
    directory = tmp_path_factory.mktemp("pki")
    ca = pki.issue_ca()
    tpp = pki.issue_qseal(ca)
    seal = pki.issue_qseal(ca, pki.BANK_NAME, roles=())
    tls = pki.issue_tls_server(ca)
    for name, item in {"ca": ca, "tpp": tpp, "bank-seal": seal, "bank-tls": tls}.items():
        (directory / f"{name}.pem").write_bytes(item.cert_pem())
        (directory / f"{name}.key").write_bytes(item.key_pem())
    return Pki(directory, ca, tpp, seal, tls)


class FakeClock:
    """A clock that moves only when told to (and by one second at each reading, so each Date differs)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# A `bank` fixture of its own (not tests/bankfake.py): a real HTTP server, for the client's wire tests.
@pytest.fixture
def bank():
    with LocalBank() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC))


@pytest.fixture
def make_client(test_pki, sleeps, clock):
    made: list[Xs2aClient] = []

    def make(base_url: str, *, audit_hook=None, rng=lambda: 1.0, **overrides) -> Xs2aClient:
        settings = {
            "base_url": base_url,
            "signing_key": test_pki.tpp.key,
            "signing_certificate": test_pki.tpp.certificate,
            "redirect_uri": "https://portal.example/bank/callback",
            "timeout": 5.0,
            "retry": RetryPolicy(),
        }
        settings.update(overrides)
        client = Xs2aClient(ClientConfig(**settings), audit_hook=audit_hook, clock=clock, sleep=sleeps, rng=rng)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def client(bank, make_client) -> Xs2aClient:
    return make_client(bank.base_url)
