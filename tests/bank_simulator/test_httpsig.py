"""The bank's own signature verifier, against the published vectors and the certificate rules."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_public_key
from cryptography.x509.oid import NameOID

from bank_simulator.security.certificates import (
    CertificateError,
    load_tpp_certificate,
    psd2_roles,
    rfc2253_name,
)
from bank_simulator.security.httpsig import (
    SignatureError,
    decode_rfc2047,
    parse_key_id,
    parse_signature_header,
    signing_string,
    verify_digest,
    verify_rsa_sha256,
)
from devtools import pki

VECTORS = json.loads((Path(__file__).parents[1] / "fixtures" / "http-signature-test-vectors.json").read_text())


def _vector_headers() -> dict[str, str]:
    return {k.lower(): v for k, v in VECTORS["request"]["headers"].items()}


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_published_vectors_verify(case):
    request = VECTORS["request"]
    text = signing_string(case["headers"], _vector_headers().get, method=request["method"], target=request["path"])
    key = load_pem_public_key(VECTORS["public_key_pem"].encode())
    verify_rsa_sha256(key, base64.b64decode(case["signature"]), text)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_published_vectors_fail_on_a_changed_header(case):
    request = VECTORS["request"]
    headers = {**_vector_headers(), "date": "Mon, 06 Jan 2014 21:31:40 GMT"}
    text = signing_string(case["headers"], headers.get, method=request["method"], target=request["path"])
    key = load_pem_public_key(VECTORS["public_key_pem"].encode())
    with pytest.raises(SignatureError, match="does not verify"):
        verify_rsa_sha256(key, base64.b64decode(case["signature"]), text)


def test_request_target_is_lower_cased_method_and_path():
    text = signing_string(
        ["(request-target)", "host"], _vector_headers().get, method="POST", target="/foo?param=value&pet=dog"
    )
    assert text == "(request-target): post /foo?param=value&pet=dog\nhost: example.com"


def test_vector_digest_and_sha512():
    verify_digest(_vector_headers()["digest"], VECTORS["request"]["body"].encode())
    import hashlib

    body = b'{"a":1}'
    sha512 = "SHA-512=" + base64.b64encode(hashlib.sha512(body).digest()).decode()
    verify_digest(sha512, body)
    with pytest.raises(SignatureError, match="does not match"):
        verify_digest(sha512, body + b" ")
    with pytest.raises(SignatureError, match="no supported algorithm"):
        verify_digest("MD5=abc=", body)


def test_listed_header_absent_from_request_is_refused():
    with pytest.raises(SignatureError, match="psu-id is listed but absent"):
        signing_string(["date", "psu-id"], {"date": "x"}.get, method="GET", target="/")


def test_parse_signature_header_with_rfc2047():
    raw = 'keyId="SN=1A,CA=CN=Ærø,O=Tromsø",algorithm="rsa-sha256",headers="date x-request-id",signature="AAAA"'
    encoded = "=?utf-8?B?" + base64.b64encode(raw.encode()).decode() + "?="
    params = parse_signature_header(encoded)
    assert params.key_id == "SN=1A,CA=CN=Ærø,O=Tromsø"
    assert params.headers == ("date", "x-request-id")
    assert parse_key_id(params.key_id) == ("1A", "CN=Ærø,O=Tromsø")
    latin = "=?iso-8859-1?B?" + base64.b64encode(raw.encode("iso-8859-1")).decode() + "?="
    assert parse_signature_header(latin).key_id == params.key_id
    assert decode_rfc2047("=?utf-8?Q?Troms=C3=B8?=") == "Tromsø"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('keyId="a",algorithm="rsa-sha256",headers="date",signature="!!"', "not base64"),
        ('keyId="a",algorithm="hmac-sha256",headers="date",signature="AA=="', "not supported"),
        ('keyId="a",algorithm="rsa-sha256",signature="AA=="', "headers is missing"),
        ('keyId="a",algorithm="rsa-sha256",headers="Date",signature="AA=="', "lower-case"),
        ('keyId="a",algorithm="rsa-sha256",headers="date date",signature="AA=="', "listed twice"),
        ("keyId=a", 'key="value"'),
        ("=?koi8-r?B?AAAA?=", "charset"),
    ],
)
def test_malformed_signature_headers(value, message):
    with pytest.raises(SignatureError, match=message):
        parse_signature_header(value)


def test_key_id_form():
    with pytest.raises(SignatureError, match="SN=<serial>,CA=<issuer>"):
        parse_key_id("serial=1,issuer=x")


def test_rfc2253_writes_organization_identifier_as_oid_and_ber_hex():
    ca = pki.issue_ca()
    name = rfc2253_name(ca.certificate.subject.public_bytes())
    # docs/bank-interface.md, reference 4: NTRNO-987654321 as UTF8String is
    # 2.5.4.97=#0c0f4e54524e4f2d393837363534333231.
    assert name == (
        "CN=TPP Portal Development CA Ærø,2.5.4.97=#0c0f4e54524e4f2d393837363534333231,"
        "O=Utviklingssertifikater Tromsø,C=NO"
    )


def test_rfc2253_escapes_like_x500principal():
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "A, B + C"),
            x509.NameAttribute(NameOID.COMMON_NAME, " #lead=x "),
        ]
    )
    assert rfc2253_name(name.public_bytes()) == "CN=\\ \\#lead\\=x\\ ,O=A\\, B \\+ C,C=NO"


def test_rfc2253_agrees_with_the_portal_signer():
    from xs2a.signing import rfc2253_name as signer_rfc2253

    ca = pki.issue_ca()
    assert rfc2253_name(ca.certificate.subject.public_bytes()) == signer_rfc2253(ca.certificate.subject)


def test_psd2_roles_are_read_from_the_qc_statement():
    ca = pki.issue_ca()
    roles, nca_name, nca_id = psd2_roles(pki.issue_qseal(ca, roles=("PSP_AI", "PSP_IC")).certificate)
    assert roles == {"PSP_AI", "PSP_IC"}
    assert (nca_name, nca_id) == ("Finanstilsynet", "NO-FSA")
    with pytest.raises(CertificateError, match="no QCStatements"):
        psd2_roles(ca.certificate)


def test_certificate_checks(tmp_path):
    ca = pki.issue_ca()
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(ca.cert_pem())
    cert = pki.issue_qseal(ca)
    header = base64.b64encode(cert.certificate.public_bytes(Encoding.DER)).decode()
    now = dt.datetime.now(dt.UTC)
    parsed = load_tpp_certificate(header, (ca_file,), at=now)
    assert parsed.organization_identifier == "PSDNO-FSA-998877665"
    assert parsed.serial_hex == f"{cert.certificate.serial_number:X}"
    with pytest.raises(CertificateError, match="expired"):
        load_tpp_certificate(header, (ca_file,), at=now + dt.timedelta(days=800))
    other = tmp_path / "other.pem"
    other.write_bytes(pki.issue_ca().cert_pem())
    with pytest.raises(CertificateError, match="does not chain"):
        load_tpp_certificate(header, (other,), at=now)
    with pytest.raises(CertificateError, match="not base64"):
        load_tpp_certificate("***", (ca_file,), at=now)


def test_key_id_is_read_as_an_http_quoted_string():
    """keyId's value is a quoted-string: \\x stands for x, so the RFC 2253 escapes of the issuer arrive doubled."""
    raw = r'keyId="SN=1A,CA=CN=\"Q\" CA,O=Vest\\, AS,C=NO",algorithm="rsa-sha256",headers="date",signature="AAAA"'
    params = parse_signature_header(raw)
    assert params.key_id == 'SN=1A,CA=CN="Q" CA,O=Vest\\, AS,C=NO'
    assert parse_key_id(params.key_id) == ("1A", 'CN="Q" CA,O=Vest\\, AS,C=NO')
