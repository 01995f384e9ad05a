"""Payment initiations per second through the portal's service, against direct signed calls to the bank.

``python -m bench.payments_initiation``: starts the sandbox bank (gunicorn, production server settings, its own
temporary SQLite database) on a free loopback port, sets the portal's Django up in this process on a temporary
SQLite database of its own, and gets a PSU-ID for Private Customer 1 through the bank's SCA screens.

After a warm-up of both sides (not measured), in rounds that alternate which side goes first, so both see
the same machine and bank state, one request at a time on each side (the same concurrency):

- portal: ``payments.services.payment_submit`` on reviewed drafts (the claim DRAFT -> SUBMITTING with its
  lease committed before the call, the one signed initiation, then the answer, the timeline events and the
  audit row of the bank call committed together after it), one after another;
- direct (the baseline): the same signed initiation with the xs2a client alone (no database, no audit).

The portal's database is a temporary one on the PostgreSQL server of DATABASE_URL when it names one (as in
production and CI; created and dropped by the run), else a temporary SQLite file, where every commit is a file
sync and the portal's two commits per initiation (the claim; the answer with its events and audit row)
dominate.

The overhead ratio is the portal's time per initiation over the direct call's (goal < 1.3). Each payment has
its own amount, so the bank's logical-duplicate check never refuses one. Client and bank share the machine's
cores: both sides pay the same bank time, so the ratio shows what the portal adds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from devtools.livebank import running_bank, sca_post

PRIVATE_1 = "13039319955"
ROUNDS = 5
PER_ROUND = 30  # initiations per side and round
WARM_UP = 10  # per side, before the measured rounds
GOAL_OVERHEAD = 1.3
PRODUCT = "norwegian-cross-border-credit-transfers"


@contextlib.contextmanager
def _portal_database(tmp: Path) -> Iterator[str]:
    """The portal's database for the run: with DATABASE_URL naming a PostgreSQL server (as in production and
    CI), a temporary database on that server, dropped afterwards; otherwise a temporary SQLite file."""
    server = os.environ.get("DATABASE_URL", "")
    if not server.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{tmp / 'portal.sqlite3'}"
        return
    import psycopg

    parts = urlsplit(server)
    name = f"bench_payinit_{uuid.uuid4().hex[:12]}"
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


def _setup_portal(database_url: str, bank_url: str) -> None:
    os.environ.update(
        {"DJANGO_SETTINGS_MODULE": "tpp_portal.settings", "DATABASE_URL": database_url, "BANK_BASE_URL": bank_url}
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    logging.disable(logging.INFO)  # the client's one log line per call would cost both sides alike; keep it quiet


def _psu_id(presence) -> str:
    """A PSU-ID of Private Customer 1 for this TPP, through the bank's SCA screens (consent start + redirect)."""
    import dataclasses

    import requests

    from tpp_portal.bank import bank_client

    answer = bank_client().consent_start(psu=dataclasses.replace(presence, context="PRIVATE"))
    href = answer.sca_redirect
    browser = requests.Session()
    page = browser.get(href, timeout=10)
    page = sca_post(browser, href, page, identity=PRIVATE_1, action="identify")
    agreement = re.search(r'name="agreement" value="([^"]+)"', page.text).group(1)
    page = sca_post(browser, href, page, agreement=agreement, action="context")
    accounts = re.findall(r'name="account" value="([^"]+)"', page.text)
    done = sca_post(browser, href, page, account=accounts, action="approve")
    return re.search(r"psu-id=([0-9a-f-]{36})", done.headers["Location"]).group(1)


def _main_iban(psu) -> str:
    from tpp_portal.bank import bank_client

    return next(a.iban for a in bank_client().accounts(psu=psu) if a.name == "Brukskonto")


