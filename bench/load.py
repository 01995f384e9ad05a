"""Load test of the whole product: many users browsing their accounts and submitting payments (Locust, headless)
while the background refresh runs for every connected account; then the books are checked.

``python -m bench.load [--users N] [--connections C] [--seconds S] [--requests R]`` starts the whole product as
processes (tests/product.py: sandbox bank, portal under gunicorn, Celery worker and beat; loopback only),
connects C portal users to the bank (each through the real SCA screens; each connection brings 3 accounts),
makes every account's unattended refresh due and lets the planner enqueue them, and at the same time runs Locust
with N simulated users for at most S seconds and R requests (tests/load/locustfile.py). It prints throughput,
median and 95th percentile latency and the error count (RESULT lines, bench/report.py), then checks:

* every payment the portal sent exists exactly once at the bank (its X-Request-ID), and nothing at the bank is
  unknown to the portal;
* no account was called unattended beyond its allowance (UNATTENDED_CALLS_PER_DAY per kind in 24 hours),
  counted at the bank, and the bank never answered 429.

Accounts: the connections alternate between two sandbox customers (3 accounts each), so C connections give 3*C
portal accounts on 6 bank accounts; the bank allows UNATTENDED_CALLS_PER_DAY unattended calls per bank account and
kind, so at most 24 of them can be refreshed unattended in a day however many portal users share them (the
"within the allowance" figure). 10 000 distinct accounts would need that many sandbox accounts and about 3 300
connections made through SCA one by one: not done here.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.report import emit

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "load test password 7"  # noqa: S105 - test users of a throwaway database
IDENTITIES = ("13039319955", "12085592767")  # Private Customers 1 and 2 (facts.md section 1)


@dataclass
class LoadReport:
    requests: int
    failures: int
    throughput: float  # requests per second
    median_ms: float
    p95_ms: float
    payments_sent: int
    accounts: int
    refreshed_accounts: int
    refreshable_accounts: int  # within the bank's allowance: UNATTENDED_CALLS_PER_DAY per distinct bank account
    refresh_rate: float  # accounts refreshed unattended per second since the plan (a lower bound: checked late)
    problems: list[str] = field(default_factory=list)
    failure_lines: list[str] = field(default_factory=list)


_PLAN = """
from django.utils import timezone
from accounts.models import BankAccount
from accounts.refresh import refresh_plan
BankAccount.objects.update(next_refresh_at=timezone.now())
result = refresh_plan()
"""

_REFRESHED = """
from accounts.models import BankAccount
result = [
    BankAccount.objects.count(),
    BankAccount.objects.filter(refresh_calls__isnull=False).distinct().count(),
    BankAccount.objects.values("kind", "resource_id").distinct().count(),
]
"""


def _aggregated(stats_csv: Path) -> dict[str, str]:
    with stats_csv.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["Name"] == "Aggregated":
                return row
    raise RuntimeError(f"no Aggregated row in {stats_csv}")


def run_load(
    directory: Path,
    *,
    users: int = 20,
    connections: int = 10,
    seconds: int = 30,
    max_requests: int = 5000,
    redis: str = "own",
    worker_concurrency: int = 2,
) -> LoadReport:
    from accounts.models import UNATTENDED_CALLS_PER_DAY
    from tests.product import connect_bank, sign_in, users_create, whole_product

    with whole_product(
        directory,
        redis=redis,
        bank_timeout=10.0,
        web_workers=2,
        web_threads=8,
        worker_concurrency=worker_concurrency,
    ) as product:
        names = [f"load{i}" for i in range(connections)]
        users_create(product, "load", connections, PASSWORD)

        def connect(index: int) -> None:
            session = sign_in(product, names[index], PASSWORD)
            page = connect_bank(product, session, identity=IDENTITIES[index % len(IDENTITIES)])
            if page.status_code != 200:
                raise RuntimeError(f"connecting {names[index]}: {page.status_code}")

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(connect, range(connections)))
        planned = product.django(_PLAN)
        planned_at = time.monotonic()
        print(f"{connections} connections, {planned} unattended refreshes enqueued", flush=True)

        prefix = directory / "locust"
        env = {
            **os.environ,
            "LOAD_USERS": ",".join(names),
            "LOAD_PASSWORD": PASSWORD,
            "PYTHONPATH": str(ROOT),
        }
        command = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(ROOT / "tests" / "load" / "locustfile.py"),
            "--headless",
            "--host",
            product.portal_url,
            "--users",
            str(users),
            "--spawn-rate",
            str(max(1, users // 2)),
            "--run-time",
            f"{seconds}s",
            "--stop-timeout",
            "10",
            "--csv",
            str(prefix),
            "--only-summary",
            "--loglevel",
            "WARNING",
        ]
        started = time.monotonic()
        locust = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        stats_csv = prefix.with_name(prefix.name + "_stats.csv")
        # Bounded in requests too: stop Locust (SIGINT writes its report) once max_requests were made.
        while locust.poll() is None:
            time.sleep(1)
            if stats_csv.exists():
                try:
                    made = int(_aggregated(stats_csv)["Request Count"])
                except (RuntimeError, KeyError, ValueError):
                    made = 0
                if made >= max_requests:
                    locust.send_signal(2)
                    break
            if time.monotonic() - started > seconds + 60:
                locust.kill()
                raise RuntimeError("Locust did not stop in time")
        output = locust.communicate(timeout=60)[0].decode(errors="replace")
        aggregated = _aggregated(stats_csv)
        failures_csv = prefix.with_name(prefix.name + "_failures.csv")
        failure_lines = failures_csv.read_text().splitlines()[1:] if failures_csv.exists() else []

        # Let the worker finish what the planner enqueued, then check the books.
        deadline = time.monotonic() + 60
        accounts, refreshed, at_bank = product.django(_REFRESHED)
        # The bank allows UNATTENDED_CALLS_PER_DAY per bank account (several portal users may share one): the
        # accounts that can be refreshed unattended today are at most that many per bank account.
        expected = min(accounts, UNATTENDED_CALLS_PER_DAY * at_bank)
        while refreshed < expected and time.monotonic() < deadline:
            time.sleep(2)
            accounts, refreshed, at_bank = product.django(_REFRESHED)
        refresh_seconds = time.monotonic() - planned_at
        problems = _check_books(product, UNATTENDED_CALLS_PER_DAY)
        sent = product.scalar("SELECT count(*) FROM payments_payment WHERE payment_id <> ''")
        report = LoadReport(
            requests=int(aggregated["Request Count"]),
            failures=int(aggregated["Failure Count"]),
            throughput=float(aggregated["Requests/s"]),
            median_ms=float(aggregated["Median Response Time"]),
            p95_ms=float(aggregated["95%"]),
            payments_sent=sent,
            accounts=accounts,
            refreshed_accounts=refreshed,
            refreshable_accounts=expected,
            refresh_rate=refreshed / refresh_seconds if refresh_seconds > 0 else 0.0,
            problems=problems,
            failure_lines=failure_lines,
        )
        if report.requests == 0:
            report.problems.append(f"Locust made no request:\n{output[-3000:]}")
        return report


def _check_books(product, allowance: int) -> list[str]:
    problems = []
    portal = dict(
        product.sql("SELECT request_id, payment_id FROM payments_payment WHERE submitted_at IS NOT NULL")
    )
    portal = {str(key).replace("-", ""): value for key, value in portal.items()}
    at_bank: dict[str, int] = {}
    for (request_id,) in product.bank_sql("SELECT request_id FROM pis_payment"):
        key = request_id.replace("-", "")
        at_bank[key] = at_bank.get(key, 0) + 1
    for key, count in at_bank.items():
        if count != 1:
            problems.append(f"the bank has {count} payments for X-Request-ID {key}")
        if key not in portal:
            problems.append(f"the bank has a payment the portal does not know (X-Request-ID {key})")
    for key, payment_id in portal.items():
        if payment_id and at_bank.get(key) != 1:
            problems.append(
                f"payment {payment_id} (X-Request-ID {key}) is at the bank {at_bank.get(key, 0)} times"
            )
    for account_id, kind, calls in product.bank_sql(
        "SELECT account_id, kind, count(*) FROM bank_simulator_unattendedaccess "
        "WHERE at > datetime('now', '-1 day') GROUP BY account_id, kind"
    ):
        if calls > allowance:
            problems.append(f"bank account {account_id}: {calls} unattended {kind} calls in 24 h (> {allowance})")
    too_many = [s for s in product.proxy.seen if s.status == 429]
    if too_many:
        problems.append(f"the bank answered 429 {len(too_many)} times: {too_many[:3]}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20, help="simulated Locust users")
    parser.add_argument("--connections", type=int, default=10, help="portal users connected to the bank")
    parser.add_argument("--seconds", type=int, default=30, help="Locust run time")
    parser.add_argument("--requests", type=int, default=5000, help="stop after this many requests")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="Celery worker processes")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")
    import django

    django.setup()
    with tempfile.TemporaryDirectory(prefix="bench-load-") as directory:
        report = run_load(
            Path(directory),
            users=args.users,
            connections=args.connections,
            seconds=args.seconds,
            max_requests=args.requests,
            worker_concurrency=args.worker_concurrency,
            redis="own" if shutil.which("redis-server") else "none",
        )
    print(
        f"load: {args.users} users for {args.seconds} s, {report.accounts} accounts "
        f"({report.refreshed_accounts} refreshed in the background, of {report.refreshable_accounts} within the "
        f"bank's allowance): {report.requests} requests, "
        f"{report.failures} failed, {report.payments_sent} payments sent"
    )
    for line in report.failure_lines[:10]:
        print("  failure:", line)
    for problem in report.problems:
        print("  PROBLEM:", problem)
    emit(
        "load: portal throughput (browsing and paying, refresh running)",
        report.throughput,
        "req/s",
        better="higher",
    )
    emit("load: median latency", report.median_ms, "ms", better="lower")
    emit("load: background refresh rate under load", report.refresh_rate, "accounts/s", better="higher")
    emit("load: 95th percentile latency", report.p95_ms, "ms", better="lower", goal=2000)
    emit("load: failed requests", report.failures, "requests", better="lower", goal=0)
    emit(
        "load: book problems (duplicates, lost payments, budget overruns)",
        len(report.problems),
        "problems",
        better="lower",
        goal=0,
    )
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
