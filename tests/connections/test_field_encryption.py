"""PSU identifiers are encrypted at rest (MultiFernet, key rotation) with a keyed hash beside them."""

from __future__ import annotations

import io
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.management import call_command
from django.db import connection as db

from connections import crypto
from connections.models import BankConnection
from tests.bank_factories import BankConnectionFactory

ROOT = Path(__file__).resolve().parents[2]
PSU_ID = "6f1c2a9e-3b7d-4c55-9a51-2f0c8e7d1b43"
CORPORATE_ID = "0b8f5e21-7c3a-4d9e-8f61-5a2b9c0d3e74"


def _raw(pk: int) -> tuple[str, str]:
    with db.cursor() as cursor:
        cursor.execute("SELECT psu_id, psu_corporate_id FROM connections_bankconnection WHERE id = %s", [pk])
        return cursor.fetchone()


@pytest.fixture
def two_keys(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    return old, new


def test_the_raw_column_holds_no_identifier(alice):
    connection = BankConnectionFactory(user=alice, psu_id=PSU_ID, psu_corporate_id=CORPORATE_ID)

    raw_id, raw_corporate = _raw(connection.pk)

    assert PSU_ID not in raw_id and PSU_ID.replace("-", "") not in raw_id
    assert CORPORATE_ID not in raw_corporate
    assert raw_id.startswith("gAAAAA")  # a Fernet token
    assert BankConnection.objects.get(pk=connection.pk).psu_id == PSU_ID
    assert BankConnection.objects.get(pk=connection.pk).psu_corporate_id == CORPORATE_ID


def test_the_same_value_encrypts_differently_each_time_so_lookups_use_the_keyed_hash(alice, settings):
    first = BankConnectionFactory(user=alice, psu_id=PSU_ID, psu_id_hash=crypto.lookup_hash(PSU_ID))
    assert crypto.encrypt(PSU_ID) != crypto.encrypt(PSU_ID)
    assert BankConnection.objects.get(psu_id_hash=crypto.lookup_hash(PSU_ID)) == first
    # The hash is keyed: without FIELD_HASH_KEY it cannot be recomputed from a guessed PSU-ID.
    digest = crypto.lookup_hash(PSU_ID)
    settings.FIELD_HASH_KEY = secrets.token_urlsafe(40)
    assert crypto.lookup_hash(PSU_ID) != digest


def test_key_rotation_old_key_still_decrypts_new_key_encrypts(alice, settings, two_keys):
    old, new = two_keys
    connection = BankConnectionFactory(user=alice, psu_id=PSU_ID)
    old_token = _raw(connection.pk)[0]
    assert Fernet(old.encode()).decrypt(old_token.encode()).decode() == PSU_ID

    settings.FIELD_ENCRYPTION_KEYS = [new, old]  # step 1: the new key first

    assert BankConnection.objects.get(pk=connection.pk).psu_id == PSU_ID  # the old key still decrypts
    second = BankConnectionFactory(user=alice, psu_id=CORPORATE_ID)
    new_token = _raw(second.pk)[0]
    assert Fernet(new.encode()).decrypt(new_token.encode()).decode() == CORPORATE_ID  # the new key encrypts
    with pytest.raises(InvalidToken):  # not made with the old key
        Fernet(old.encode()).decrypt(new_token.encode())

    output = io.StringIO()
    call_command("rotate_field_encryption", stdout=output)  # step 2: re-encrypt with the first key
    assert "re-encrypted 2 row(s)" in output.getvalue()
    settings.FIELD_ENCRYPTION_KEYS = [new]  # step 3: the old key is dropped

    assert BankConnection.objects.get(pk=connection.pk).psu_id == PSU_ID
    assert BankConnection.objects.get(pk=second.pk).psu_id == CORPORATE_ID


def test_a_value_whose_key_was_dropped_fails_loudly(alice, settings, two_keys):
    _old, new = two_keys
    connection = BankConnectionFactory(user=alice, psu_id=PSU_ID)
    settings.FIELD_ENCRYPTION_KEYS = [new]

    with pytest.raises(crypto.DecryptionError):
        BankConnection.objects.get(pk=connection.pk)


def _check(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "SECRET_KEY", "FIELD_"))
    }
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


PRODUCTION = {
    "DJANGO_ENV": "production",
    "SECRET_KEY": secrets.token_urlsafe(64),
    "ALLOWED_HOSTS": "portal.example.com",
    "BANK_BASE_URL": "https://bank.example.com/psd2",
    "PORTAL_BASE_URL": "https://portal.example.com",
    "EMAIL_URL": "smtp+tls://mailer:mail-password@smtp.example.com:587",
    "BANK_RESPONSE_CERT": str(ROOT / "var/pki/bank-signing.pem"),
}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FIELD_ENCRYPTION_KEYS": "not-a-fernet-key"}, "FIELD_ENCRYPTION_KEYS: every key must be a Fernet key"),
        ({"FIELD_HASH_KEY": "short"}, "FIELD_HASH_KEY: must be at least 32 characters"),
        (
            {**PRODUCTION, "FIELD_HASH_KEY": secrets.token_urlsafe(40)},
            "FIELD_ENCRYPTION_KEYS: required in production",
        ),
        (
            {**PRODUCTION, "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode()},
            "FIELD_HASH_KEY: required in production",
        ),
    ],
)
def test_settings_refuse_bad_or_missing_keys_naming_the_variable(env, message):
    result = _check(**env)
    assert result.returncode != 0
    assert message in result.stderr + result.stdout


def test_production_starts_with_both_keys():
    keys = f"{Fernet.generate_key().decode()},{Fernet.generate_key().decode()}"
    result = _check(
        "--deploy",
        "--fail-level",
        "WARNING",
        **PRODUCTION,
        FIELD_ENCRYPTION_KEYS=keys,
        FIELD_HASH_KEY=secrets.token_urlsafe(40),
    )
    assert result.returncode == 0, result.stderr[-2000:]
