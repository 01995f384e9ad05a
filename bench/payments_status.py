"""Status calls per payment until a final status, against the number of status changes (goal: at most 2 per
change on average).

``python -m bench.payments_status``: starts the sandbox bank (gunicorn, production server settings, its own
temporary SQLite database) on a free loopback port, sets the portal's Django up in this process on a temporary
database (PostgreSQL when DATABASE_URL names a server, else SQLite), gets a PSU-ID for Private Customer 1 through
the bank's SCA screens, then for each of two polling policies:

- portal: ``payments.services.polling`` told the bank's batch times, as ``make run`` tells it (BANK_BATCH_TIMES,
  the same BATCH_TIMES the bank is started with): a read right after approval, then shortly after each of the
  bank's batches, overnight at least every six hours;
- baseline: the same code with a fixed five-minute interval (no batch schedule), what a plain poller does;

it initiates PAYMENTS payments through ``payments.services.payment_submit`` (a few of them larger than the
account holds, so they go ACCP, then RJCT the next day), approves each at the bank's SCA screen, and lets time
pass: the bank's business clock is moved forward (``POST /v1/sandbox/batches/run`` with ``advanceSeconds``, which
runs the batches passed) to the next poll that is due, and every due poll runs (``payment_poll`` with that time),
until every payment is final. A day and more of business time passes in seconds.

Counted from the portal's own records: status calls are the audited GETs of the status link (BankCall);
status changes are the statuses the portal recorded after approval (PaymentEvent STATUS, less the RCVD of the
initiation). A poller that misses a change would show fewer changes than the bank made: the run also checks
that every payment's recorded statuses are the bank's full path.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
import time
from datetime import datetime, timedelta
from datetime import time as dt_time
from decimal import Decimal
from pathlib import Path
from urllib.parse import urljoin

from bench.portal_setup import (
    main_iban,
    portal_database,
    private_psu_id,
    reviewed_draft,
    setup_portal,
)
from bench.report import emit
from devtools.livebank import csrf_token, follow_see_other, running_bank

PAYMENTS = 12
SHORT_OF_FUNDS = 2  # of them: more than the account holds
GOAL = 2.0  # status calls per status change, on average
BASELINE_INTERVAL = timedelta(minutes=5)
#: The bank's batch times (the sandbox bank's default), told to both the bank and the portal as `make run` does.
BATCH_TIMES = ("05:00", "08:00", "11:00", "13:00", "15:00")
MAX_STEPS = 2000
EXPECTED_PATHS = ({"RCVD", "PDNG", "ACSP", "ACSC"}, {"RCVD", "PDNG", "ACCP", "RJCT"})
STATUS_TEMPLATE = "/v1/payments/{product}/{payment_id}/status"


def _approve(href: str) -> None:
    """Private Customer 1 approves the payment at the bank's SCA screen (identity first when asked)."""
    import requests

    browser = requests.Session()
    page = browser.get(href, timeout=10)

    def post(data: dict) -> requests.Response:
        action = re.search(r'<form method="post" action="([^"]*)"', page.text)
        target = urljoin(href, action.group(1).replace("&amp;", "&")) if action else href
        answer = browser.post(
            target, data={"csrfmiddlewaretoken": csrf_token(page.text), **data}, timeout=10, allow_redirects=False
        )
        return follow_see_other(browser, target, answer)

    if 'name="identity"' in page.text:
        page = post({"identity": "13039319955", "action": "identify"})
    options = re.findall(r'name="agreement" value="([^"]+)"[^>]*>\s*(PRIVATE|CORPORATE)', page.text)
    if options:
        page = post({"agreement": next(v for v, kind in options if kind == "PRIVATE"), "action": "context"})
    done = post({"action": "approve"})
    if done.status_code != 302:
        raise RuntimeError(f"the bank did not take the approval: {done.status_code} {done.text[:300]}")


def _bank_clock(client, seconds: int = 0) -> datetime:
    answer = client.request("POST", "/v1/sandbox/batches/run", json_body={"advanceSeconds": seconds})
    if answer.status != 200:
        raise RuntimeError(f"sandbox batches/run: {answer.status} {answer.body[:300]!r}")
    return datetime.fromisoformat(answer.json()["now"])


