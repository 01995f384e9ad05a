"""pytest plugin (loaded from pyproject's addopts): the test processes of one run share nothing that one of them
counts or consumes.

``make test`` runs the tests in several processes (pytest-xdist's workers, ``TEST_WORKERS``). Each test database
is the worker's own already (pytest-django adds the worker's name to it), and so is every product a test starts
(its own directory, database and ports). Two things would still be shared:

- **the machine's Redis** (``REDIS_URL``): the broker and the cache of the test process and of every product
  started with ``redis="env"`` (the end-to-end suite). A worker of one product would consume the tasks another
  product sent. Each test process therefore takes the Redis database of its own number after ``REDIS_URL``'s
  (``gw0`` the one named, ``gw1`` the next, ...), before the settings are read;
- **the metric files** (``METRICS_DIR``): a test counts what its calls added between two scrapes, and another
  process's calls in between would be counted with them. Each test process reads and writes a folder of its own
  under it (removed with it by ``make test``).

Without pytest-xdist, or in its controlling process, nothing changes.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import pytest

#: The Redis databases a server has unless configured otherwise (0-15).
REDIS_DATABASES = 16
#: The production smoke test's own Redis database (tests/production/test_smoke.py), never a worker's.
SMOKE_REDIS_DATABASE = 13


def worker_name() -> str | None:
    """``gw0``, ``gw1``, ... in a pytest-xdist worker, else None."""
    return os.environ.get("PYTEST_XDIST_WORKER") or None


def worker_redis_url(url: str, worker: str) -> str:
    """``url`` with the Redis database of this worker: the one named plus the worker's number."""
    parts = urlsplit(url)
    named = int(parts.path.strip("/") or 0)
    database = named + int(worker.removeprefix("gw"))
    if database >= REDIS_DATABASES or named <= SMOKE_REDIS_DATABASE <= database:
        raise pytest.UsageError(
            f"REDIS_URL's database {named} and {worker} give database {database}: use fewer TEST_WORKERS or a "
            f"lower database, so that each worker has one of its own below {REDIS_DATABASES} and none takes "
            f"{SMOKE_REDIS_DATABASE} (the production smoke test's)"
        )
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before pytest-django reads the settings: this worker's Redis database."""
    worker = worker_name()
    if worker and os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], worker)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """After the settings are read: this worker's metric folder, in this process only (the products a test
    starts keep their own)."""
    worker = worker_name()
    if not worker:
        return
    from django.conf import settings

    if settings.configured and hasattr(settings, "METRICS_DIR"):
        settings.METRICS_DIR = settings.METRICS_DIR / worker
