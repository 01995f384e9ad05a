"""One background refresh cycle of many accounts, against the sandbox bank: accounts refreshed per second.

``python -m bench.refresh [--accounts N] [--workers W]`` (default 1 000 accounts, or BENCH_REFRESH_ACCOUNTS; 2
workers). The issue's figure is for 10 000 accounts (``--accounts 10000``); on a busy 2-core machine that takes
well over the few minutes a bench module may run, so the default is smaller; accounts/s is per account either
way (each account costs the same two calls and one short transaction).

- starts the sandbox bank (gunicorn, production server settings, its own temporary SQLite database) on a free
  loopback port and sets the portal's Django up in this process on a temporary database (a temporary
  PostgreSQL database when DATABASE_URL names a server, else a SQLite file);
- at the bank, through its sandbox endpoints: private customers with up to PER_CUSTOMER accounts each (the SCA
  form of one consent lists every account), each account with one booked transaction; one consent per
  customer through the bank's SCA screens, all accounts ticked (a PSU-ID each);
- in the portal, seeded directly: a user, one active connection per customer, the accounts, all due now.

Measured: the planner (``accounts.planner.refresh_plan``) claims every due account and hands its tasks (a batch of
accounts each) to W worker processes, which run the task's work (``accounts.refresh.refresh_due``: the ledger
reservation, the unattended balances read, the transaction pages, the storing, the audit rows); the clock stops
when the last account is done. Reported: accounts/s (goal >= 100), unattended bank calls per account, database
queries per account (counted in the workers), and the CPU time each side spent per account in the cycle: each of
the bank's gunicorn worker processes, each refresh worker, the planner. A keep-alive connection stays with the
gunicorn worker that accepted it; each refresh task connects afresh (``accounts.refresh``), so the tasks spread
over the bank's processes; the per-process figures show how evenly.
Baseline in the same run: W processes reading the same two resources per account with the bare xs2a client (no
database, no ledger, no audit), unattended as in the cycle (the first and the third such read of the day for each
account, within the bank's allowance), so that the bank does the same counting work. It runs once before the
cycle and once after, and the ratio is taken against their mean: the speed of a shared machine drifts within
minutes (seen here: the same code's baseline from 77 to 130 accounts/s in one morning), and both are printed.

Client, workers and bank share the machine's cores, so the figures are lower bounds.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import random
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from bench.portal_setup import portal_database, setup_portal
from devtools.livebank import running_bank, sca_post

PER_CUSTOMER = 800  # the bank's SCA form must stay under Django's 1000-field limit
GOAL = 100.0  # accounts per second
BASELINE_SAMPLE = 1000  # accounts read directly for the baseline


def _identity_numbers(count: int, rng: random.Random) -> list[str]:
    """Valid Norwegian national identity numbers (stdnum checks them as the bank does), distinct."""
    from stdnum.no import fodselsnummer

    found: set[str] = set()
    while len(found) < count:
        day, month, year = rng.randint(1, 28), rng.randint(1, 12), rng.randint(40, 99)
        candidate = f"{day:02d}{month:02d}{year:02d}{rng.randint(0, 499):03d}{rng.randint(0, 99):02d}"
        if fodselsnummer.is_valid(candidate):
            found.add(candidate)
    return sorted(found)


def _bare_client():
    from core.bank import client_config
    from xs2a.client import Xs2aClient

    return Xs2aClient(client_config())  # no audit hook: set-up and baseline calls leave no BankCall rows


def bank_accounts_setup(count: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    """Customers and accounts at the bank, a consent for each customer; [(psu_id, [resource ids])]."""
    client = _bare_client()
    customers = []
    for n, number in enumerate(_identity_numbers((count + PER_CUSTOMER - 1) // PER_CUSTOMER, rng)):
        created = client.sandbox.create_customer(
            {"customerType": "PRIVATE", "customerNumber": number, "customerName": f"Bench Kunde {n}"}
        )
        customers.append((number, created.customer_id))
    jobs = [(customers[i // PER_CUSTOMER][1], i) for i in range(count)]

    def make(job: tuple[str, int]) -> str:
        customer_id, i = job
        account = client.sandbox.create_account(
            {
                "customerId": customer_id,
                "currency": "NOK",
                "name": f"Konto {i}",
                "balance": {"amount": "1000.00", "currency": "NOK"},
            }
        )
        if i % 10 == 0:  # some accounts with a new booked transaction besides the opening balance
            client.sandbox.create_mock_transaction(
                account.resource_id,
                {
                    "transactionAmount": {"amount": f"{10 + i % 900}.50", "currency": "NOK"},
                    "counterpartyName": "Rema 1000",
                    "remittanceInformationUnstructured": f"Kjøp {i}",
                },
            )
        return account.resource_id

    with ThreadPoolExecutor(8) as pool:
        resource_ids = list(pool.map(make, jobs))
    owned: dict[str, list[str]] = {}
    for (customer_id, _i), rid in zip(jobs, resource_ids, strict=True):
        owned.setdefault(customer_id, []).append(rid)
    result = []
    for number, customer_id in customers:
        result.append((_psu_id(client, number), owned[customer_id]))
    client.close()
    return result


def _psu_id(client, identity: str) -> str:
    import requests

    from xs2a.psu import PsuContext

    presence = PsuContext(ip_address="198.51.100.7", user_agent="bench", http_method="POST", context="PRIVATE")
    href = client.consents.start(psu=presence).sca_redirect
    browser = requests.Session()
    page = browser.get(href, timeout=30)
    page = sca_post(browser, href, page, identity=identity, action="identify")
    agreement = re.search(r'name="agreement" value="([^"]+)"', page.text)
    if agreement:
        page = sca_post(browser, href, page, agreement=agreement.group(1), action="context")
    accounts = re.findall(r'name="account" value="([^"]+)"', page.text)
    done = sca_post(browser, href, page, account=accounts, action="approve")
    return re.search(r"psu-id=([0-9a-f-]{36})", done.headers["Location"]).group(1)


def portal_accounts_setup(consents: list[tuple[str, list[str]]]) -> list[int]:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import BankAccount
    from connections.crypto import lookup_hash
    from connections.models import BankConnection, ConnectionState

    now = timezone.now()
    user = get_user_model().objects.create_user("bench", "bench@example.com", "bench-password-123")
    rows = []
    for psu_id, resource_ids in consents:
        connection = BankConnection.objects.create(
            user=user,
            context="PRIVATE",
            state=ConnectionState.ACTIVE,
            psu_id=psu_id,
            psu_id_hash=lookup_hash(psu_id),
            sca_at=now,
            consent_valid_until=now + timedelta(days=180),
            accounts_fetched_at=now,
        )
        rows += [
            BankAccount(
                connection=connection,
                resource_id=rid,
                currency="NOK",
                name=f"Konto {rid[-6:]}",
                next_refresh_at=now - timedelta(seconds=1),
            )
            for rid in resource_ids
        ]
    BankAccount.objects.bulk_create(rows, batch_size=1000)
    return list(BankAccount.objects.order_by("pk").values_list("pk", flat=True))


def _worker(queue, results) -> None:
    """A worker process: the refresh task's work for each batch of account ids it is handed; queries counted."""
    from datetime import datetime

    from django.db import connection

    from accounts.refresh import refresh_due

    counted = {"queries": 0}

    def count(execute, sql, params, many, context):
        counted["queries"] += 1
        return execute(sql, params, many, context)

    done = failed = 0
    messages: dict[str, int] = {}
    cpu_started = _cpu(os.getpid())
    with connection.execute_wrapper(count):
        while True:
            job = queue.get()
            if job is None:
                break
            pks, planned = job
            for outcome in refresh_due(account_ids=pks, planned_at=datetime.fromisoformat(planned)).values():
                if outcome.ok:
                    done += 1
                else:
                    failed += 1
                    messages[outcome.message] = messages.get(outcome.message, 0) + 1
    connection.close()
    results.put((done, failed, counted["queries"], messages, _cpu(os.getpid()) - cpu_started))


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def refresh_cycle(
    workers: int, bank_pids: list[int]
) -> tuple[float, int, int, int, dict[str, int], dict[str, object]]:
    """One measured refresh cycle of the portal's Django (set up in this process, its due accounts seeded): the
    planner (``accounts.planner.refresh_plan``) claims every due account and hands its tasks to ``workers``
    forked processes, which run the refresh task's work (``accounts.refresh.refresh_due``) and count their
    database queries. Shared by bench.refresh and bench.refresh_growth.

    Returns (wall time in seconds, accounts refreshed, accounts not refreshed, database queries of the workers,
    {message of a failed refresh: count}, CPU seconds used in the cycle: {"bank": [one per pid of
    ``bank_pids``], "workers": [one per worker], "planner": this process}). ``bank_pids``: the bank's processes
    whose CPU is measured too (none for an in-process bank)."""
    from django.db import connections

    from accounts.planner import refresh_plan

    context = multiprocessing.get_context("fork")
    queue, results = context.Queue(), context.Queue()
    connections.close_all()
    processes = [context.Process(target=_worker, args=(queue, results)) for _ in range(workers)]
    for process in processes:
        process.start()
    bank_started = [_cpu(pid) for pid in bank_pids]
    planner_started = _cpu(os.getpid())
    started = time.perf_counter()
    planned = refresh_plan(enqueue=lambda pks, at: queue.put((pks, at.isoformat())))
    for _ in processes:
        queue.put(None)
    collected = [results.get() for _ in processes]
    elapsed = time.perf_counter() - started
    cpu = {
        "bank": [_cpu(pid) - before for pid, before in zip(bank_pids, bank_started, strict=True)],
        "workers": [c[4] for c in collected],
        "planner": _cpu(os.getpid()) - planner_started,
    }
    for process in processes:
        process.join()
    messages: dict[str, int] = {}
    for _done, _failed, _queries, found, _cpu_used in collected:
        for text, n in found.items():
            messages[text] = messages.get(text, 0) + n
    done = sum(c[0] for c in collected)
    failed = sum(c[1] for c in collected)
    queries = sum(c[2] for c in collected)
    assert planned == done + failed, (planned, done, failed)
    return elapsed, done, failed, queries, messages, cpu


