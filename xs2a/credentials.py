"""Loading the TPP's certificates and keys (PEM; the key may be encrypted PKCS#8 with a passphrase)."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from xs2a.errors import ConfigurationError

__all__ = ["CredentialError", "load_certificate", "load_private_key"]


class CredentialError(ConfigurationError):
    """A certificate or key cannot be used; the message names the file and the reason (never the secret)."""


def load_certificate(path: str | os.PathLike[str]) -> x509.Certificate:
    """The first certificate of a PEM file (a DER file is accepted too)."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise CredentialError(f"{file}: cannot read the certificate ({exc.strerror})") from None
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            return x509.load_pem_x509_certificate(data)
        return x509.load_der_x509_certificate(data)
    except ValueError:
        raise CredentialError(f"{file}: not a PEM or DER X.509 certificate") from None


def load_private_key(path: str | os.PathLike[str], passphrase: str | bytes | None = None) -> rsa.RSAPrivateKey:
    """An RSA private key from a PEM file: plain or encrypted PKCS#8 (or traditional RSA PEM).

    The caller passes the passphrase (the portal's from its settings, BANK_SIGNING_KEY_PASSPHRASE): the library
    reads no environment. Errors name the file and the problem, never the passphrase.
    """
    file = Path(path)
    password = passphrase.encode("utf-8") if isinstance(passphrase, str) else passphrase
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise CredentialError(f"{file}: cannot read the private key ({exc.strerror})") from None
    encrypted = b"ENCRYPTED" in data
    if encrypted and not password:
        raise CredentialError(f"{file}: the key is encrypted and no passphrase was given")
    try:
        key = serialization.load_pem_private_key(data, password=password if encrypted else None)
    except TypeError:
        raise CredentialError(f"{file}: the key is not encrypted but a passphrase was given") from None
    except ValueError:
        if encrypted:
            raise CredentialError(f"{file}: the passphrase is wrong or the key is damaged") from None
        raise CredentialError(f"{file}: not a PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise CredentialError(f"{file}: an RSA key is required (the bank expects rsa-sha256)")
    if password and not encrypted:
        raise CredentialError(f"{file}: the key is not encrypted but a passphrase was given")
    return key
