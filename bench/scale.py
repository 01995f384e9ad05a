"""The background refresh over a million accounts in PostgreSQL, by simulation (issue #32, item 5).

``python -m bench.scale [--accounts 1000000] [--ticks 3] [--tasks 20]`` (or BENCH_SCALE_ACCOUNTS). Needs
DATABASE_URL naming a PostgreSQL server: the run makes a temporary database there and drops it afterwards.

- seeded with bulk_create in batches: the accounts on connections of PER_CONNECTION, in the steady state of
  four refreshes a day (each account's next refresh somewhere in the next six hours); one connection in
  DEAD_EVERY needs reconnecting (its accounts parked by the planner, up to a week ahead); the ledger holds
  ``--ledger`` earlier refreshes of each account in the last 24 hours (two rows each; default 2);
- ticks of the planner (``accounts.planner.refresh_plan``) as beat runs it, every 5 minutes of a simulated
  clock: each claims the accounts due in those 5 minutes (about 1/72 of the refreshable ones); printed: the
  accounts enqueued, the planner's wall time and queries per tick, and the plan of its claim statement;
- after each tick, ``--tasks`` of the tick's tasks run the refresh task's work (``accounts.refresh.refresh_due``:
  the claim of its accounts, the ledger, the bank, the storing) against an instant bank (tests/bankfake.py's
  FakeBank behind xs2a's ``http_adapter``); printed: the queries of the task's claim and of the whole task, and
  the task's wall time.

The figures feed docs/scaling.md. Database and portal share the machine's cores: wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bench.portal_setup import PER_CONNECTION, portal_database, setup_portal, synthetic_connection

BATCH = 5000
TICK = timedelta(minutes=5)
BANK_URL = "https://bank.invalid/xs2a"


def _seed(count: int, now, rng: random.Random, refreshes: int) -> None:
    from django.contrib.auth import get_user_model

    from accounts.models import BankAccount, RefreshCall, RefreshKind
    from connections.models import BankConnection, ConnectionState

    user = get_user_model().objects.create_user("scale", "scale@example.com", "scale-password-123")
    interval, parked = 6 * 3600, 7 * 24 * 3600
    connections = []
    for n in range((count + PER_CONNECTION - 1) // PER_CONNECTION):
        connections.append(synthetic_connection(user, n, now))
    connections = BankConnection.objects.bulk_create(connections, batch_size=BATCH)
    for start in range(0, count, BATCH):
        accounts = []
        for i in range(start, min(start + BATCH, count)):
            connection = connections[i // PER_CONNECTION]
            ahead = parked if connection.state != ConnectionState.ACTIVE else interval
            accounts.append(
                BankAccount(
                    connection=connection,
                    resource_id=f"acc-{i:09d}",
                    currency="NOK",
                    name=f"Konto {i}",
                    next_refresh_at=now + timedelta(seconds=rng.uniform(1, ahead)),
                )
            )
        accounts = BankAccount.objects.bulk_create(accounts)
        RefreshCall.objects.bulk_create(
            [
                RefreshCall(
                    account=a,
                    resource_key=RefreshCall.key_for(a),
                    kind=kind,
                    reserved_at=now - timedelta(hours=6 * h + 1),
                )
                for a in accounts
                for h in range(refreshes)
                for kind in (RefreshKind.BALANCES, RefreshKind.TRANSACTIONS)
            ],
            batch_size=BATCH,
        )


class _Counter:
    def __init__(self) -> None:
        self.queries = 0

    def __call__(self, execute, sql, params, many, context):
        self.queries += 1
        return execute(sql, params, many, context)


def _tick(now, tasks: int) -> dict[str, float]:
    from django.db import connection, transaction

    from accounts import refresh
    from accounts.planner import refresh_plan

    chunks: list[list[int]] = []
    counter = _Counter()
    started = time.perf_counter()
    with connection.execute_wrapper(counter):
        enqueued = refresh_plan(now=now, enqueue=lambda pks, at: chunks.append(pks), rng=random.Random(1))
    planner_s = time.perf_counter() - started
    planner_queries = counter.queries
    claim_queries, task_queries, task_s = [], [], []
    for pks in chunks[:tasks]:
        claim = _Counter()
        with connection.execute_wrapper(claim), transaction.atomic():
            refresh._claim(account_ids=pks, kinds=("balances", "transactions"), now=now, not_since=now)
            transaction.set_rollback(True)  # the claim alone, counted; the task below claims for real
        claim_queries.append(claim.queries)
        whole = _Counter()
        started = time.perf_counter()
        with connection.execute_wrapper(whole):
            outcomes = refresh.refresh_due(account_ids=pks, planned_at=now)
        task_s.append(time.perf_counter() - started)
        task_queries.append(whole.queries)
        assert all(o.ok for o in outcomes.values()), {o.message for o in outcomes.values() if not o.ok}
    done = max(len(task_s), 1)
    return {
        "enqueued": enqueued,
        "tasks": len(chunks),
        "planner_ms": planner_s * 1000,
        "planner_queries": planner_queries,
        "claim_queries": sum(claim_queries) / done,
        "task_queries": sum(task_queries) / done,
        "task_ms": sum(task_s) * 1000 / done,
        "accounts_per_task": sum(len(c) for c in chunks[:tasks]) / done,
    }


def _plan_text(now) -> str:
    from django.db import transaction

    from accounts.planner import claimable

    with transaction.atomic():
        return claimable(now=now, new=False).explain()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    parser.add_argument("--accounts", type=int, default=int(os.environ.get("BENCH_SCALE_ACCOUNTS", "1000000")))
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=20, help="tasks of each tick run against the instant bank")
    parser.add_argument("--ledger", type=int, default=2, help="earlier refreshes of each account in the ledger")
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        raise SystemExit("bench.scale needs DATABASE_URL naming a PostgreSQL server")
    rng = random.Random(20261207)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, portal_database(Path(tmp)) as database_url:
        setup_portal(database_url, BANK_URL)
        logging.disable(logging.WARNING)
        from django.utils import timezone

        from accounts.models import BankAccount, RefreshCall
        from core.bank import use_test_bank
        from tests.bankfake import FakeBank

        use_test_bank(FakeBank(prefix="/xs2a"))
        start = timezone.now()
        started = time.perf_counter()
        _seed(args.accounts, start, rng, args.ledger)
        print(
            f"seeded {BankAccount.objects.count()} accounts and {RefreshCall.objects.count()} ledger rows in "
            f"{time.perf_counter() - started:.0f} s (load {os.getloadavg()[0]:.2f})",
            flush=True,
        )
        rows = []
        for n in range(1, args.ticks + 1):
            figures = _tick(start + n * TICK, args.tasks)
            rows.append(figures)
            print(
                f"tick {n}: {figures['enqueued']} accounts due in {figures['tasks']} tasks; planner "
                f"{figures['planner_ms']:.0f} ms and {figures['planner_queries']} queries "
                f"({figures['planner_ms'] * 1000 / max(figures['enqueued'], 1):.0f} µs per account due); "
                f"a task of {figures['accounts_per_task']:.0f} accounts: claim {figures['claim_queries']:.0f} "
                f"queries, whole task {figures['task_queries']:.0f} queries in {figures['task_ms']:.0f} ms; "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        # After the ticks: by then autovacuum has analysed the seeded tables, as in a portal that grew over time.
        plan = _plan_text(start + (args.ticks + 1) * TICK)
        print("the planner's claim statement:\n  " + plan.replace("\n", "\n  "), flush=True)
    due = sum(r["enqueued"] for r in rows) / len(rows)
    planner_ms = sum(r["planner_ms"] for r in rows) / len(rows)
    print(
        f"mean over {len(rows)} ticks at {args.accounts} accounts: {due:.0f} due per tick, planner "
        f"{planner_ms:.0f} ms per tick ({planner_ms * 1000 / max(due, 1):.0f} µs per account due)"
    )


if __name__ == "__main__":
    main()
