"""The TPP's eIDAS certificate: parsing, RFC 2253 issuer names, PSD2 roles and trust.

Parsing and chain checks run once per distinct certificate (cached by the header value), because every request
of a TPP carries the same certificate; only the validity dates are compared on each request.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID, ObjectIdentifier
from pyasn1.codec.der import decoder as der_decoder
from pyasn1.error import PyAsn1Error
from pyasn1.type import char, namedtype, univ

# --- ASN.1 structures (RFC 5280 Name; ETSI EN 319 412-5 QCStatements; ETSI TS 119 495 PSD2 statement) ---


class _AttributeTypeAndValue(univ.Sequence):
    componentType = namedtype.NamedTypes(
        namedtype.NamedType("type", univ.ObjectIdentifier()),
        namedtype.NamedType("value", univ.Any()),
    )


class _RelativeDistinguishedName(univ.SetOf):
    componentType = _AttributeTypeAndValue()


class _Name(univ.SequenceOf):
    componentType = _RelativeDistinguishedName()


class _QcStatement(univ.Sequence):
    componentType = namedtype.NamedTypes(
        namedtype.NamedType("statementId", univ.ObjectIdentifier()),
        namedtype.OptionalNamedType("statementInfo", univ.Any()),
    )


class _QcStatements(univ.SequenceOf):
    componentType = _QcStatement()


class _RoleOfPsp(univ.Sequence):
    componentType = namedtype.NamedTypes(
        namedtype.NamedType("roleOfPspOid", univ.ObjectIdentifier()),
        namedtype.NamedType("roleOfPspName", char.UTF8String()),
    )


class _RolesOfPsp(univ.SequenceOf):
    componentType = _RoleOfPsp()


class _Psd2QcType(univ.Sequence):
    componentType = namedtype.NamedTypes(
        namedtype.NamedType("rolesOfPSP", _RolesOfPsp()),
        namedtype.NamedType("nCAName", char.UTF8String()),
        namedtype.NamedType("nCAId", char.UTF8String()),
    )


QC_STATEMENTS_OID = ObjectIdentifier("1.3.6.1.5.5.7.1.3")
PSD2_STATEMENT = "0.4.0.19495.2"
PSD2_ROLE_OIDS = {
    "0.4.0.19495.1.1": "PSP_AS",
    "0.4.0.19495.1.2": "PSP_PI",
    "0.4.0.19495.1.3": "PSP_AI",
    "0.4.0.19495.1.4": "PSP_IC",
}

# RFC 2253 section 2.3: the attribute types written by their short name; every other type is written as a
# dotted OID and '#' + hex of the BER-encoded value (as Java's X500Principal does).
_RFC2253_SHORT_NAMES = {
    "2.5.4.3": "CN",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.6": "C",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}


class CertificateError(Exception):
    """The certificate is unusable; the message names the rule that failed."""


# Escaped with a backslash wherever they occur, as java.security.X500Principal (RFC2253) does; leading and trailing
# spaces are escaped as well.
_RFC2253_SPECIALS = frozenset(',=+<>#;"\\')
# ASN.1 string types written as text; other value types are written as '#' + hex even for short-name types.
_TEXT_TAGS = frozenset({0x0C, 0x13, 0x14, 0x16, 0x1B, 0x1E})


def _escape_rfc2253(value: str) -> str:
    out = ["\\" + ch if ch in _RFC2253_SPECIALS else ch for ch in value]
    lead = len(value) - len(value.lstrip(" "))
    trail = len(value.rstrip(" "))
    return "".join("\\" + ch if (i < lead or i >= trail) and ch == " " else ch for i, ch in enumerate(out))


def rfc2253_name(name_der: bytes) -> str:
    """The distinguished name in RFC 2253 form, most specific RDN first; non-ASCII characters kept as is."""
    try:
        name, rest = der_decoder.decode(name_der, asn1Spec=_Name())
    except PyAsn1Error as exc:
        raise CertificateError(f"the issuer name cannot be parsed ({exc})") from None
    if rest:
        raise CertificateError("the issuer name has trailing bytes")
    rdns = []
    for rdn in reversed(list(name)):
        parts = []
        for atv in rdn:
            oid = str(atv["type"])
            raw = bytes(atv["value"])
            short = _RFC2253_SHORT_NAMES.get(oid)
            if short is None or not raw or raw[0] not in _TEXT_TAGS:
                parts.append(f"{oid}=#{raw.hex()}")
                continue
            try:
                decoded, _ = der_decoder.decode(raw)
                text = str(decoded)
            except (PyAsn1Error, UnicodeDecodeError):
                parts.append(f"{oid}=#{raw.hex()}")
                continue
            parts.append(f"{short}={_escape_rfc2253(text)}")  # non-ASCII kept as is
        rdns.append("+".join(parts))
    return ",".join(rdns)


def psd2_roles(certificate: x509.Certificate) -> tuple[frozenset[str], str, str]:
    """Roles, NCA name and NCA id from the PSD2 QCStatement; CertificateError when absent or malformed."""
    try:
        extension = certificate.extensions.get_extension_for_oid(QC_STATEMENTS_OID)
    except x509.ExtensionNotFound:
        raise CertificateError("the certificate has no QCStatements extension (1.3.6.1.5.5.7.1.3)") from None
    raw = getattr(extension.value, "value", None)
    if raw is None:  # a cryptography version that parses QCStatements itself
        raw = extension.value.public_bytes()
    try:
        statements, _ = der_decoder.decode(raw, asn1Spec=_QcStatements())
        for statement in statements:
            if str(statement["statementId"]) != PSD2_STATEMENT:
                continue
            if not statement["statementInfo"].isValue:
                raise CertificateError("the PSD2 QCStatement carries no roles")
            psd2, _ = der_decoder.decode(bytes(statement["statementInfo"]), asn1Spec=_Psd2QcType())
            roles = frozenset(
                PSD2_ROLE_OIDS[str(role["roleOfPspOid"])]
                for role in psd2["rolesOfPSP"]
                if str(role["roleOfPspOid"]) in PSD2_ROLE_OIDS
            )
            return roles, str(psd2["nCAName"]), str(psd2["nCAId"])
    except PyAsn1Error as exc:
        raise CertificateError(f"the QCStatements extension cannot be parsed ({exc})") from None
    raise CertificateError("the certificate has no PSD2 QCStatement (0.4.0.19495.2)")


@dataclass(frozen=True)
class TppCertificate:
    """What the bank needs from a verified TPP certificate."""

    certificate: x509.Certificate
    public_key: rsa.RSAPublicKey
    serial_hex: str  # upper-case hexadecimal, as in keyId SN=
    issuer_rfc2253: str  # as in keyId CA=
    organization_identifier: str
    organization_name: str
    roles: frozenset[str]
    not_before: dt.datetime
    not_after: dt.datetime
    fingerprint: str = field(repr=False)


@dataclass(frozen=True)
class _Parsed:
    value: TppCertificate | None
    error: str | None


def _load_trusted(paths: tuple[Path, ...]) -> tuple[x509.Certificate, ...]:
    trusted: list[x509.Certificate] = []
    for path in paths:
        trusted.extend(x509.load_pem_x509_certificates(path.read_bytes()))
    return tuple(trusted)


@functools.lru_cache(maxsize=8)
def trusted_cas(paths: tuple[Path, ...]) -> tuple[x509.Certificate, ...]:
    return _load_trusted(paths)


def _chain_error(certificate: x509.Certificate, trusted: tuple[x509.Certificate, ...]) -> str | None:
    """None when a trusted CA issued ``certificate``; else why not."""
    now = dt.datetime.now(dt.UTC)
    for ca in trusted:
        if ca.subject != certificate.issuer:
            continue
        try:
            certificate.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        try:
            constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
        except x509.ExtensionNotFound:
            return "the issuing CA certificate has no basicConstraints"
        if not constraints.ca:
            return "the issuing certificate is not a CA"
        if not ca.not_valid_before_utc <= now <= ca.not_valid_after_utc:
            return "the issuing CA certificate is outside its validity period"
        return None
    return "the certificate does not chain to a trusted CA"


@functools.lru_cache(maxsize=512)
def _parse_cached(header_value: str, trusted_paths: tuple[Path, ...]) -> _Parsed:
    try:
        return _Parsed(_parse(header_value, trusted_cas(trusted_paths)), None)
    except CertificateError as exc:
        return _Parsed(None, str(exc))


def _parse(header_value: str, trusted: tuple[x509.Certificate, ...]) -> TppCertificate:
    try:
        der = base64.b64decode(header_value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise CertificateError("TPP-Signature-Certificate is not base64") from None
    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        raise CertificateError("TPP-Signature-Certificate is not a DER X.509 certificate") from None
    public_key = certificate.public_key()
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise CertificateError("TPP-Signature-Certificate does not hold an RSA key (rsa-sha256 is expected)")
    chain_error = _chain_error(certificate, trusted)
    if chain_error:
        raise CertificateError(chain_error)
    roles, _nca_name, _nca_id = psd2_roles(certificate)
    org_ids = certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_IDENTIFIER)
    if not org_ids or not str(org_ids[0].value).strip():
        raise CertificateError("the certificate subject has no organizationIdentifier (2.5.4.97)")
    names = certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return TppCertificate(
        certificate=certificate,
        public_key=public_key,
        serial_hex=f"{certificate.serial_number:X}",
        issuer_rfc2253=rfc2253_name(certificate.issuer.public_bytes()),
        organization_identifier=str(org_ids[0].value),
        organization_name=str(names[0].value) if names else str(org_ids[0].value),
        roles=roles,
        not_before=certificate.not_valid_before_utc,
        not_after=certificate.not_valid_after_utc,
        fingerprint=hashlib.sha256(der).hexdigest(),
    )


def load_tpp_certificate(header_value: str, trusted_paths: tuple[Path, ...], *, at: dt.datetime) -> TppCertificate:
    """The verified certificate of TPP-Signature-Certificate, or CertificateError naming the failed rule."""
    parsed = _parse_cached(header_value, trusted_paths)
    if parsed.value is None:
        raise CertificateError(parsed.error or "the certificate is invalid")
    cert = parsed.value
    if at < cert.not_before:
        raise CertificateError("the certificate is not yet valid")
    if at > cert.not_after:
        raise CertificateError("the certificate has expired")
    return cert
