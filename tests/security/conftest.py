"""Fixtures of the security tests: the World of objects the page walk fills URLs with, signed-in clients, and
a bank that refuses connections (a page that calls the bank must cope; no test reaches a real server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from devtools.livebank import free_port

# The sandbox bank as a real process, for the tests that need a real connection.
from tests.live_bank import live_bank, live_bank_server  # noqa: F401
from tests.security.pages import World, make_world


@pytest.fixture
def refused_bank(settings) -> Iterator[str]:
    """The portal's bank client pointed at a loopback port nothing listens on."""
    from core.bank import bank_client

    settings.BANK_BASE_URL = f"http://127.0.0.1:{free_port()}"
    bank_client.cache_clear()
    yield settings.BANK_BASE_URL
    bank_client.cache_clear()


@pytest.fixture
def world(alice, bob, charlie, refused_bank) -> World:
    """alice's bank connection, account, transaction and payment (made by the factories); the page walk adds
    one object of every admin model."""
    return make_world(alice, bob, charlie)


def signed_in(user, *, enforce_csrf_checks: bool = False) -> Client:
    client = Client(enforce_csrf_checks=enforce_csrf_checks)
    if user is not None:
        client.force_login(user)
    return client


def database_snapshot() -> dict[str, str]:
    """Every row of every model (sessions and sign-in logs aside): equal before and after means nothing was
    written."""
    from django.apps import apps

    skipped = {"sessions.session"}
    snapshot = {}
    for model in apps.get_models():
        label = model._meta.label_lower
        if label in skipped or model._meta.proxy or not model._meta.managed:
            continue
        # values(): the stored values as Python reads them (serialize() would encrypt afresh each time).
        snapshot[label] = repr(list(model._default_manager.order_by("pk").values()))
    return snapshot


def server_error(status: int) -> bool:
    """A 5xx other than the deliberate 502/503/504 of a page whose bank call failed (these tests refuse every
    bank connection). An uncaught exception is not a status at all: the test client raises it."""
    return status >= 500 and status not in {502, 503, 504}


def body(response) -> str:
    """The text of an answer, streamed (a CSV export) or not."""
    if response.streaming:
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def changed_tables(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(label for label in before if before[label] != after.get(label))
