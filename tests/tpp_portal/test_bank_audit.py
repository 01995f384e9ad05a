"""The portal's bank client from settings, and the BankCall audit rows it writes."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured

from devtools import pki
from tests.xs2a.server import Answer, LocalBank, check_signature
from tpp_portal import bank as portal_bank
from tpp_portal.models import BankCall
from xs2a import errors
from xs2a.psu import PsuContext

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"


@pytest.fixture
def local_bank():
    with LocalBank() as server:
        yield server


@pytest.fixture
def bank_settings(settings, tmp_path, local_bank):
    ca = pki.issue_ca()
    tpp = pki.issue_qseal(ca)
    (tmp_path / "tpp.pem").write_bytes(tpp.cert_pem())
    (tmp_path / "tpp.key").write_bytes(tpp.key_pem(b"key passphrase"))
    settings.BANK_BASE_URL = local_bank.base_url
    settings.BANK_SIGNING_CERT = tmp_path / "tpp.pem"
    settings.BANK_SIGNING_KEY = tmp_path / "tpp.key"
    settings.BANK_SIGNING_KEY_PASSPHRASE = "key passphrase"
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_CA_BUNDLE = None
    settings.BANK_TLS_CLIENT_CERT = None
    settings.BANK_TLS_CLIENT_KEY = None
    settings.PORTAL_BASE_URL = "https://portal.example"
    settings.BANK_ACCEPT_FIX = ["amount-as-string"]
    settings.BANK_TIMEOUT = 5.0
    return tpp


@pytest.mark.django_db
def test_calls_are_signed_from_settings_and_audited_with_user_and_object(bank_settings, local_bank, alice):
    local_bank.add(
        "GET",
        "/v1/accounts",
        Answer(
            401,
            {
                "tppMessages": [{"category": "ERROR", "code": "CONSENT_EXPIRED", "text": f"PSU {PSU_ID}"}],
                "_links": {"scaRedirect": {"href": "https://bank.example/sca"}},
            },
        ),
    )
    client = portal_bank.build_bank_client()
    with portal_bank.bank_audit_context(user=alice, obj=alice), pytest.raises(errors.ScaRequiredError):
        client.accounts.list(psu=PsuContext(psu_id=PSU_ID, ip_address="198.51.100.7"))
    client.close()

    (sent,) = local_bank.received
    assert check_signature(sent, bank_settings.certificate)[0] == "(request-target)"
    assert sent.headers["tpp-redirect-uri"] == "https://portal.example/bank/callback"
    assert sent.headers["x-accept-fix"] == "amount-as-string"

    call = BankCall.objects.get()
    assert call.method == "GET" and call.path_template == "/v1/accounts" and call.status == 401
    assert call.request_id == sent.headers["x-request-id"]
    assert call.tpp_message_codes == ["CONSENT_EXPIRED"]
    assert call.tpp_message_texts == ["PSU [redacted]"]
    assert call.psu_present is True
    assert call.bytes_sent == 0 and call.bytes_received > 0
    assert call.error == "ScaRequiredError"
    assert call.user == alice
    assert call.content_type == ContentType.objects.get_for_model(alice) and call.object_id == str(alice.pk)
    assert call.concerning == alice
    row = repr(list(BankCall.objects.values()))
    for secret in (
        PSU_ID,
        "198.51.100.7",
        sent.headers["signature"][:30],
        sent.headers["tpp-signature-certificate"][:30],
    ):
        assert secret not in row


@pytest.mark.django_db
def test_calls_outside_a_context_and_without_an_answer_are_audited_too(bank_settings, settings):
    settings.BANK_BASE_URL = "http://127.0.0.1:9"  # discard port: refused
    client = portal_bank.build_bank_client()
    with pytest.raises(errors.TransportError):
        client.sandbox.initialize()
    client.close()
    call = BankCall.objects.get()
    assert call.status is None and call.error == "TransportError"
    assert call.user is None and call.content_type is None and call.psu_present is False


def test_a_wrong_passphrase_stops_with_a_clear_configuration_error(bank_settings, settings):
    settings.BANK_SIGNING_KEY_PASSPHRASE = "not it"
    with pytest.raises(ImproperlyConfigured, match="passphrase is wrong") as caught:
        portal_bank.client_config()
    assert "not it" not in str(caught.value)