def _direct_reader(args) -> int:
    from datetime import UTC, datetime, timedelta

    from accounts.planner import TASK_ACCOUNTS
    from accounts.sync import UNATTENDED_HISTORY_DAYS
    from xs2a.psu import PsuContext

    client = _bare_client()
    reads = 0
    since = datetime.now(UTC).date() - timedelta(days=UNATTENDED_HISTORY_DAYS)
    for psu_id, rid in args:
        psu = PsuContext(psu_id=psu_id)  # unattended, as in the cycle: the bank does the same counting work
        client.accounts.balances(rid, psu=psu)
        pages = client.accounts.transaction_pages(rid, psu=psu, booking_status="both", date_from=since)
        next(iter(pages))  # the first page, as the cycle reads (one page: the bank's default page size)
        reads += 1
        if reads % TASK_ACCOUNTS == 0:  # connecting afresh as often as the cycle's tasks do
            client.close()
    client.close()
    return reads


def _baseline(consents: list[tuple[str, list[str]]], workers: int) -> float:
    """The same two unattended reads per account (the second of the day, within the bank's allowance) with the
    bare client in ``workers`` processes."""
    from django.db import connections

    pairs = [(psu_id, rid) for psu_id, rids in consents for rid in rids][:BASELINE_SAMPLE]
    chunks = [pairs[i::workers] for i in range(workers)]
    connections.close_all()
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        done = sum(pool.map(_direct_reader, chunks))
    return done / (time.perf_counter() - started)


