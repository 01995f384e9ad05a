"""Shared set-up of the payment benchmarks (bench.payments_initiation, bench.payments_status): the portal's
temporary database, Django on it, a PSU-ID of Private Customer 1 through the bank's SCA screens, the customer's
main account and a signed initiation's body. Public names: the benchmarks import from here, never each other's
private helpers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from devtools.livebank import sca_post

PRIVATE_1 = "13039319955"  # Private Customer 1 of the sandbox (a test fødselsnummer, not a person's)
PRODUCT = "norwegian-cross-border-credit-transfers"

__all__ = [
    "PRIVATE_1",
    "PRODUCT",
    "main_iban",
    "payment_body",
    "portal_database",
    "private_psu_id",
    "reviewed_draft",
    "setup_portal",
]


@contextlib.contextmanager
def portal_database(tmp: Path) -> Iterator[str]:
    """The portal's database for the run: with DATABASE_URL naming a PostgreSQL server (as in production and
    CI), a temporary database on that server, dropped afterwards; otherwise a temporary SQLite file."""
    server = os.environ.get("DATABASE_URL", "")
    if not server.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{tmp / 'portal.sqlite3'}"
        return
    import psycopg

    parts = urlsplit(server)
    name = f"bench_portal_{uuid.uuid4().hex[:12]}"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def setup_portal(database_url: str, bank_url: str) -> None:
    """Django of the portal in this process, on ``database_url``, as in production where it matters to a figure:
    DEBUG off (with it on, Django copies every SQL statement into ``connection.queries``, work that a deployed
    portal never does and that the bank, under its production settings, does not do either)."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "tpp_portal.settings",
            "DATABASE_URL": database_url,
            "BANK_BASE_URL": bank_url,
            "DEBUG": "false",
        }
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    logging.disable(logging.INFO)  # the client's one log line per call would cost both sides alike; keep it quiet


def private_psu_id(presence) -> str:
    """A PSU-ID of Private Customer 1 for this TPP, through the bank's SCA screens (consent start + redirect)."""
    import dataclasses

    import requests

    from core.bank import bank_client

    answer = bank_client().consents.start(psu=dataclasses.replace(presence, context="PRIVATE"))
    href = answer.sca_redirect
    browser = requests.Session()
    page = browser.get(href, timeout=10)
    page = sca_post(browser, href, page, identity=PRIVATE_1, action="identify")
    agreement = re.search(r'name="agreement" value="([^"]+)"', page.text).group(1)
    page = sca_post(browser, href, page, agreement=agreement, action="context")
    accounts = re.findall(r'name="account" value="([^"]+)"', page.text)
    done = sca_post(browser, href, page, account=accounts, action="approve")
    return re.search(r"psu-id=([0-9a-f-]{36})", done.headers["Location"]).group(1)


def main_iban(psu) -> str:
    from core.bank import bank_client

    return next(a.iban for a in bank_client().accounts.list(psu=psu) if a.name == "Brukskonto")


def payment_body(debtor_iban: str, amount: Decimal) -> bytes:
    body = {
        "instructedAmount": {"amount": f"{amount:.2f}", "currency": "NOK"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAgent": "COBADEFFXXX",
        "creditorAccount": {"iban": "DE89370400440532013000", "currency": "EUR"},
        "debtorAccount": {"iban": debtor_iban, "currency": "NOK"},
        "remittanceInformationUnstructured": "Invoice",
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def reviewed_draft(*, user, connection, debtor_iban: str, amount: Decimal):
    """A reviewed draft of the benchmark's payment (:func:`payment_body`), as the review page leaves it."""
    from payments.models import Payment

    return Payment.objects.create(
        user=user,
        connection=connection,
        product=PRODUCT,
        context="PRIVATE",
        idempotency_key=uuid.uuid4(),
        request_id=uuid.uuid4(),
        body_json=payment_body(debtor_iban, amount).decode("utf-8"),
        amount=amount,
        currency="NOK",
        debtor_account=debtor_iban,
        creditor_name="Müller Maschinenbau GmbH",
        creditor_account="DE89370400440532013000",
    )


#: The synthetic connections of the refresh benchmarks at scale (bench.refresh_growth, bench.scale): accounts per
#: connection, and one connection in DEAD_EVERY needs reconnecting (its accounts are not refreshed).
PER_CONNECTION = 800
DEAD_EVERY = 5


def synthetic_connection(user, n: int, now):
    """The ``n``-th synthetic connection of ``user`` (unsaved): active, or needing reconnection for one in
    DEAD_EVERY, its accounts fetched at ``now``."""
    from datetime import timedelta

    from connections.crypto import lookup_hash
    from connections.models import BankConnection, ConnectionState

    psu_id = f"00000000-0000-4000-8000-{n:012d}"
    dead = n % DEAD_EVERY == DEAD_EVERY - 1
    return BankConnection(
        user=user,
        context="PRIVATE",
        state=ConnectionState.NEEDS_RECONNECT if dead else ConnectionState.ACTIVE,
        psu_id=psu_id,
        psu_id_hash=lookup_hash(psu_id),
        sca_at=now,
        consent_valid_until=now + timedelta(days=180),
        accounts_fetched_at=now,
    )
