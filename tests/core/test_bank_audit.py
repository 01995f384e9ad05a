"""The portal's bank client from settings, and the BankCall audit rows it writes."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ImproperlyConfigured

from core import bank as portal_bank
from core.models import BankCall
from tests import bankfake
from tests.bankfake import Answer, check_signature
from xs2a import errors
from xs2a.psu import PsuContext

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"


@pytest.fixture
def bank_settings(own_seal_bank_settings, settings):
    """The portal's client from settings (a TPP seal of the test's own), talking to the fake bank, with the
    portal's address and an accept fix of its own."""
    settings.PORTAL_BASE_URL = "https://portal.example"
    settings.BANK_ACCEPT_FIX = ["amount-as-string"]
    return own_seal_bank_settings


@pytest.mark.django_db
def test_calls_are_signed_from_settings_and_audited_with_user_and_object(bank_settings, fake_bank, alice):
    fake_bank.add(
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

    (sent,) = fake_bank.received
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
def test_calls_outside_a_context_and_without_an_answer_are_audited_too(bank_settings, fake_bank):
    fake_bank.add("POST", "/v1/sandbox/initialize", bankfake.lost(sent=False))  # the connection refused
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