def _result(figure: str, value: float, unit: str, goal, better: str, baseline=None) -> None:
    ratio = value / baseline if baseline else None
    print(
        "RESULT "
        + json.dumps(
            {
                "figure": figure,
                "value": round(value, 3),
                "unit": unit,
                "goal": goal,
                "better": better,
                "baseline": round(baseline, 3) if baseline is not None else None,
                "ratio": round(ratio, 3) if ratio is not None else None,
            }
        )
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.refresh")
    parser.add_argument("--accounts", type=int, default=int(os.environ.get("BENCH_REFRESH_ACCOUNTS", "1000")))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    rng = random.Random(20261123)

    # The bank's SQLite file (and the portal's, without DATABASE_URL) in memory-backed storage when the machine
    # has it: the figure is about the refresh, not about the disk's fsync.
    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None  # noqa: S108
    with tempfile.TemporaryDirectory(prefix="bench-refresh-", dir=memory) as tmp:
        with running_bank(Path(tmp)) as bank, portal_database(Path(tmp)) as database_url:
            setup_portal(database_url, bank.base_url)
            logging.disable(logging.WARNING)
            from core.models import BankCall

            started = time.perf_counter()
            consents = bank_accounts_setup(args.accounts, rng)
            bank_setup = time.perf_counter() - started
            ids = portal_accounts_setup(consents)
            print(
                f"set-up: {len(ids)} accounts of {len(consents)} customers at the bank and in the portal "
                f"in {time.perf_counter() - started:.1f} s (bank {bank_setup:.1f} s)",
                flush=True,
            )
            BankCall.objects.all().delete()

            import psutil

            bank_pids = [child.pid for child in psutil.Process(bank.process.pid).children()]
            before = _baseline(consents, args.workers)
            elapsed, done, failed, queries, messages, cpu = refresh_cycle(args.workers, bank_pids)
            per_second = done / elapsed
            calls = BankCall.objects.filter(psu_present=False).count()
            refused = BankCall.objects.filter(status=429).count()
            after = _baseline(consents, args.workers)
            baseline = (before + after) / 2

    print(
        f"refresh cycle: {done} accounts refreshed ({failed} not) in {elapsed:.1f} s with {args.workers} workers "
        f"= {per_second:.1f} accounts/s; {calls} unattended bank calls ({refused} answered 429); "
        f"{queries} database queries"
    )
    for text, n in messages.items():
        print(f"  not refreshed ({n}): {text}")
    per_account = 1000 / max(done + failed, 1)
    print(
        "CPU per account in the cycle: bank "
        + " + ".join(f"{seconds * per_account:.2f}" for seconds in cpu["bank"])
        + " ms (its worker processes), portal workers "
        + " + ".join(f"{seconds * per_account:.2f}" for seconds in cpu["workers"])
        + f" ms, planner {cpu['planner'] * per_account:.2f} ms"
    )
    print(
        f"baseline, same run: the same two reads per account with the bare client = {baseline:.1f} accounts/s "
        f"(the mean of {before:.1f} before the cycle and {after:.1f} after it)"
    )
    total = max(done + failed, 1)
    _result("background refresh, accounts per second", per_second, "accounts/s", GOAL, "higher", baseline)
    _result("background refresh, bank calls per account", calls / total, "calls", 2, "lower")
    _result("background refresh, database queries per account", queries / total, "queries", None, "lower")
    if failed or refused:
        raise SystemExit(f"{failed} accounts not refreshed, {refused} bank answers 429")


if __name__ == "__main__":
    main()