def _run(label: str, *, user, connection, debtor: str, presence, amounts) -> dict:
    """Initiate, approve and poll PAYMENTS payments until final on simulated business time; count."""
    from core.bank import bank_client
    from core.models import BankCall
    from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
    from payments.services import polling
    from payments.services.submission import payment_submit

    client = bank_client()
    now = _bank_clock(client)
    ids = []
    for index in range(PAYMENTS):
        # 99 000 NOK: under the reporting threshold, more than Brukskonto holds even after a salary (ACCP, RJCT)
        amount = Decimal("99000.00") + index if index < SHORT_OF_FUNDS else next(amounts)
        draft = reviewed_draft(user=user, connection=connection, debtor_iban=debtor, amount=amount)
        outcome = payment_submit(
            payment=draft, user=user, idempotency_key=str(draft.idempotency_key), presence=presence
        )
        payment = outcome.payment
        if payment.state != PaymentState.INITIATED:
            raise RuntimeError(f"payment not initiated: {payment.state} {payment.tpp_messages}")
        started = client.payments.start_authorisation(
            href=payment.links.get("startAuthorisation"), psu=presence.__class__(psu_id=connection.psu_id)
        )
        _approve(started.sca_redirect)
        # what the callback does: read the status as soon as possible
        Payment.objects.filter(pk=payment.pk).update(state=PaymentState.AUTHORISING, next_poll_at=now)
        ids.append(payment.pk)

    steps = 0
    while True:
        for payment_id in polling.due_payment_ids(now=now):
            polling.payment_poll(payment_id=payment_id, now=now)
        waiting = Payment.objects.filter(pk__in=ids, next_poll_at__isnull=False)
        upcoming = min(waiting.values_list("next_poll_at", flat=True), default=None)
        if upcoming is None:
            break
        steps += 1
        if steps > MAX_STEPS:
            raise RuntimeError(f"{label}: still polling after {MAX_STEPS} steps")
        now = _bank_clock(client, max(0, math.ceil((upcoming - now).total_seconds())))

    calls = BankCall.objects.filter(
        path_template=STATUS_TEMPLATE, object_id__in=[str(i) for i in ids], method="GET"
    ).count()
    changes = 0
    for payment_id in ids:
        statuses = list(
            PaymentEvent.objects.filter(payment_id=payment_id, kind=PaymentEventKind.STATUS).values_list(
                "transaction_status", flat=True
            )
        )
        if set(statuses) not in EXPECTED_PATHS or len(statuses) != 4:
            raise RuntimeError(f"{label}: payment {payment_id} recorded {statuses}, not the bank's whole path")
        changes += len(statuses) - 1  # the RCVD of the initiation is not a change
    final = Payment.objects.filter(pk__in=ids, state=PaymentState.FINAL).count()
    print(
        f"{label}: {PAYMENTS} payments ({SHORT_OF_FUNDS} short of funds) final: {final}; "
        f"{calls} status calls for {changes} status changes = {calls / changes:.2f} per change; "
        f"business time passed: {now - _first(ids)}"
    )
    return {"calls": calls, "changes": changes, "per_change": calls / changes}


def _first(ids):
    from payments.models import Payment

    return Payment.objects.filter(pk__in=ids).order_by("created_at").values_list("created_at", flat=True)[0]


def main() -> None:
    from xs2a.psu import PsuContext

    presence = PsuContext(ip_address="198.51.100.7", user_agent="bench", http_method="POST")
    with tempfile.TemporaryDirectory(prefix="bench-pay-status-") as tmp:
        (Path(tmp) / "bank").mkdir()
        bank_settings = {"BANK_SIM_BATCH_TIMES": ",".join(BATCH_TIMES)}
        with (
            running_bank(Path(tmp) / "bank", settings=bank_settings) as bank,
            portal_database(Path(tmp)) as database_url,
        ):
            setup_portal(database_url, bank.base_url)
            logging.disable(logging.WARNING)
            from django.conf import settings

            settings.BANK_BATCH_TIMES = tuple(dt_time.fromisoformat(value) for value in BATCH_TIMES)
            from django.contrib.auth import get_user_model

            from connections.crypto import lookup_hash
            from connections.models import BankConnection
            from xs2a.psu import PsuContext as Psu

            psu_id = private_psu_id(presence)
            debtor = main_iban(Psu(psu_id=psu_id, context="PRIVATE", ip_address=presence.ip_address))
            user = get_user_model().objects.create_user("bench@example.com", "bench@example.com", "x" * 20)
            connection = BankConnection.objects.create(
                user=user, context="PRIVATE", state="active", psu_id=psu_id, psu_id_hash=lookup_hash(psu_id)
            )
            amounts = iter(Decimal("100.00") + Decimal(n) / 100 for n in range(100_000))
            kwargs = {"user": user, "connection": connection, "debtor": debtor, "presence": presence}
            started = time.perf_counter()
            portal = _run("portal (batch-aware)", amounts=amounts, **kwargs)
            settings.BANK_BATCH_TIMES = ()
            settings.PAYMENT_POLL_MIN_INTERVAL = BASELINE_INTERVAL
            settings.PAYMENT_POLL_MAX_INTERVAL = BASELINE_INTERVAL
            settings.PAYMENT_POLL_SIGNERS_WINDOW = timedelta(days=7)
            baseline = _run("baseline (every 5 minutes)", amounts=amounts, **kwargs)
            elapsed = time.perf_counter() - started

    print(f"machine: {os.cpu_count()} cores; both runs took {elapsed:.1f} s of wall time")
    met = "met" if portal["per_change"] <= GOAL else "NOT met"
    print(f"status calls per status change: {portal['per_change']:.2f} (goal <= {GOAL}): {met}")
    emit(
        "payment status calls per status change (until final)",
        round(portal["per_change"], 3),
        "calls/change",
        better="lower",
        goal=GOAL,
        baseline=round(baseline["per_change"], 3),
    )
    emit(
        "payment status calls per payment until final",
        round(portal["calls"] / PAYMENTS, 3),
        "calls",
        better="lower",
        baseline=round(baseline["calls"] / PAYMENTS, 3),
    )
    if os.environ.get("BENCH_JSON"):
        print(json.dumps({"portal": portal, "baseline": baseline}))


if __name__ == "__main__":
    main()
