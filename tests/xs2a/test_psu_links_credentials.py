"""PSU context, link resolution and id quoting, and loading an encrypted signing key."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.bankfake import Answer
from xs2a.credentials import CredentialError, load_certificate, load_private_key
from xs2a.errors import LinkError
from xs2a.links import BaseUrl, path_from_template, quote_id, template_for
from xs2a.psu import PsuContext

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"


def test_psu_ip_address_is_present_exactly_when_the_psu_is():
    assert not PsuContext(psu_id=PSU_ID).present
    assert "PSU-IP-Address" not in PsuContext(psu_id=PSU_ID).headers()
    present = PsuContext(psu_id=PSU_ID, ip_address="198.51.100.7", ip_port="443", geo_location="GEO:59.91,10.75")
    assert present.present
    assert present.headers() == {
        "PSU-ID": PSU_ID,
        "PSU-IP-Address": "198.51.100.7",
        "PSU-IP-Port": "443",
        "PSU-Geo-Location": "GEO:59.91,10.75",
    }
    with pytest.raises(ValueError, match=r"PSU-User-Agent.*PSU-IP-Address"):
        PsuContext(psu_id=PSU_ID, user_agent="Firefox")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"psu_id": "not-a-uuid"}, "PSU-ID must be a UUID"),
        ({"ip_address": "300.1.1.1"}, "PSU-IP-Address"),
        ({"context": "BUSINESS"}, "PSU-Context"),
        ({"ip_address": "10.0.0.1", "http_method": "TRACE"}, "PSU-HTTP-Method"),
        ({"psu_id": PSU_ID + "\r\nX: y"}, "control character"),
    ],
)
def test_bad_psu_values_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        PsuContext(**fields)


def test_absent_psu_sends_no_psu_ip_address(bank, client):
    bank.add("GET", "/v1/accounts/a/balances", Answer(200, {"balances": []}))
    client.accounts.balances("a", psu=PsuContext(psu_id=PSU_ID))
    client.accounts.balances("a", psu=PsuContext(psu_id=PSU_ID, ip_address="2001:db8::5"))
    assert "psu-ip-address" not in bank.received[0].headers
    assert bank.received[1].headers["psu-ip-address"] == "2001:db8::5"


def test_ids_are_quoted_as_one_path_segment():
    assert quote_id("enc!!Z78gcpH6=") == "enc!!Z78gcpH6="
    assert quote_id("a/b?c#d e%") == "a%2Fb%3Fc%23d%20e%25"
    assert (
        path_from_template("/v1/accounts/{account_id}/balances", account_id="x/=!")
        == "/v1/accounts/x%2F=!/balances"
    )


def test_links_resolve_against_a_base_with_a_path_prefix():
    base = BaseUrl("https://bank.example/api/")
    assert base.resolve("/v1/accounts/enc!!Z=/transactions?bookingStatus=both") == (
        "https://bank.example/api/v1/accounts/enc!!Z=/transactions?bookingStatus=both"
    )
    assert base.resolve("https://bank.example/api/v1/x") == "https://bank.example/api/v1/x"
    with pytest.raises(LinkError, match="does not point at the bank"):
        base.resolve("https://evil.example/api/v1/x")
    with pytest.raises(LinkError, match="does not point at the bank"):
        base.resolve("http://bank.example/api/v1/x")
    assert (
        base.url("/v1/accounts", {"withBalance": "false"})
        == "https://bank.example/api/v1/accounts?withBalance=false"
    )
    assert base.api_path("https://bank.example/api/v1/accounts/x") == "/v1/accounts/x"


def test_path_templates_never_carry_ids():
    assert (
        template_for("/v1/accounts/enc!!Z=/transactions/t1")
        == "/v1/accounts/{account_id}/transactions/{transaction_id}"
    )
    assert template_for("/v1/payments/norwegian-cross-border-credit-transfers/p1/status") == (
        "/v1/payments/{product}/{payment_id}/status"
    )
    assert template_for("/v1/sandbox/customers") == "/v1/sandbox/customers"
    assert template_for("/v1/unknown/secret-id/more") == "/v1/unknown/{id}/{id}"


def test_an_encrypted_pkcs8_key_loads_with_its_passphrase(test_pki, tmp_path, monkeypatch):
    path = tmp_path / "qseal.key"
    path.write_bytes(test_pki.tpp.key_pem(b"correct horse"))
    assert b"ENCRYPTED PRIVATE KEY" in path.read_bytes()
    key = load_private_key(path, "correct horse")
    assert key.private_numbers() == test_pki.tpp.key.private_numbers()
    assert load_private_key(path, b"correct horse").key_size == 2048
    # The library reads no environment: the portal's settings pass the passphrase (core.bank.client_config).
    monkeypatch.setenv("BANK_SIGNING_KEY_PASSPHRASE", "correct horse")

    with pytest.raises(CredentialError, match="passphrase is wrong") as caught:
        load_private_key(path, "wrong horse")
    assert "wrong horse" not in str(caught.value)
    with pytest.raises(CredentialError, match="no passphrase"):
        load_private_key(path)
    plain = tmp_path / "plain.key"
    plain.write_bytes(test_pki.tpp.key_pem())
    with pytest.raises(CredentialError, match="not encrypted"):
        load_private_key(plain, "something")


def test_a_non_rsa_key_and_a_missing_file_are_refused(tmp_path, test_pki):
    ec_key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.key"
    path.write_bytes(
        ec_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    with pytest.raises(CredentialError, match="RSA"):
        load_private_key(path)
    with pytest.raises(CredentialError, match="cannot read"):
        load_private_key(tmp_path / "missing.key")
    assert load_certificate(test_pki.ca_file).subject == test_pki.ca.certificate.subject
    with pytest.raises(CredentialError, match="not a PEM or DER"):
        load_certificate(path)


def test_the_tpp_session_id_travels_with_the_psu_and_is_made_for_sca_starts(bank, client):
    bank.add("GET", "/v1/accounts/a/balances", Answer(200, {"balances": []}))
    bank.add("GET", "/v1/users", Answer(200, {"_links": {"scaRedirect": {"href": "https://bank.example/sca"}}}))
    client.accounts.balances("a", psu=PsuContext(psu_id=PSU_ID, tpp_session_id="portal-session-1"))
    started = client.consents.users(psu=PsuContext(ip_address="198.51.100.7"))
    again = client.consents.users(psu=PsuContext(ip_address="198.51.100.7", tpp_session_id="portal-session-1"))
    balances, first_start, second_start = bank.received
    assert balances.headers["tpp-session-id"] == "portal-session-1"
    assert uuid.UUID(first_start.headers["tpp-session-id"])
    assert started.tpp_session_id == first_start.headers["tpp-session-id"]
    assert second_start.headers["tpp-session-id"] == again.tpp_session_id == "portal-session-1"


def test_the_library_reads_no_environment():
    """xs2a is configured only by what its caller passes (ClientConfig, a passphrase): the portal's settings read
    the environment, through one strict reader."""
    root = Path(__file__).resolve().parents[2] / "xs2a"
    for source in root.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        for needle in ("os.environ", "getenv", "environ.get", "from os import environ"):
            assert needle not in text, f"{source.relative_to(root.parent)} reads the environment ({needle})"
