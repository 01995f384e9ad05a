"""The data side of the backup test (test_backup_restore.py), run as its own process against a database named by
DATABASE_URL, with the keys of FIELD_ENCRYPTION_KEYS and FIELD_HASH_KEY:

    python -m tests.tpp_portal.backup_data populate   # PSU identifiers in every encrypted field, printed as JSON
    python -m tests.tpp_portal.backup_data read       # every encrypted value read back, printed as JSON

Both print {"model.field": {"pk": value}} for every encrypted field of every model (connections.crypto
.encrypted_fields()), so a field added later is covered without changing the test; ``read`` also finds each
connection again by the keyed lookup hash of its PSU-ID.
"""

from __future__ import annotations

import json
import os
import sys
import uuid


def _values() -> dict[str, dict[str, str]]:
    from connections.crypto import encrypted_fields

    found: dict[str, dict[str, str]] = {}
    for model, fields in encrypted_fields().items():
        for field in fields:
            key = f"{model._meta.label}.{field.name}"
            found[key] = {
                str(pk): value for pk, value in model.objects.order_by("pk").values_list("pk", field.name) if value
            }
    return found


def populate() -> dict[str, dict[str, str]]:
    from django.utils import timezone

    from connections.sessions import tpp_session_for, tpp_session_sca_completed
    from tests.bank_factories import BankConnectionFactory, ScaStateFactory
    from tests.payments.payment_factories import PaymentFactory

    private = BankConnectionFactory(context="PRIVATE", psu_id=str(uuid.uuid4()))
    corporate = BankConnectionFactory(
        context="CORPORATE", psu_id=str(uuid.uuid4()), psu_corporate_id=str(uuid.uuid4()), user=private.user
    )
    headers = {"PSU-ID": corporate.psu_id, "PSU-Corporate-ID": corporate.psu_corporate_id}
    PaymentFactory(
        user=private.user,
        connection=corporate,
        psu_identity="13039319955",  # a sandbox national identity number (single SCA)
        initiation_psu=json.dumps(headers),
    )
    # The user's TPP-Session-ID of the hour, with the PSU-ID of its first SCA, and an SCA state sent with it.
    session = tpp_session_for(user=private.user)
    tpp_session_sca_completed(
        user=private.user, tpp_session_id=session.session_id, psu_id=private.psu_id, now=timezone.now()
    )
    ScaStateFactory(user=private.user, tpp_session_id=session.session_id)
    return _values()


def read() -> dict[str, dict[str, str]]:
    from connections.crypto import lookup_hash
    from connections.models import BankConnection

    values = _values()
    for pk, psu_id in values["connections.BankConnection.psu_id"].items():
        # The lookup hash (FIELD_HASH_KEY) still finds the row: the hash key is part of the backup too.
        assert BankConnection.objects.get(psu_id_hash=lookup_hash(psu_id)).pk == int(pk), pk
    return values


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")
    import django

    django.setup()
    action = {"populate": populate, "read": read}[sys.argv[1]]
    print(json.dumps(action(), sort_keys=True))
