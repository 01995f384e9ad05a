"""Encryption at rest of bank identifiers (PSU-ID, PSU-Corporate-ID), and the keyed hash that finds them.

- ``EncryptedTextField`` stores a Fernet token (AES-128-CBC + HMAC-SHA256, from ``cryptography``) made with a
  ``MultiFernet`` over ``settings.FIELD_ENCRYPTION_KEYS``: the first key encrypts, every key decrypts. To rotate,
  put a new key first, run ``manage.py rotate_field_encryption`` (re-encrypts every value with the first key),
  then drop the old key.
- ``lookup_hash`` is HMAC-SHA256 under ``settings.FIELD_HASH_KEY``: stored beside an encrypted value where the
  portal must find a row by that value (Fernet tokens are randomised, so they cannot be compared).

The settings validate both at start-up; nothing here logs a value.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import models


class DecryptionError(Exception):
    """A stored value cannot be decrypted with any configured key (a key was dropped too early)."""


@functools.lru_cache(maxsize=4)
def _multi_fernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS: at least one Fernet key is required")
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except (ValueError, TypeError):
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEYS: every key must be a Fernet key (32 url-safe base64-encoded bytes)"
        ) from None


def fernet() -> MultiFernet:
    """The MultiFernet of the current settings (cached per key list, so tests may change the settings)."""
    return _multi_fernet(tuple(settings.FIELD_ENCRYPTION_KEYS))


def encrypt(value: str) -> str:
    return fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError) as exc:
        raise DecryptionError("a stored value cannot be decrypted with the configured keys") from exc


def rotate(token: str) -> str:
    """The same value encrypted with the first key (what key rotation writes back)."""
    try:
        return fernet().rotate(token.encode("ascii")).decode("ascii")
    except InvalidToken as exc:
        raise DecryptionError("a stored value cannot be decrypted with the configured keys") from exc


def lookup_hash(value: str | None) -> str:
    """HMAC-SHA256 (hex) of ``value`` under FIELD_HASH_KEY; the empty string for no value."""
    if not value:
        return ""
    key = settings.FIELD_HASH_KEY.encode("utf-8")
    return hmac.new(key, value.strip().lower().encode("utf-8"), hashlib.sha256).hexdigest()


def encrypted_fields() -> dict[type[models.Model], list[models.Field]]:
    """Every model with an EncryptedTextField, and those fields (key rotation must re-encrypt all of them)."""
    from django.apps import apps

    found = {}
    for model in apps.get_models():
        fields = [f for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)]
        if fields and not model._meta.proxy:
            found[model] = fields
    return found


class EncryptedTextField(models.TextField):
    """A text value stored as a Fernet token; Python sees the plain text, the database only the token.

    Not searchable and not orderable by value: keep a ``lookup_hash`` column beside it when a lookup is needed.
    The empty string is stored as is (it is "no value", not a secret).
    """

    description = "Text encrypted at rest with the field encryption keys"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(str(value))

    # Serialisation (dumpdata, fixtures) writes the value encrypted, marked with SERIALIZED_PREFIX, never in
    # clear: a dump is a copy of the database and must keep its secrets. loaddata reads the mark back.
    SERIALIZED_PREFIX = "fernet:"

    def value_to_string(self, obj: models.Model) -> str:
        value = self.value_from_object(obj)
        if value is None or value == "":
            return value
        return self.SERIALIZED_PREFIX + encrypt(str(value))

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(self.SERIALIZED_PREFIX):
            try:
                return decrypt(value.removeprefix(self.SERIALIZED_PREFIX))
            except DecryptionError:
                # Typed text that only looks like a dump, or a dump made with keys no longer configured.
                raise ValidationError("This value cannot be read.", code="undecryptable") from None
        return super().to_python(value)
