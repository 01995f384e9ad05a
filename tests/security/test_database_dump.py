"""A dump of the database holds no PSU identifier in clear: after real connections through the sandbox bank
(private and corporate, with a refresh of balances and transactions), neither ``manage.py dumpdata`` nor a raw
dump of every table (what pg_dump or a copy of the SQLite file would hold) contains the PSU-ID, the
PSU-Corporate-ID or the identity number typed at the bank; nor does the log."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import call_command
from django.db import connection as db

from connections.models import BankConnection
from tests.live_bank import PRIVATE_1, portal_connect

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.live_bank]


def raw_dump() -> str:
    """Every row of every table, as the database stores it."""
    lines = []
    with db.cursor() as cursor:
        for table in sorted(db.introspection.table_names(cursor)):
            cursor.execute(f"SELECT * FROM {db.ops.quote_name(table)}")  # noqa: S608 - names from introspection
            lines.extend(f"{table}: {row!r}" for row in cursor.fetchall())
    return "\n".join(lines)


def forms_of(identifier: str) -> set[str]:
    """The identifier as text in the ways it could be written: as is, without dashes, upper case."""
    return {identifier, identifier.replace("-", ""), identifier.upper()}


def test_no_psu_identifier_in_clear_in_a_dump_or_the_log(live_bank, alice, alice_client, caplog):
    caplog.set_level(logging.DEBUG)
    private, _ = portal_connect(alice_client, context="PRIVATE")
    corporate, _ = portal_connect(alice_client, context="CORPORATE")
    assert private.status_code == 302 and corporate.status_code == 302
    refreshed = alice_client.post("/bank/accounts/refresh/")
    assert refreshed.status_code == 302

    connections = list(BankConnection.objects.filter(user=alice))
    assert {c.context for c in connections} == {"PRIVATE", "CORPORATE"}
    secrets = {PRIVATE_1}
    for connection in connections:
        secrets |= forms_of(connection.psu_id)
        if connection.psu_corporate_id:
            secrets |= forms_of(connection.psu_corporate_id)
    assert all(len(secret) >= 8 for secret in secrets)

    dumped = io.StringIO()
    call_command("dumpdata", "--natural-foreign", stdout=dumped)
    sources = {"dumpdata": dumped.getvalue(), "raw tables": raw_dump(), "log": caplog.text}
    # The dumps are not empty: the connections and their accounts are in them.
    assert "connections.bankconnection" in sources["dumpdata"] and "accounts_bankaccount" in sources["raw tables"]
    leaks = {(name, secret) for name, text in sources.items() for secret in secrets if secret in text}
    assert leaks == set()


@pytest.mark.django_db
def test_a_dump_keeps_identifiers_encrypted_and_loads_back(alice, tmp_path):
    from tests.bank_factories import BankConnectionFactory

    psu_id, corporate_id = "4d1f6c2e-8a9b-4c3d-9e7f-0a1b2c3d4e5f", "ACME-CORP-000123456"
    connection = BankConnectionFactory(user=alice, psu_id=psu_id, psu_corporate_id=corporate_id)
    fixture = tmp_path / "connections.json"
    call_command("dumpdata", "connections.bankconnection", "--output", str(fixture))
    text = fixture.read_text()
    assert psu_id not in text and corporate_id not in text and '"fernet:gAAAAA' in text

    BankConnection.objects.all().delete()
    call_command("loaddata", str(fixture), verbosity=0)
    loaded = BankConnection.objects.get(pk=connection.pk)
    assert (loaded.psu_id, loaded.psu_corporate_id) == (psu_id, corporate_id)


@pytest.mark.django_db
def test_text_that_only_looks_like_a_dump_is_a_validation_error():
    from django.core.exceptions import ValidationError

    field = BankConnection._meta.get_field("psu_id")
    with pytest.raises(ValidationError):
        field.clean("fernet:not-a-token", None)
    assert field.clean("13039319955", None) == "13039319955"
