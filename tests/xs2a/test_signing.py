"""The request signer: golden vectors, the bank's profile, RFC 2253 keyId and RFC 2047 wrapping."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.x509.oid import NameOID

from devtools import pki
from xs2a import signing

VECTORS = json.loads((Path(__file__).parents[1] / "fixtures" / "http-signature-test-vectors.json").read_text())
FIXED = datetime(2014, 1, 5, 21, 31, 40, tzinfo=UTC)


@pytest.fixture(scope="module")
def vector_key():
    return serialization.load_pem_private_key(VECTORS["private_key_pem"].encode(), password=None)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["name"])
def test_published_vectors_reproduce(case, vector_key):
    request = VECTORS["request"]
    signature = signing.signature_for(
        case["headers"],
        method=request["method"],
        target=request["path"],
        headers=request["headers"],
        key=vector_key,
    )
    assert signature == case["signature"]


def test_vector_digest_is_over_the_exact_body():
    request = VECTORS["request"]
    assert signing.digest_header(request["body"].encode()) == request["headers"]["Digest"]
    # One more space changes it: the digest is of the bytes sent, not of the JSON meaning.
    assert signing.digest_header(request["body"].replace(": ", ":").encode()) != request["headers"]["Digest"]


def test_request_target_is_lower_case_method_and_path_with_query():
    text = signing.signing_string(
        ["(request-target)", "date"], method="POST", target="/foo?a=1", headers={"Date": "x"}
    )
    assert text == "(request-target): post /foo?a=1\ndate: x"


def test_imf_fixdate():
    assert signing.imf_fixdate(FIXED) == "Sun, 05 Jan 2014 21:31:40 GMT"
    oslo_winter = timezone(timedelta(hours=1))
    assert signing.imf_fixdate(datetime(2014, 1, 5, 22, 31, 40, 999, tzinfo=oslo_winter)) == (
        "Sun, 05 Jan 2014 21:31:40 GMT"
    )
    with pytest.raises(ValueError, match="timezone-aware"):
        signing.imf_fixdate(datetime(2014, 1, 5, 21, 31, 40))  # noqa: DTZ001 - the naive value under test


def test_digest_sha512_and_unknown_algorithm():
    body = b'{"a":1}'
    expected = "SHA-512=" + base64.b64encode(hashlib.sha512(body).digest()).decode()
    assert signing.digest_header(body, "SHA-512") == expected
    with pytest.raises(ValueError, match="not supported"):
        signing.digest_header(body, "MD5")


# --- RFC 2253 ----------------------------------------------------------------------------------------------


def test_rfc2253_of_an_issuer_with_organization_identifier_and_norwegian_letters():
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Utviklingssertifikater Tromsø"),
            x509.NameAttribute(NameOID.ORGANIZATION_IDENTIFIER, "NTRNO-987654321"),
            x509.NameAttribute(NameOID.COMMON_NAME, "TPP Portal Development CA Ærø"),
        ]
    )
    # Worked out by hand: most specific RDN first; organizationIdentifier (2.5.4.97) has no RFC 2253 short
    # name, so it is the OID and '#' + the BER of its UTF8String value: tag 0c, length 0f (15), then ASCII.
    ber = "0c" + "0f" + "NTRNO-987654321".encode("ascii").hex()
    assert ber == "0c0f4e54524e4f2d393837363534333231"
    assert signing.rfc2253_name(name) == (
        f"CN=TPP Portal Development CA Ærø,2.5.4.97=#{ber},O=Utviklingssertifikater Tromsø,C=NO"
    )


def test_rfc2253_agrees_with_openssl_for_the_short_names(test_pki):
    """OpenSSL prints organizationIdentifier by name and escapes UTF-8; everything else must agree."""
    result = subprocess.run(
        ["openssl", "x509", "-in", str(test_pki.ca_file), "-noout", "-subject", "-nameopt", "RFC2253,-esc_msb"],
        capture_output=True,
        check=True,
    )
    openssl_text = result.stdout.decode("utf-8").strip().removeprefix("subject=")
    ours = signing.rfc2253_name(test_pki.ca.certificate.subject)
    assert ours.replace(
        "2.5.4.97=#0c0f4e54524e4f2d393837363534333231", "organizationIdentifier=NTRNO-987654321"
    ) == (openssl_text)


def test_rfc2253_escaping_other_types_and_multi_valued_rdns():
    name = x509.Name(
        [
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COUNTRY_NAME, "NO")]),
            x509.RelativeDistinguishedName(
                [x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'A, B + C "D" <E>; #1')]
            ),
            x509.RelativeDistinguishedName(
                [
                    x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "Unit"),
                    x509.NameAttribute(NameOID.EMAIL_ADDRESS, "ops@bank.example"),
                ]
            ),
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COMMON_NAME, " padded ")]),
        ]
    )
    email_ber = "16" + f"{len('ops@bank.example'):02x}" + b"ops@bank.example".hex()  # IA5String
    email = f"1.2.840.113549.1.9.1=#{email_ber}"
    text = signing.rfc2253_name(name)
    # The two values of the multi-valued RDN come in the order of their DER SET (OU sorts first).
    assert text == f'CN=\\ padded\\ ,OU=Unit+{email},O=A\\, B \\+ C \\"D\\" \\<E\\>\\; \\#1,C=NO'


def test_key_id_has_upper_case_hex_serial_and_rfc2253_issuer(test_pki):
    ca = test_pki.ca
    certificate = (
        x509.CertificateBuilder()
        .subject_name(pki.TPP_NAME)
        .issuer_name(ca.certificate.subject)
        .public_key(test_pki.tpp.key.public_key())
        .serial_number(0xABCDEF0123)
        .not_valid_before(datetime(2026, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2027, 1, 1, tzinfo=UTC))
        .sign(ca.key, hashes.SHA256())
    )
    assert signing.key_id(certificate) == (
        "SN=ABCDEF0123,CA=CN=TPP Portal Development CA Ærø,2.5.4.97=#0c0f4e54524e4f2d393837363534333231,"
        "O=Utviklingssertifikater Tromsø,C=NO"
    )


# --- sign_request --------------------------------------------------------------------------------------------


def _headers() -> dict[str, str]:
    return {
        "Date": signing.imf_fixdate(FIXED),
        "x-request-id": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721",
        "PSU-ID": "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1",
        "TPP-Redirect-URI": "https://portal.example/bank/callback",
        "Accept": "application/json",
    }


def _decode(value: str) -> str:
    assert value.startswith("=?utf-8?B?") and value.endswith("?=")
    assert "\n" not in value and "\r" not in value
    return base64.b64decode(value[len("=?utf-8?B?") : -2]).decode("utf-8")


def test_sign_request_follows_the_bank_profile(test_pki):
    body = b'{"instructedAmount":{"amount":"100000.00","currency":"NOK"}}'
    given = _headers()
    signed = signing.sign_request(
        "POST", "/v1/payments/x", given, body, test_pki.tpp.key, test_pki.tpp.certificate
    )

    assert given == _headers(), "the input is not changed"
    assert signed is not given
    assert signed["Digest"] == "SHA-256=" + base64.b64encode(hashlib.sha256(body).digest()).decode()
    der = test_pki.tpp.certificate.public_bytes(serialization.Encoding.DER)
    assert signed["TPP-Signature-Certificate"] == base64.b64encode(der).decode()
    params = _decode(signed["Signature"])  # the issuer holds Æ and ø: RFC 2047 wrapped
    expected_key_id = signing.key_id(test_pki.tpp.certificate)
    assert params.startswith(f'keyId="{expected_key_id}",algorithm="rsa-sha256",')
    assert 'headers="(request-target) date digest x-request-id psu-id tpp-redirect-uri",' in params

    signature = params.rsplit('signature="', 1)[1].rstrip('"')
    signing_text = "\n".join(
        [
            "(request-target): post /v1/payments/x",
            f"date: {given['Date']}",
            f"digest: {signed['Digest']}",
            f"x-request-id: {given['x-request-id']}",
            f"psu-id: {given['PSU-ID']}",
            f"tpp-redirect-uri: {given['TPP-Redirect-URI']}",
        ]
    )
    test_pki.tpp.certificate.public_key().verify(
        base64.b64decode(signature), signing_text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA256()
    )
    # Pure: the same inputs give the same output (PKCS#1 v1.5 is deterministic).
    assert signing.sign_request(
        "POST", "/v1/payments/x", given, body, test_pki.tpp.key, test_pki.tpp.certificate
    ) == (signed)


def test_request_target_sha512_and_given_digest(test_pki):
    headers = {**_headers(), "PSU-Corporate-ID": "0b4f9f5e-8d55-4ad4-9d2f-9f0d8a3f8f10"}
    signed = signing.sign_request(
        "GET",
        "/v1/accounts?withBalance=false",
        headers,
        None,
        test_pki.tpp.key,
        test_pki.tpp.certificate,
    )
    assert "Digest" not in signed, "no body, no Digest"
    params = _decode(signed["Signature"])
    assert 'headers="(request-target) date x-request-id psu-id psu-corporate-id tpp-redirect-uri"' in params
    signature = params.rsplit('signature="', 1)[1].rstrip('"')
    text = signing.signing_string(
        ["(request-target)", "date", "x-request-id", "psu-id", "psu-corporate-id", "tpp-redirect-uri"],
        method="GET",
        target="/v1/accounts?withBalance=false",
        headers=headers,
    )
    assert text.startswith("(request-target): get /v1/accounts?withBalance=false\n")
    test_pki.tpp.certificate.public_key().verify(
        base64.b64decode(signature), text.encode(), padding.PKCS1v15(), hashes.SHA256()
    )

    with_512 = signing.sign_request(
        "POST", "/x", _headers(), b"{}", test_pki.tpp.key, test_pki.tpp.certificate, digest_algorithm="SHA-512"
    )
    assert with_512["Digest"].startswith("SHA-512=")
    kept = signing.sign_request(
        "POST", "/x", {**_headers(), "digest": "SHA-256=given"}, b"{}", test_pki.tpp.key, test_pki.tpp.certificate
    )
    assert kept["digest"] == "SHA-256=given" and "Digest" not in kept


def test_ascii_signature_is_not_wrapped():
    ca = pki.issue_ca(
        x509.Name(
            [x509.NameAttribute(NameOID.COMMON_NAME, "Plain CA"), x509.NameAttribute(NameOID.COUNTRY_NAME, "NO")]
        )
    )
    tpp = pki.issue_qseal(ca)
    signed = signing.sign_request("GET", "/v1/users", _headers(), None, tpp.key, tpp.certificate)
    assert signed["Signature"].startswith('keyId="SN=')
    assert ',CA=C=NO,CN=Plain CA",' in signed["Signature"]


def test_rfc2047_round_trip_and_no_folding():
    value = 'keyId="SN=1,CA=CN=Ærø ' + "x" * 200 + '",algorithm="rsa-sha256"'
    encoded = signing.encode_rfc2047(value)
    assert encoded.startswith("=?utf-8?B?") and encoded.endswith("?=") and "\n" not in encoded
    assert signing.decode_rfc2047(encoded) == value
    assert signing.encode_rfc2047("ascii only") == "ascii only"


def test_header_values_with_line_breaks_are_refused(test_pki):
    with pytest.raises(ValueError, match="line break"):
        signing.sign_request(
            "GET", "/", {**_headers(), "PSU-ID": "a\r\nb"}, None, test_pki.tpp.key, test_pki.tpp.certificate
        )


def test_a_key_of_another_certificate_is_refused(test_pki):
    with pytest.raises(ValueError, match="does not belong"):
        signing.RequestSigner(test_pki.bank_seal.key, test_pki.tpp.certificate)


def test_verify_signature_accepts_a_signed_message_and_refuses_tampering(test_pki):
    body = b'{"ok":true}'
    signed = signing.sign_request("GET", "/", _headers(), body, test_pki.tpp.key, test_pki.tpp.certificate)
    params = signing.verify_signature(
        signed["Signature"],
        headers=signed,
        body=body,
        certificate=test_pki.tpp.certificate,
        method="GET",
        target="/",
    )
    assert params.headers[:2] == ("(request-target)", "date")
    with pytest.raises(signing.SignatureVerificationError, match="Digest"):
        signing.verify_signature(
            signed["Signature"],
            headers=signed,
            body=b"{}",
            certificate=test_pki.tpp.certificate,
            method="GET",
            target="/",
        )
    with pytest.raises(signing.SignatureVerificationError, match="does not verify"):
        signing.verify_signature(
            signed["Signature"],
            headers={**signed, "Date": "Mon, 06 Jan 2014 00:00:00 GMT"},
            body=body,
            certificate=test_pki.tpp.certificate,
            method="GET",
            target="/",
        )
    with pytest.raises(signing.SignatureVerificationError, match="keyId"):
        signing.verify_signature(
            signed["Signature"],
            headers=signed,
            body=body,
            certificate=test_pki.bank_seal.certificate,
            method="GET",
        )


# --- keyId as an HTTP quoted-string ----------------------------------------------------------------------------


def _certificate_issued_by(issuer: x509.Name, key, serial: int) -> x509.Certificate:
    return (
        x509.CertificateBuilder()
        .subject_name(pki.TPP_NAME)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(datetime(2026, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2027, 1, 1, tzinfo=UTC))
        .sign(key, hashes.SHA256())
    )


@pytest.mark.parametrize(
    ("organisation", "in_rfc2253", "in_header"),
    [
        ("Tillitstjenester Vest, AS", "Tillitstjenester Vest\\, AS", "Tillitstjenester Vest\\\\, AS"),
        ('Sertifikat "Nord" AS', 'Sertifikat \\"Nord\\" AS', 'Sertifikat \\\\\\"Nord\\\\\\" AS'),
    ],
)
def test_the_client_writes_an_escaped_issuer_as_a_quoted_string(
    make_client, bank, test_pki, organisation, in_rfc2253, in_header
):
    from tests.bankfake import Answer, check_signature

    issuer = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation),
            x509.NameAttribute(NameOID.COMMON_NAME, "Test CA"),
        ]
    )
    certificate = _certificate_issued_by(issuer, test_pki.tpp.key, 0x1F2E)
    assert signing.key_id(certificate) == f"SN=1F2E,CA=CN=Test CA,O={in_rfc2253},C=NO"
    client = make_client(bank.base_url, signing_certificate=certificate)
    bank.add("GET", "/v1/users", Answer(200, {"_links": {}}))

    client.consents.users()

    (sent,) = bank.received
    header = sent.headers["signature"]
    assert header.isascii(), "no RFC 2047 wrapping for an ASCII issuer"
    expected_start = f'keyId="SN=1F2E,CA=CN=Test CA,O={in_header},C=NO",algorithm="rsa-sha256",headers="'
    assert header.startswith(expected_start), header
    assert check_signature(sent, certificate)  # the test bank's own parser reads it back
    # Round trip through the client's parser: the keyId comes back with RFC 2253's single backslashes.
    assert signing.parse_signature_header(header).key_id == signing.key_id(certificate)


def test_quoted_strings_round_trip():
    for value in ["plain", "a\\b", 'a"b', '\\"', "\\\\,", ""]:
        quoted = signing.quoted_string(value)
        assert quoted.startswith('"') and quoted.endswith('"')
        assert signing.unquote_string(quoted[1:-1]) == value
    assert signing.quoted_string('O=Vest\\, AS "x"') == '"O=Vest\\\\, AS \\"x\\""'


# --- what is signed: (request-target) always, the PSU headers whenever sent -------------------------------------

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"
CORPORATE_ID = "0b4f9f5e-8d55-4ad4-9d2f-9f0d8a3f8f10"


def test_signed_headers_of_a_get_without_and_with_psu_headers(bank, client, test_pki):
    from tests.bankfake import Answer, check_signature
    from xs2a.psu import PsuContext

    bank.add("GET", "/v1/sandbox/customers", Answer(200, []))
    bank.add("GET", "/v1/accounts", Answer(200, {"accounts": []}))
    bank.add("GET", "/v1/agreements", Answer(200, {"agreements": []}))

    client.sandbox.customers()
    client.accounts.list(psu=PsuContext(psu_id=PSU_ID, corporate_id=CORPORATE_ID, ip_address="198.51.100.7"))
    client.consents.agreements(psu=PsuContext(psu_id=PSU_ID))

    bare, corporate, private = bank.received
    assert check_signature(bare, test_pki.tpp.certificate) == [
        "(request-target)",
        "date",
        "x-request-id",
        "tpp-redirect-uri",
    ]
    assert check_signature(corporate, test_pki.tpp.certificate) == [
        "(request-target)",
        "date",
        "x-request-id",
        "psu-id",
        "psu-corporate-id",
        "tpp-redirect-uri",
    ]
    assert corporate.target == "/v1/accounts?withBalance=false", "the query is part of the signed target"
    assert check_signature(private, test_pki.tpp.certificate) == [
        "(request-target)",
        "date",
        "x-request-id",
        "psu-id",
        "tpp-redirect-uri",
    ]


def test_signed_headers_of_a_post_with_a_body(bank, client, test_pki):
    from tests.bankfake import Answer, check_signature
    from xs2a.psu import PsuContext

    bank.add("POST", "/v1/bank-offered-consents", Answer(201, {"_links": {}}))
    client.consents.start(psu=PsuContext(psu_id=PSU_ID, corporate_id=CORPORATE_ID, ip_address="198.51.100.7"))
    (sent,) = bank.received
    assert sent.body == b"{}"
    assert check_signature(sent, test_pki.tpp.certificate) == [
        "(request-target)",
        "date",
        "digest",
        "x-request-id",
        "psu-id",
        "psu-corporate-id",
        "tpp-redirect-uri",
    ]


def test_the_signer_agrees_with_the_golden_vectors(vector_key):
    """The vectors' key and request through the client's signer: its Digest is the vector's, its signing string
    starts with the vector's (request-target) and date lines, and it verifies with the vector's public key."""
    request = VECTORS["request"]
    public_key = serialization.load_pem_public_key(VECTORS["public_key_pem"].encode())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vector key")]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vector key")]))
        .public_key(public_key)
        .serial_number(1)
        .not_valid_before(datetime(2014, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2015, 1, 1, tzinfo=UTC))
        .sign(vector_key, hashes.SHA256())
    )
    signer = signing.RequestSigner(vector_key, certificate)

    signed = signer.sign(
        request["method"], request["path"], {"Date": request["headers"]["Date"]}, request["body"].encode()
    )

    assert signed["Digest"] == request["headers"]["Digest"]
    params = signing.parse_signature_header(signed["Signature"])
    assert params.headers == ("(request-target)", "date", "digest")
    text = "\n".join(
        [
            "(request-target): post /foo?param=value&pet=dog",
            "date: Sun, 05 Jan 2014 21:31:40 GMT",
            f"digest: {request['headers']['Digest']}",
        ]
    )
    basic = next(c for c in VECTORS["cases"] if c["name"] == "basic")
    basic_text = signing.signing_string(
        basic["headers"], method=request["method"], target=request["path"], headers=request["headers"]
    )
    assert basic_text.splitlines()[0] == text.splitlines()[0], "the vector's own (request-target) line"
    public_key.verify(params.signature, text.encode(), padding.PKCS1v15(), hashes.SHA256())
    assert (
        signing.signature_for(
            basic["headers"],
            method=request["method"],
            target=request["path"],
            headers=request["headers"],
            key=vector_key,
        )
        == basic["signature"]
    )
