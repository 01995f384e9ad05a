"""Development PKI: a test CA and the certificates the portal and the sandbox bank need.

Made at set-up (``make run``, ``make test``), never committed. The layout mirrors what a TPP gets from a
qualified trust service provider (ETSI TS 119 495):

- ``ca.pem`` / ``ca.key``: the test CA. Its distinguished name carries a Norwegian letter and an
  organizationIdentifier so that the RFC 2253 keyId and the RFC 2047 Signature encoding are exercised on every
  request, not only in one test.
- ``tpp-qseal.pem`` / ``tpp-qseal.key``: the TPP's QSealC, with the PSD2 QCStatement (roles PSP_AI and PSP_PI,
  NCA Finanstilsynet / NO-FSA) and organizationIdentifier ``PSDNO-FSA-...``. Signs requests.
- ``bank-signing.pem`` / ``bank-signing.key``: the sandbox bank's seal, used to sign its responses.
- ``bank-tls.pem`` / ``bank-tls.key``: a TLS server certificate for the sandbox bank on loopback (and for the
  names given with ``--tls-host``, e.g. ``bank`` in docker/compose.yaml).

Run ``python -m devtools.pki var/pki`` (``--force`` to make new ones). The functions are also used by tests
that need certificates with other roles, issuers or validity.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

# ETSI TS 119 495 / EN 319 412-5 object identifiers.
QC_STATEMENTS_OID = ObjectIdentifier("1.3.6.1.5.5.7.1.3")
QC_COMPLIANCE = "0.4.0.1862.1.1"
QC_TYPE = "0.4.0.1862.1.6"
QC_TYPE_ESEAL = "0.4.0.1862.1.6.2"
QC_TYPE_WEB = "0.4.0.1862.1.6.3"
PSD2_STATEMENT = "0.4.0.19495.2"
PSD2_ROLES = {
    "PSP_AS": "0.4.0.19495.1.1",
    "PSP_PI": "0.4.0.19495.1.2",
    "PSP_AI": "0.4.0.19495.1.3",
    "PSP_IC": "0.4.0.19495.1.4",
}

CA_NAME = x509.Name(
    [
        x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Utviklingssertifikater Tromsø"),
        x509.NameAttribute(NameOID.ORGANIZATION_IDENTIFIER, "NTRNO-987654321"),
        x509.NameAttribute(NameOID.COMMON_NAME, "TPP Portal Development CA Ærø"),
    ]
)
TPP_NAME = x509.Name(
    [
        x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Fjordpay AS"),
        x509.NameAttribute(NameOID.ORGANIZATION_IDENTIFIER, "PSDNO-FSA-998877665"),
        x509.NameAttribute(NameOID.COMMON_NAME, "Fjordpay AS QSealC (development)"),
    ]
)
BANK_NAME = x509.Name(
    [
        x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Sandkasse Bank ASA"),
        x509.NameAttribute(NameOID.ORGANIZATION_IDENTIFIER, "PSDNO-FSA-912345678"),
        x509.NameAttribute(NameOID.COMMON_NAME, "Sandkasse Bank response seal (development)"),
    ]
)


# --- a minimal DER writer: the QCStatement is the only structure cryptography cannot build itself ---------


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _tlv(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _der_length(len(content)) + content


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _utf8(text: str) -> bytes:
    return _tlv(0x0C, text.encode("utf-8"))


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    out = bytearray([40 * arcs[0] + arcs[1]])
    for arc in arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def qc_statements_der(
    roles: tuple[str, ...],
    nca_name: str = "Finanstilsynet",
    nca_id: str = "NO-FSA",
    qc_type: str = QC_TYPE_ESEAL,
) -> bytes:
    """DER of the QCStatements extension value: QcCompliance, QcType and the PSD2 statement."""
    role_items = [_seq(_oid(PSD2_ROLES[role]), _utf8(role)) for role in roles]
    psd2 = _seq(_oid(PSD2_STATEMENT), _seq(_seq(*role_items), _utf8(nca_name), _utf8(nca_id)))
    compliance = _seq(_oid(QC_COMPLIANCE))
    qctype = _seq(_oid(QC_TYPE), _seq(_oid(qc_type)))
    return _seq(compliance, qctype, psd2)


# --- issuing -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issued:
    certificate: x509.Certificate
    key: rsa.RSAPrivateKey

    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, passphrase: bytes | None = None) -> bytes:
        encryption = (
            serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
        )
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def new_key(bits: int = 2048) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def issue_ca(name: x509.Name = CA_NAME, *, days: int = 3650, key: rsa.RSAPrivateKey | None = None) -> Issued:
    key = key or new_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(cert, key)


def issue_qseal(
    ca: Issued,
    subject: x509.Name = TPP_NAME,
    *,
    roles: tuple[str, ...] = ("PSP_AI", "PSP_PI"),
    not_before: dt.datetime | None = None,
    days: int = 730,
    key: rsa.RSAPrivateKey | None = None,
) -> Issued:
    """A QSealC-style signing certificate carrying the PSD2 QCStatement with ``roles``."""
    key = key or new_key()
    start = not_before or (_now() - dt.timedelta(minutes=5))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
        .add_extension(x509.UnrecognizedExtension(QC_STATEMENTS_OID, qc_statements_der(roles)), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return Issued(cert, key)


def issue_tls_server(
    ca: Issued, *, hosts: tuple[str, ...] = ("localhost", "127.0.0.1"), days: int = 730
) -> Issued:
    key = new_key()
    now = _now()
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return Issued(cert, key)


class CountingKey(rsa.RSAPrivateKey):
    """A real key that counts the RSA signatures made with it (tests and benchmarks: one signature per attempt)."""

    def __init__(self, key: rsa.RSAPrivateKey) -> None:
        self._key = key
        self.signatures = 0

    def sign(self, data, padding, algorithm):
        self.signatures += 1
        return self._key.sign(data, padding, algorithm)

    def decrypt(self, ciphertext, padding):
        return self._key.decrypt(ciphertext, padding)

    @property
    def key_size(self):
        return self._key.key_size

    def public_key(self):
        return self._key.public_key()

    def private_numbers(self):
        return self._key.private_numbers()

    def private_bytes(self, encoding, format, encryption_algorithm):
        return self._key.private_bytes(encoding, format, encryption_algorithm)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


# --- files ---------------------------------------------------------------------------------------------

FILES = ("ca", "tpp-qseal", "bank-signing", "bank-tls")


def _write(path: Path, data: bytes, *, secret: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(path, flags, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def write_dev_pki(directory: Path, *, force: bool = False, tls_hosts: tuple[str, ...] = ()) -> list[Path]:
    """Write the development PKI into ``directory``; existing files are kept unless ``force``. ``tls_hosts``:
    more names for the bank's TLS certificate, besides localhost and 127.0.0.1."""
    directory.mkdir(parents=True, exist_ok=True)
    targets = [directory / f"{name}.pem" for name in FILES]
    if not force and all(p.exists() and (p.with_suffix(".key")).exists() for p in targets):
        return []
    ca = issue_ca()
    issued = {
        "ca": ca,
        "tpp-qseal": issue_qseal(ca),
        "bank-signing": issue_qseal(ca, BANK_NAME, roles=()),
        "bank-tls": issue_tls_server(ca, hosts=("localhost", "127.0.0.1", *tls_hosts)),
    }
    written = []
    for name, item in issued.items():
        _write(directory / f"{name}.pem", item.cert_pem(), secret=False)
        _write(directory / f"{name}.key", item.key_pem(), secret=True)
        written += [directory / f"{name}.pem", directory / f"{name}.key"]
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, nargs="?", default=Path("var/pki"))
    parser.add_argument("--force", action="store_true", help="replace existing certificates")
    parser.add_argument(
        "--tls-host", action="append", default=[], help="another name for the bank's TLS certificate (repeatable)"
    )
    args = parser.parse_args(argv)
    written = write_dev_pki(args.directory, force=args.force, tls_hosts=tuple(args.tls_host))
    if written:
        print(f"development certificates written to {args.directory}/")
    else:
        print(f"development certificates already present in {args.directory}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
