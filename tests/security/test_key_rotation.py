"""Key rotation of the field encryption covers EVERY encrypted field of every model (found by walking the
models, so a later EncryptedTextField is covered): after the three steps (new key first, rotate, old key dropped)
every value still reads back, and every stored token is made with the new key."""

from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection as db

from connections.crypto import encrypted_fields
from tests.security.pages import autobuild

pytestmark = pytest.mark.django_db


def stored_tokens(model, names) -> list[str]:
    table = db.ops.quote_name(model._meta.db_table)
    columns = ", ".join(db.ops.quote_name(model._meta.get_field(name).column) for name in names)
    with db.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table}")  # noqa: S608 - names from the model's meta
        return [value for row in cursor.fetchall() for value in row if value]


def test_rotation_re_encrypts_every_encrypted_field_of_every_model(world, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    # The World's rows are encrypted with the current keys; "old" joins them, as the key in use.
    settings.FIELD_ENCRYPTION_KEYS = [old, *settings.FIELD_ENCRYPTION_KEYS]
    fields = encrypted_fields()
    assert {m._meta.label for m in fields} >= {"connections.BankConnection", "payments.Payment"}

    expected = {}
    for model, model_fields in fields.items():
        obj = model._default_manager.order_by("pk").first() or autobuild(world, model)
        assert obj is not None, f"cannot build a {model._meta.label}"
        values = {f.name: f"{model._meta.model_name}-{f.name}-secret-4711" for f in model_fields}
        model._default_manager.filter(pk=obj.pk).update(**values)
        expected[model] = (obj.pk, values)

    settings.FIELD_ENCRYPTION_KEYS = [new, *settings.FIELD_ENCRYPTION_KEYS]  # step 1: the new key first
    call_command("rotate_field_encryption", stdout=io.StringIO())  # step 2
    settings.FIELD_ENCRYPTION_KEYS = [new]  # step 3: the old keys dropped

    for model in fields:  # every row reads back with the new key alone
        list(model._default_manager.values_list(*[f.name for f in fields[model]]))
    for model, (pk, values) in expected.items():
        names = list(values)
        assert model._default_manager.filter(pk=pk).values(*names).get() == values, model._meta.label
        only_new = Fernet(new.encode())
        for token in stored_tokens(model, names):
            only_new.decrypt(token.encode())  # raises InvalidToken if any value kept the old key