def _body(debtor_iban: str, amount: Decimal) -> bytes:
    body = {
        "instructedAmount": {"amount": f"{amount:.2f}", "currency": "NOK"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAgent": "COBADEFFXXX",
        "creditorAccount": {"iban": "DE89370400440532013000", "currency": "EUR"},
        "debtorAccount": {"iban": debtor_iban, "currency": "NOK"},
        "remittanceInformationUnstructured": "Invoice",
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def main() -> None:
    from xs2a.psu import PsuContext

    presence = PsuContext(ip_address="198.51.100.7", user_agent="bench", http_method="POST")
    with tempfile.TemporaryDirectory(prefix="bench-pay-init-") as tmp:
        (Path(tmp) / "bank").mkdir()
        _measure(Path(tmp), presence)


def _measure(tmp: Path, presence) -> None:
    from xs2a.psu import PsuContext

    with running_bank(tmp / "bank") as bank, _portal_database(tmp) as database_url:
        _setup_portal(database_url, bank.base_url)
        from django.db import connection as portal_db

        vendor = portal_db.vendor
        from django.contrib.auth import get_user_model

        from accounts.crypto import lookup_hash
        from accounts.models import BankConnection
        from payments.models import Payment, PaymentState
        from payments.services import payment_submit
        from tpp_portal.bank import build_bank_client, client_config
        from xs2a.client import Xs2aClient

        psu_id = _psu_id(presence)
        psu = PsuContext(**{**presence.__dict__, "psu_id": psu_id, "context": "PRIVATE"})
        debtor = _main_iban(psu)
        user = get_user_model().objects.create_user("bench@example.com", "bench@example.com", "x" * 20)
        connection = BankConnection.objects.create(
            user=user, context="PRIVATE", state="active", psu_id=psu_id, psu_id_hash=lookup_hash(psu_id)
        )
        direct = Xs2aClient(client_config())  # the same configuration, without the portal's audit hook
        build_bank_client().close()

        amounts = iter(Decimal("100.00") + Decimal(n) / 100 for n in range(100_000))

        def drafts(count: int) -> list:
            made = []
            for _ in range(count):
                amount = next(amounts)
                made.append(
                    Payment.objects.create(
                        user=user,
                        connection=connection,
                        product=PRODUCT,
                        context="PRIVATE",
                        idempotency_key=uuid.uuid4(),
                        request_id=uuid.uuid4(),
                        body_json=_body(debtor, amount).decode("utf-8"),
                        amount=amount,
                        currency="NOK",
                        debtor_account=debtor,
                        creditor_name="Müller Maschinenbau GmbH",
                        creditor_account="DE89370400440532013000",
                    )
                )
            return made

        def portal_side(count: int) -> tuple[float, int]:
            """Submissions of reviewed drafts (made before the clock starts: the review page makes them)."""
            batch = drafts(count)
            started = time.perf_counter()
            failed = 0
            for draft in batch:
                outcome = payment_submit(
                    payment=draft, user=user, idempotency_key=str(draft.idempotency_key), presence=presence
                )
                failed += outcome.payment.state != PaymentState.INITIATED
            return (time.perf_counter() - started) / count, failed

        def direct_side(count: int) -> float:
            bodies = [json.loads(_body(debtor, next(amounts))) for _ in range(count)]
            started = time.perf_counter()
            for body in bodies:
                direct.payment_initiate(body, psu=psu, product=PRODUCT, tpp_session_id=str(uuid.uuid4()))
            return (time.perf_counter() - started) / count

        # Warm-up, not measured: connections opened, caches and the bank's first requests behind both sides.
        portal_side(WARM_UP)
        direct_side(WARM_UP)
        portal_times: list[float] = []
        direct_times: list[float] = []
        failures = 0
        for round_ in range(ROUNDS):
            # Alternating which side goes first, so that neither always follows the other's load on the bank.
            if round_ % 2:
                direct_times.append(direct_side(PER_ROUND))
            per_payment, failed = portal_side(PER_ROUND)
            portal_times.append(per_payment)
            failures += failed
            if not round_ % 2:
                direct_times.append(direct_side(PER_ROUND))
        direct.close()

    portal = statistics.median(portal_times)
    baseline = statistics.median(direct_times)
    overhead = portal / baseline
    print(f"machine: {os.cpu_count()} cores; bank: gunicorn (production settings), SQLite; portal: {vendor}")
    print(
        f"initiations through the portal: {1 / portal:.1f} /s ({portal * 1000:.1f} ms each, median of "
        f"{ROUNDS} rounds of {PER_ROUND}; {failures} not initiated)"
    )
    print(f"direct signed initiations (xs2a client alone): {1 / baseline:.1f} /s ({baseline * 1000:.1f} ms each)")
    met = "met" if overhead < GOAL_OVERHEAD else "NOT met"
    print(f"portal overhead: {overhead:.3f}x (goal < {GOAL_OVERHEAD}): {met}")
    results = [
        {
            "figure": "payment initiations per second through the portal",
            "value": round(1 / portal, 2),
            "unit": "/s",
            "goal": None,
            "better": "higher",
            "baseline": round(1 / baseline, 2),
            "ratio": round(baseline / portal, 3),
        },
        {
            "figure": "portal overhead on payment initiation (time vs direct signed call)",
            "value": round(overhead, 3),
            "unit": "x",
            "goal": GOAL_OVERHEAD,
            "better": "lower",
            "baseline": None,
            "ratio": None,
        },
    ]
    for result in results:
        print("RESULT " + json.dumps(result))
    if failures:
        raise SystemExit(f"{failures} initiations through the portal did not reach INITIATED")


if __name__ == "__main__":
    main()
