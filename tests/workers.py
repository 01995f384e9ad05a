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

Without pytest-xdist, or in its controlling process, the Redis database and the metric folder stay as named.

The order of the tests is a third thing. A test that commits (``transaction=True``, ``live_server``) ends with a
flush of its database, which removes what the migrations wrote (the staff roles, the seeded exchange rates, ...).
pytest-django runs such tests after the others, but pytest-xdist hands each process a module at a time, so in a
process a flushing test may come before a test that needs those rows. A flushing test therefore must ask for
``serialized_rollback`` (the migrations' rows are read once, at set-up) and, after its flush, they are written
back (with or without pytest-xdist); one that does not ask fails with the reason.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import pytest
from pytest_django.fixtures import validate_django_db
from pytest_django.plugin import blocking_manager_key

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


def flushes(item: pytest.Item) -> bool:
    """Whether the test's database is flushed at its end (it commits, as a TransactionTestCase)."""
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    transaction, reset_sequences, _databases, _serialized, _apps = (
        validate_django_db(marker) if marker else (0,) * 5
    )
    return bool(transaction or reset_sequences) or "transactional_db" in fixtures or "live_server" in fixtures


def restores(item: pytest.Item) -> bool:
    """Whether the test asks for the migrations' rows to be kept (``serialized_rollback``)."""
    marker = item.get_closest_marker("django_db")
    asked = bool(marker and validate_django_db(marker)[3])
    return asked or "django_db_serialized_rollback" in getattr(item, "fixturenames", ())


#: The migrations' rows of each test database as pytest-django read them at set-up (serialized_rollback), by alias.
MIGRATED_ROWS = pytest.StashKey[dict[str, str]]()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Right after the test databases are made: keep what pytest-django read of them. It holds it on the
    connection object only, and once the browser fixture has started Playwright, the tests get other connection
    objects, which have none (tests/browser/fixtures.py says why)."""
    result = yield
    if fixturedef.argname == "django_db_setup":
        from django.db import connections

        kept = request.config.stash.setdefault(MIGRATED_ROWS, {})
        for connection in connections.all():
            contents = getattr(connection, "_test_serialized_contents", None)
            if contents:
                kept[connection.alias] = contents
    return result


def restore_migrated_rows(config: pytest.Config) -> None:
    """Write the migrations' rows, read at set-up, back into every test database, emptied first. A CI run wrote
    them back after browser tests into content types that were there already ("duplicate key ...
    django_content_type"): the test's flush had recreated them (post_migrate, with other ids), because the
    connection object in use while Playwright runs does not hold the rows that make Django leave that out."""
    from django.core.management import call_command
    from django.db import connections

    kept = config.stash.get(MIGRATED_ROWS, {})
    if not kept:
        raise RuntimeError("no rows of the migrations were kept at set-up: nothing to write back after the flush")
    with config.stash[blocking_manager_key].unblock():
        for alias, contents in kept.items():
            call_command(
                "flush",
                verbosity=0,
                interactive=False,
                database=alias,
                inhibit_post_migrate=True,
                reset_sequences=False,  # the rows come back with their ids, which the sequences have passed
            )
            connection = connections[alias]
            connection._test_serialized_contents = contents  # for pytest-django's own restore at the next set-up
            connection.creation.deserialize_db_from_string(contents)


def pytest_runtest_setup(item):
    if flushes(item) and not restores(item):
        pytest.fail(
            "this test commits, and its database is flushed at its end: mark it "
            "@pytest.mark.django_db(transaction=True, serialized_rollback=True), so that the rows the migrations "
            "wrote are written back for the tests after it (tests/workers.py)",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a flushing test's teardown (its flush): the migrations' rows back. Not after the process's last test,
    whose teardown removes the test databases."""
    try:
        return (yield)
    finally:
        if nextitem is not None and flushes(item) and restores(item):
            restore_migrated_rows(item.config)
