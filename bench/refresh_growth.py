"""Does the background refresh cost more per account when the portal holds more accounts? (issue #32, item 4)

``python -m bench.refresh_growth [--sizes 1000,10000,100000] [--due 1000] [--workers 2]`` (or
BENCH_GROWTH_SIZES). The bank answers at once, in-process: tests/bankfake.py's FakeBank behind xs2a's
``http_adapter`` (``core.bank.use_test_bank``), so the CPU measured is the portal's (the fake's own few lines run
in the workers too). One database grows from the smallest size to the largest; at each size the same number of
accounts (``--due``) is due, the others are planned later in the six hours (as four refreshes a day leave them),
and every account has the ledger rows of two earlier refreshes in the last 24 hours. At each size: the planner
(``accounts.planner.refresh_plan``) claims the due accounts and W worker processes run the refresh task's work
(``bench.refresh.refresh_cycle``); measured the CPU of the workers and of the planner per refreshed account and the
queries per account. Reported: each size's figures and the ratio largest / smallest (goal at most 1.2).

Runs on a temporary PostgreSQL database when DATABASE_URL names a server, else a SQLite file.
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
from bench.refresh import refresh_cycle
from bench.report import emit

GOAL = 1.2  # CPU per account at the largest size / at the smallest
BANK_URL = "https://bank.invalid/xs2a"


def _grow(upto: int, rng: random.Random) -> None:
    """Add accounts (on connections of PER_CONNECTION) until the portal holds ``upto``, each planned later in the
    interval and with two earlier refreshes in the ledger."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import BankAccount, RefreshCall, RefreshKind
    from connections.models import BankConnection, ConnectionState

    now = timezone.now()
    user = get_user_model().objects.first() or get_user_model().objects.create_user(
        "bench", "bench@example.com", "bench-password-123"
    )
    have = BankAccount.objects.count()
    while have < upto:
        n = min(PER_CONNECTION, upto - have)
        # One connection in DEAD_EVERY lost its consent: its accounts were due when it did, and stay so.
        connection = synthetic_connection(user, BankConnection.objects.count(), now)
        connection.save()
        dead = connection.state != ConnectionState.ACTIVE
        accounts = BankAccount.objects.bulk_create(
            [
                BankAccount(
                    connection=connection,
                    resource_id=f"acc-{have + i:09d}",
                    currency="NOK",
                    name=f"Konto {have + i}",
                    next_refresh_at=now + timedelta(seconds=rng.uniform(600, 6 * 3600) * (-1 if dead else 1)),
                )
                for i in range(n)
            ]
        )
        calls = [
            RefreshCall(
                account=a, resource_key=RefreshCall.key_for(a), kind=kind, reserved_at=now - timedelta(hours=h)
            )
            for a in accounts
            for h in (7, 13)
            for kind in (RefreshKind.BALANCES, RefreshKind.TRANSACTIONS)
        ]
        RefreshCall.objects.bulk_create(calls, batch_size=2000)
        have += n


def _make_due(count: int, rng: random.Random) -> None:
    """``count`` accounts that have not been refreshed in this run, due now."""
    from django.utils import timezone

    from accounts.models import BankAccount
    from connections.models import ConnectionState

    fresh = list(
        BankAccount.objects.filter(
            balances_refreshed_at__isnull=True, connection__state=ConnectionState.ACTIVE
        ).values_list("pk", flat=True)
    )
    chosen = rng.sample(fresh, min(count, len(fresh)))
    BankAccount.objects.filter(pk__in=chosen).update(next_refresh_at=timezone.now() - timedelta(seconds=1))


def _idle_tick() -> float:
    """The wall time of a planner tick when nothing is due (the database's part included), the best of three."""
    from accounts.planner import refresh_plan

    times = []
    for _ in range(3):
        started = time.perf_counter()
        planned = refresh_plan(enqueue=lambda pks, at: None)
        times.append(time.perf_counter() - started)
        assert planned == 0, planned
    return min(times)


