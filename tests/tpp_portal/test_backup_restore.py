"""Backup and restore as docs/operations.md tells it: pg_dump of the portal's PostgreSQL database, pg_restore into
a new database, and every encrypted PSU identifier read back with the field keys (and not without them).

Runs only in the PostgreSQL pass (marker ``postgres``): on the server of DATABASE_URL when that names PostgreSQL,
skipped saying so otherwise (it reaches no server the user did not name; `make test QUICK=1` leaves it out). Needs
Debian's postgresql-client (pg_dump, pg_restore; `make test` installs it); it fails saying what is missing. It
makes two databases of its own, tpp_ops2_backup_<pid>_source and _restored, and drops them afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from cryptography.fernet import Fernet
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
PREFIX = f"tpp_ops2_backup_{os.getpid()}"

pytestmark = pytest.mark.postgres


def server_url() -> str:
    """The PostgreSQL server of DATABASE_URL, without a database name (the test is skipped without one)."""
    configured = os.environ.get("DATABASE_URL", "")
    if not configured.startswith(("postgres://", "postgresql://")):
        pytest.skip(
            "runs on PostgreSQL only (marker postgres): set DATABASE_URL to a PostgreSQL server (postgres://...), "
            "as CI's second pass does"
        )
    parts = urlsplit(configured)
    return urlunsplit(("postgresql", parts.netloc, "", "", ""))


def database_url(name: str) -> str:
    return f"{server_url()}/{name}"


@pytest.fixture
def databases():
    server_url()  # skips unless DATABASE_URL names a PostgreSQL server
    missing = [tool for tool in ("pg_dump", "pg_restore") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"the backup test needs {' and '.join(missing)}: install Debian's postgresql-client "
            "(`make test` installs it as root; else apt-get install postgresql-client)"
        )
    try:
        admin = psycopg.connect(f"{server_url()}/postgres", autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"the backup test needs a PostgreSQL server at {server_url()} (user postgres): {exc}")
    names = {"source": f"{PREFIX}_source", "restored": f"{PREFIX}_restored"}
    with admin:
        for name in names.values():
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield names
        finally:
            for name in names.values():
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def portal(database: str, *args: str, keys: dict[str, str]) -> subprocess.CompletedProcess:
    """A portal process (manage.py or the backup data script) on ``database`` with the given field keys."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("FIELD_", "DATABASE_URL"))}
    environment.update(keys, DATABASE_URL=database_url(database), DJANGO_SETTINGS_MODULE="tpp_portal.settings")
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600
    )


def tool(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(list(args), capture_output=True, timeout=600)
    assert done.returncode == 0, f"{args[0]} failed: {done.stderr.decode(errors='replace')}"
    return done


def test_a_dump_restored_into_a_new_database_gives_back_every_psu_identifier_with_the_keys(databases, tmp_path):
    keys = {"FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(), "FIELD_HASH_KEY": os.urandom(32).hex()}
    migrated = portal(databases["source"], "manage.py", "migrate", "--noinput", keys=keys)
    assert migrated.returncode == 0, migrated.stderr
    populated = portal(databases["source"], "-m", "tests.tpp_portal.backup_data", "populate", keys=keys)
    assert populated.returncode == 0, populated.stderr
    written = json.loads(populated.stdout)
    # Every encrypted field of every model holds a value to check (a field added later must be populated too).
    empty = [field for field, values in written.items() if not values]
    assert not empty, f"tests/tpp_portal/backup_data.py populates no value of {empty}"
    secrets = [value for values in written.values() for value in values.values()]

    # The backup, as docs/operations.md says: custom format, no owner (restorable under another role).
    dump = tmp_path / "portal.dump"
    tool("pg_dump", "--format=custom", "--no-owner", f"--file={dump}", database_url(databases["source"]))
    # The dump holds the identifiers encrypted only.
    script = tool("pg_restore", "--file=-", str(dump)).stdout.decode()
    assert "CREATE TABLE public.connections_bankconnection" in script
    assert not [secret for secret in secrets if secret in script], "a PSU identifier is in clear in the dump"

    tool(
        "pg_restore", "--no-owner", "--exit-on-error", f"--dbname={database_url(databases['restored'])}", str(dump)
    )
    restored = portal(databases["restored"], "-m", "tests.tpp_portal.backup_data", "read", keys=keys)
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout) == written

    # Without the keys the restored database is useless: the keys are part of the backup.
    other_keys = {
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "FIELD_HASH_KEY": keys["FIELD_HASH_KEY"],
    }
    unreadable = portal(databases["restored"], "-m", "tests.tpp_portal.backup_data", "read", keys=other_keys)
    assert unreadable.returncode != 0 and "DecryptionError" in unreadable.stderr

    # After a key rotation (new key first, old one kept until rotate_field_encryption has run) the restored
    # database is read with the new key alone.
    rotated = {
        **keys,
        "FIELD_ENCRYPTION_KEYS": f"{other_keys['FIELD_ENCRYPTION_KEYS']},{keys['FIELD_ENCRYPTION_KEYS']}",
    }
    rotation = portal(databases["restored"], "manage.py", "rotate_field_encryption", keys=rotated)
    assert rotation.returncode == 0, rotation.stderr
    after = portal(databases["restored"], "-m", "tests.tpp_portal.backup_data", "read", keys=other_keys)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout) == written
