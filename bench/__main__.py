"""``python -m bench`` (``make bench``): runs every benchmark module of this package in turn.

Each module has a ``main()`` that measures its figures and a baseline in the same run and prints them. Each runs
in its own interpreter, so that one benchmark's set-up (Django settings, logging) cannot slow another down.
``python -m bench NAME ...`` runs only the named ones.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import time
from pathlib import Path


def modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    chosen = argv or modules()
    unknown = set(chosen) - set(modules())
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; available: {', '.join(modules())}")
        return 2
    for name in chosen:
        print(f"== bench.{name} ==", flush=True)
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", f"bench.{name}"], check=False)
        print(f"(bench.{name} took {time.perf_counter() - started:.1f} s)\n", flush=True)
        if result.returncode != 0:
            print(f"bench.{name} failed with exit status {result.returncode}")
            return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