def _measure(size: int, due: int, workers: int, rng: random.Random) -> dict[str, float]:
    from accounts.models import BalanceSnapshot, RefreshCall, Transaction
    from accounts.planner import refresh_plan
    from core.models import BankCall

    tables = (BankCall, BalanceSnapshot, RefreshCall, Transaction)

    # A tick first, as beat runs one every 5 minutes: what fell due while the data grew is planned, so that the
    # measured tick holds the accounts due in 5 minutes of a steady portal (those made due just below).
    refresh_plan(enqueue=lambda pks, at: None)
    _make_due(due, rng)
    calls_before = BankCall.objects.filter(psu_present=False).count()
    rows_before = [model.objects.count() for model in tables]
    load = os.getloadavg()[0]
    elapsed, done, failed, queries, messages, cpu = refresh_cycle(workers, [])
    idle = _idle_tick()
    total = max(done + failed, 1)
    calls = BankCall.objects.filter(psu_present=False).count() - calls_before
    written = {
        model._meta.model_name: (model.objects.count() - before) / total
        for model, before in zip(tables, rows_before, strict=True)
    }
    figures = {
        "calls": calls / total,
        "size": size,
        "refreshed": done,
        "failed": failed,
        "workers_ms": sum(cpu["workers"]) * 1000 / total,
        "planner_ms": cpu["planner"] * 1000 / total,
        "queries": queries / total,
        "elapsed": elapsed,
        "load": load,
        "idle_tick_ms": idle * 1000,
    }
    figures["portal_ms"] = figures["workers_ms"] + figures["planner_ms"]
    print(
        f"{size:>7} accounts, {done} refreshed ({failed} not) in {elapsed:.1f} s: portal CPU "
        f"{figures['portal_ms']:.2f} ms per account (workers {figures['workers_ms']:.2f}, planner "
        f"{figures['planner_ms']:.2f}); {figures['queries']:.1f} queries and "
        f"{figures['calls']:.1f} bank calls per account; "
        f"a planner tick with nothing due {idle * 1000:.1f} ms; load {load:.2f}",
        flush=True,
    )
    for text, n in messages.items():
        print(f"  not refreshed ({n}): {text}")
    print("  rows written per account: " + ", ".join(f"{name} {n:.1f}" for name, n in written.items()))
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.refresh_growth")
    parser.add_argument("--sizes", default=os.environ.get("BENCH_GROWTH_SIZES", "1000,10000,100000"))
    parser.add_argument("--due", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rng = random.Random(20261207)
    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None  # noqa: S108
    with tempfile.TemporaryDirectory(prefix="bench-growth-", dir=memory) as tmp:
        with portal_database(Path(tmp)) as database_url:
            setup_portal(database_url, BANK_URL)
            logging.disable(logging.WARNING)
            from core.bank import use_test_bank
            from tests.bankfake import FakeBank

            use_test_bank(FakeBank(prefix="/xs2a"))  # inherited by the forked workers
            rows = []
            for size in sizes:
                started = time.perf_counter()
                _grow(size, rng)
                print(f"grown to {size} accounts in {time.perf_counter() - started:.1f} s", flush=True)
                rows.append(_measure(size, min(args.due, size), args.workers, rng))
    first, last = rows[0], rows[-1]
    ratio = last["portal_ms"] / first["portal_ms"]
    print(
        f"portal CPU per refreshed account, {last['size']} / {first['size']} accounts: {ratio:.2f} "
        f"(goal <= {GOAL}); queries per account {first['queries']:.1f} -> {last['queries']:.1f}"
    )
    emit(
        f"background refresh, portal CPU per account, {last['size']} / {first['size']} accounts (instant bank)",
        ratio,
        "x",
        better="lower",
        goal=GOAL,
    )
    emit(
        f"background refresh, planner tick with nothing due at {last['size']} accounts",
        last["idle_tick_ms"],
        "ms",
        better="lower",
        baseline=first["idle_tick_ms"],
    )
    print(
        f"a planner tick with nothing due: {first['idle_tick_ms']:.1f} ms at {first['size']} accounts, "
        f"{last['idle_tick_ms']:.1f} ms at {last['size']}"
    )


if __name__ == "__main__":
    main()
