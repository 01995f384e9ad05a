"""A pytest of its own, for the tests of the test set-up itself (tests/test_workers.py,
tests/browser/test_fixtures.py): what happens between tests and at a session's end is seen only from outside."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(
    directory: Path, files: Mapping[str, str], *, database: str, args: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Write ``files`` into ``directory`` and run pytest there on the portal's settings, in a process of its own.

    Its environment is this one without pytest's and pytest-xdist's variables and without the run's Redis. On
    PostgreSQL when the tests are (the same server, its test database named after ``database`` and this process,
    so that parallel runs keep apart), else on SQLite."""
    for name, text in files.items():
        (directory / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DATABASE_URL", "REDIS_URL"))}
    env["PYTHONPATH"] = str(ROOT)
    server = os.environ.get("DATABASE_URL", "")
    if server.startswith("postgres"):
        env["DATABASE_URL"] = urlunsplit(urlsplit(server)._replace(path=f"/{database}_{os.getpid()}"))
    command = [sys.executable, "-m", "pytest", "--ds=tpp_portal.settings", "-p", "no:cacheprovider", "-rA", *args]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=240)
