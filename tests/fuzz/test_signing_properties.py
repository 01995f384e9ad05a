"""Property-based fuzzing of xs2a/signing.py: sign -> verify round trips for any headers, target and body;
any change to a signed part is caught; Digest, RFC 2047 and RFC 2253 encode and decode losslessly; and the
parsers refuse arbitrary input with SignatureVerificationError only (never another exception)."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from devtools import pki
from xs2a import signing
from xs2a.signing import SignatureVerificationError

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def tpp():
    return pki.issue_qseal(pki.issue_ca())


HEADER_NAME = st.from_regex(r"\A[A-Za-z][A-Za-z0-9-]{0,30}\Z").filter(
    lambda n: n.lower() not in {"signature", "tpp-signature-certificate", "digest", "date", "x-request-id"}
)
# A header value on one line: any character but CR and LF (non-ASCII goes through RFC 2047 like the client does).
HEADER_VALUE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=80)
TARGET = st.from_regex(r"\A/v1/[A-Za-z0-9/_.~-]{0,40}(\?[A-Za-z0-9=&%_.-]{0,40})?\Z")
METHOD = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"])


def _headers(extra: dict[str, str]) -> dict[str, str]:
    base = {
        "Date": signing.imf_fixdate(datetime(2026, 3, 2, 9, 0, tzinfo=UTC)),
        "X-Request-ID": "0b3c9a7e-3f0e-4c55-9a51-2f0c8e7d1b43",
    }
    return {**base, **{name: signing.encode_rfc2047(value) for name, value in extra.items()}}


@SLOW
@given(
    method=METHOD,
    target=TARGET,
    extra=st.dictionaries(HEADER_NAME, HEADER_VALUE, max_size=4),
    body=st.none() | st.binary(max_size=2000),
)
def test_sign_then_verify_round_trips(tpp, method, target, extra, body):
    assume(len({name.lower() for name in extra}) == len(extra))
    signed = signing.sign_request(method, target, _headers(extra), body, tpp.key, tpp.certificate)
    params = signing.verify_signature(
        signed["Signature"],
        headers=signed,
        body=body,
        certificate=tpp.certificate,
        method=method,
        target=target,
        required_headers=("date", "digest", "x-request-id"),
    )
    assert params.key_id == signing.key_id(tpp.certificate)
    assert params.headers[0] == "(request-target)", "always signed, always first"
    assert ("digest" in params.headers) is (body is not None)


@SLOW
@given(body=st.binary(min_size=1, max_size=500), flip=st.integers(min_value=0), value=HEADER_VALUE)
def test_any_change_to_a_signed_part_is_refused(tpp, body, flip, value):
    headers = _headers({"PSU-ID": "13039319955"})
    signed = signing.sign_request("POST", "/v1/payments/x", headers, body, tpp.key, tpp.certificate)

    tampered_body = bytearray(body)
    tampered_body[flip % len(body)] ^= 0x01
    with pytest.raises(SignatureVerificationError):
        signing.verify_signature(
            signed["Signature"], headers=signed, body=bytes(tampered_body), certificate=tpp.certificate
        )

    assume(signing.encode_rfc2047(value) != signed["PSU-ID"])
    other = {**signed, "PSU-ID": signing.encode_rfc2047(value)}
    with pytest.raises(SignatureVerificationError):
        signing.verify_signature(signed["Signature"], headers=other, body=body, certificate=tpp.certificate)


@FUZZ
@given(body=st.binary(max_size=5000), algorithm=st.sampled_from(["SHA-256", "SHA-512", "sha-256"]))
def test_digest_matches_its_body_and_nothing_else(body, algorithm):
    header = signing.digest_header(body, algorithm)
    signing.verify_digest(header, body)
    with pytest.raises(SignatureVerificationError):
        signing.verify_digest(header, body + b"\x00")


@FUZZ
@given(value=st.text(max_size=300))
@example(value="SHA-256=")
@example(value="SHA-256=###, SHA-512=")
def test_verify_digest_refuses_arbitrary_headers_cleanly(value):
    try:
        signing.verify_digest(value, b"body")
    except SignatureVerificationError:
        pass


ENCODED_WORD = re.compile(r"^\s*=\?[^?]+\?[BbQq]\?[^?]*\?=\s*$")


@FUZZ
@given(value=st.text(st.characters(codec="utf-8"), max_size=200))
@example(value="Ærlig Øl Å/S")
@example(value="=?utf-8?B?QQ==?=")
def test_rfc2047_round_trips_on_one_line(value):
    encoded = signing.encode_rfc2047(value)
    assert encoded.isascii() or encoded == value  # non-ASCII is always encoded
    assert "\n" not in encoded or "\n" in value  # never folded
    if value.isascii() and ENCODED_WORD.match(value):
        # An ASCII value that already looks like an encoded word is sent as is, and read as one: a header
        # value of this shape is ambiguous by RFC 2047 itself. PSU identifiers never look like that.
        return
    assert signing.decode_rfc2047(encoded) == value


@FUZZ
@given(
    value=st.text(max_size=200) | st.from_regex(r"\A=\?[a-zA-Z0-9-]{0,12}\?[BbQqXx]\?[A-Za-z0-9+/=!]{0,40}\?=\Z")
)
def test_rfc2047_decoding_refuses_arbitrary_input_cleanly(value):
    try:
        signing.decode_rfc2047(value)
    except SignatureVerificationError:
        pass


@FUZZ
@given(value=st.text(max_size=400))
@example(value='keyId="a",signature="####"')
@example(value='keyId="a",keyId="b",signature="AA=="')
@example(value='keyId="a",signature="AA==",headers=""')
def test_signature_header_parsing_refuses_arbitrary_input_cleanly(value):
    try:
        params = signing.parse_signature_header(value)
    except SignatureVerificationError:
        return
    assert params.key_id is not None and params.headers and params.algorithm == "rsa-sha256"


# --- RFC 2253 names ---------------------------------------------------------------------------------------

NAME_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=64).filter(
    lambda v: len(v.encode()) <= 64  # X.509's upper bound (ub-common-name and friends), in UTF-8 bytes
)
SHORT_NAMES = {
    "CN": NameOID.COMMON_NAME,
    "O": NameOID.ORGANIZATION_NAME,
    "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
    "L": NameOID.LOCALITY_NAME,
    "ST": NameOID.STATE_OR_PROVINCE_NAME,
}


def parse_rfc2253(text: str) -> list[list[tuple[str, str]]]:
    """RDNs (most specific first) of an RFC 2253 string with backslash escapes, as Java writes them."""
    rdns, avas, key, value, in_value = [], [], "", "", False
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            following = text[i + 1]
            if text[i + 1 : i + 3] == "00":
                value += "\x00"
                i += 3
                continue
            value += following
            i += 2
            continue
        if not in_value and char == "=":
            in_value = True
        elif in_value and char in ",+":
            avas.append((key, value))
            key, value, in_value = "", "", False
            if char == ",":
                rdns.append(avas)
                avas = []
        elif in_value:
            value += char
        else:
            key += char
        i += 1
    avas.append((key, value))
    rdns.append(avas)
    return rdns


@FUZZ
@given(
    attributes=st.lists(st.tuples(st.sampled_from(sorted(SHORT_NAMES)), NAME_TEXT), min_size=1, max_size=5),
    country=st.sampled_from(["NO", "SE", "DE"]),
)
@example(attributes=[("CN", " leading, and trailing "), ("O", '#hash+plus;"quote"\\')], country="NO")
@example(attributes=[("CN", "nul\x00inside"), ("O", "Sparebank Ærø\r")], country="NO")
def test_rfc2253_names_escape_losslessly(attributes, country):
    name = x509.Name(
        [x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COUNTRY_NAME, country)])]
        + [x509.RelativeDistinguishedName([x509.NameAttribute(SHORT_NAMES[k], v)]) for k, v in attributes]
    )
    text = signing.rfc2253_name(name)
    expected = [[(k, v)] for k, v in reversed(attributes)] + [[("C", country)]]
    assert parse_rfc2253(text) == expected


@FUZZ
@given(
    attributes=st.lists(st.tuples(st.sampled_from(sorted(SHORT_NAMES)), NAME_TEXT), min_size=1, max_size=4),
    serial=st.integers(min_value=1, max_value=2**64),
)
@example(attributes=[("O", "Tillitstjenester Vest, AS")], serial=0x1F2E)
@example(attributes=[("CN", 'a\\"b"\\'), ("O", "\\\\,")], serial=1)
def test_a_key_id_of_any_issuer_round_trips_through_the_signature_header(attributes, serial):
    issuer = x509.Name([x509.NameAttribute(SHORT_NAMES[k], v) for k, v in attributes])
    key_id = f"SN={serial:X},CA={signing.rfc2253_name(issuer)}"
    header = signing.signature_header(key_id=key_id, header_names=["date"], signature="AAAA")
    plain = signing.decode_rfc2047(header)
    assert plain.startswith(f"keyId={signing.quoted_string(key_id)},")
    assert signing.parse_signature_header(header).key_id == key_id


def test_an_organization_identifier_is_written_as_the_hex_of_its_encoding():
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_IDENTIFIER, "PSDNO-FSA-123456789")])
    text = signing.rfc2253_name(name)
    oid, _, encoded = text.partition("=#")
    assert oid == "2.5.4.97"
    der = bytes.fromhex(encoded)
    assert der[0] == 0x0C and der[2:].decode() == "PSDNO-FSA-123456789"  # UTF8String, short length


@FUZZ
@given(data=st.binary(max_size=64))
def test_base64_of_random_signatures_never_verifies(tpp, data):
    headers = _headers({})
    signed = signing.sign_request("GET", "/v1/accounts", headers, None, tpp.key, tpp.certificate)
    # The header is RFC 2047 encoded (the keyId names a CA with non-ASCII letters): decode, forge, encode.
    plain = signing.decode_rfc2047(signed["Signature"])
    assert 'signature="' in plain
    forged = signing.encode_rfc2047(
        re.sub(r'signature="[^"]*"', f'signature="{base64.b64encode(data).decode()}"', plain)
    )
    assert forged != signed["Signature"]
    with pytest.raises(SignatureVerificationError):
        signing.verify_signature(forged, headers=signed, body=None, certificate=tpp.certificate)


@FUZZ
@given(
    date=HEADER_VALUE,
    request_id=HEADER_VALUE,
    body=st.binary(max_size=200),
)
@example(date="Mon, 02 Mar 2026 09:00:00 -0000", request_id="r", body=b"")  # no zone: naive
@example(date="Mon, 02 Mar 99999 09:00:00 GMT", request_id="r", body=b"{}")
@example(date="Mon, 02 Mar 2026 09:00:00 GMT", request_id=" r ", body=b"{}")
def test_a_well_signed_answer_with_any_date_and_request_id_is_judged_cleanly(tpp, date, request_id, body):
    """The binding checks read values the bank chose (Date, X-Request-ID): whatever they hold, a validly signed
    answer is accepted or refused with SignatureVerificationError, never another exception; and it is accepted
    only with the request's X-Request-ID and a Date within the window."""
    headers = {"Date": date, "X-Request-ID": request_id, "Digest": signing.digest_header(body)}
    names = ["date", "digest", "x-request-id"]
    value = signing.signature_for(names, method="", target="", headers=headers, key=tpp.key)
    headers["Signature"] = signing.signature_header(
        key_id=signing.key_id(tpp.certificate), header_names=names, signature=value
    )
    now = datetime(2026, 3, 2, 9, 1, tzinfo=UTC)
    try:
        signing.verify_response(
            headers["Signature"],
            headers=headers,
            body=body,
            certificate=tpp.certificate,
            request_id="r",
            now=now,
            max_age=300,
        )
    except SignatureVerificationError:
        return
    assert request_id.strip() == "r"
    assert abs((now - parsedate_to_datetime(date)).total_seconds()) <= 300
