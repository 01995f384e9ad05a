"""``python -m bench`` (``make bench``): runs every benchmark module of this package, then prints one table.

Each module measures its figures (and, where it has one, a baseline in the same run), prints its human text and one
``RESULT {json}`` line per figure (bench/report.py). Each runs in its own interpreter, so that one benchmark's set-
up (Django settings, logging) cannot slow another down; its output is shown as it comes. At the end the table
figure | value | goal | met | ratio gathers every figure of the run. ``python -m bench NAME ...`` runs only the
named ones. The modules of LATENCY_RUNS run once more with the sandbox bank answering in 150 ms
(``BANK_SIM_LATENCY_MS=150``), as a real bank does: the table shows both. The exit status is 1 when a module failed
or printed no RESULT line; a goal not met is reported in the table, not as a failure (a benchmark is not a timed
test).
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path

from bench.report import Result, parse, table

# Modules of this package that measure nothing, and the simulation of docs/scaling.md (python -m bench.scale:
# a million rows in PostgreSQL, no goal of its own).
NOT_BENCHMARKS = {"report", "portal_setup", "scale"}
#: Run again with the bank's answers delayed, as a real bank's are (their figures name the latency).
LATENCY_RUNS = {"payments_initiation": "150"}


def modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name
        for m in pkgutil.iter_modules([str(here)])
        if not m.name.startswith("_") and m.name not in NOT_BENCHMARKS
    )


def run(name: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``bench.NAME`` in its own interpreter (with ``env`` added to the environment), echoing its output; its
    exit status and output."""
    process = subprocess.Popen(
        [sys.executable, "-m", f"bench.{name}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    return process.wait(), "".join(lines)


def main(argv: list[str]) -> int:
    chosen = argv or modules()
    unknown = set(chosen) - set(modules())
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; available: {', '.join(modules())}")
        return 2
    rows: list[tuple[str, Result]] = []
    failed = []
    runs = [(name, {}) for name in chosen]
    runs += [(name, {"BANK_SIM_LATENCY_MS": ms}) for name, ms in LATENCY_RUNS.items() if name in chosen]
    for name, env in runs:
        print(f"== bench.{name} {' '.join(f'{k}={v}' for k, v in env.items())} ==", flush=True)
        started = time.perf_counter()
        status, output = run(name, env)
        print(f"(bench.{name} took {time.perf_counter() - started:.1f} s)\n", flush=True)
        try:
            results = parse(output)
        except ValueError as exc:
            print(f"bench.{name}: {exc}")
            results = []
        if status != 0 or not results:
            failed.append(f"bench.{name} ({'exit status ' + str(status) if status else 'no RESULT line'})")
        rows.extend((name, result) for result in results)
    print(table(rows))
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
