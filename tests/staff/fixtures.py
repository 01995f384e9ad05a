"""Fixtures of the staff tests (admin, audit log, dashboard): the two roles of the staff groups made by the
migration, and the settings of the portal's real client talking to the fake bank with a seal of its own.

Loaded for every test by ``pytest_plugins`` in tests/conftest.py. The sandbox bank's tests run from this tree too
with their own settings (no django.contrib.auth, no portal apps): portal modules are imported inside the
fixtures, never at the top of this module.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.test import Client

from devtools import pki

#: A PSU-ID sent to the bank in these tests: it must never show on a staff page or in an export.
PSU_ID = "7f9c2a4e-58b1-4c3d-9e0f-1a2b3c4d5e6f"
PSU_CORPORATE_ID = "0b1c2d3e-4f50-4617-a829-3a4b5c6d7e8f"


def staff_member(email: str, group: str):
    from django.contrib.auth.models import Group

    from tests.factories import UserFactory

    user = UserFactory(email=email, is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def operator(db):
    """Staff in the "operators" group: reads everything and runs the admin actions."""
    return staff_member("olivia.operator@example.com", "operators")


@pytest.fixture
def support(db):
    """Staff in the "support" group: reads, changes nothing."""
    return staff_member("sam.support@example.com", "support")


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator_client(operator) -> Client:
    return _signed_in(operator)


@pytest.fixture
def support_client(support) -> Client:
    return _signed_in(support)


@pytest.fixture
def own_seal_bank_settings(settings, tmp_path, fake_bank):
    """The portal's real bank client (signing, audit into BankCall) with a TPP seal of the test's own (its key
    behind a passphrase), talking to the fake bank (tests/bankfake.py)."""
    from core import bank as portal_bank

    ca = pki.issue_ca()
    tpp = pki.issue_qseal(ca)
    (tmp_path / "tpp.pem").write_bytes(tpp.cert_pem())
    (tmp_path / "tpp.key").write_bytes(tpp.key_pem(b"key passphrase"))
    settings.BANK_SIGNING_CERT = tmp_path / "tpp.pem"
    settings.BANK_SIGNING_KEY = tmp_path / "tpp.key"
    settings.BANK_SIGNING_KEY_PASSPHRASE = "key passphrase"
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_CA_BUNDLE = None
    settings.BANK_TLS_CLIENT_CERT = None
    settings.BANK_TLS_CLIENT_KEY = None
    settings.BANK_TIMEOUT = 5.0
    portal_bank.bank_client.cache_clear()
    yield tpp
    portal_bank.bank_client.cache_clear()


def bank_call(
    *,
    started_at: datetime | None = None,
    method: str = "GET",
    path: str = "/v1/accounts",
    status: int | None = 200,
    duration_ms: int = 100,
    request_id: str = "",
    codes: list[str] | None = None,
    texts: list[str] | None = None,
    user=None,
    obj=None,
    error: str = "",
) -> Any:
    """One audit row as core.bank.record_bank_call writes it."""
    from django.contrib.contenttypes.models import ContentType
    from django.utils import timezone

    from core.models import BankCall

    return BankCall.objects.create(
        started_at=started_at or timezone.now(),
        method=method,
        path_template=path,
        request_id=request_id or f"req-{BankCall.objects.count() + 1:06d}",
        status=status,
        duration_ms=duration_ms,
        tpp_message_codes=codes or [],
        tpp_message_texts=texts or [],
        psu_present=False,
        bytes_sent=0,
        bytes_received=10,
        error=error,
        user=user,
        content_type=ContentType.objects.get_for_model(obj) if obj is not None else None,
        object_id=str(obj.pk) if obj is not None else "",
    )
