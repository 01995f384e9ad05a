"""Optional signing of the bank's responses with its seal (spec 5.2: "responses may be signed").

On when ``BANK_SIM_SIGN_RESPONSES`` is true: the response gets ``Date``, ``Digest`` (SHA-256 of the body),
``ASPSP-Signature-Certificate`` and a ``Signature`` over ``date digest x-request-id`` in the same profile as
requests (keyId ``SN=<hex>,CA=<RFC 2253 issuer>``, each part an HTTP quoted-string, RFC 2047 wrapping when the
value is not ASCII). X-Request-ID is the request's (set by ``bank_simulator.access`` before signing) and Date the
real moment of signing: the portal accepts a signed answer only for its own request and within minutes of its
clock.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from email.utils import format_datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from django.conf import settings
from django.http import HttpResponse

from bank_simulator import clock
from bank_simulator.security.certificates import rfc2253_name

SIGNED_HEADERS = ("date", "digest", "x-request-id")


@functools.lru_cache(maxsize=1)
def _seal() -> tuple[rsa.RSAPrivateKey, str, str]:
    certificate = x509.load_pem_x509_certificate(settings.BANK_SIM_SIGNING_CERT.read_bytes())
    key = serialization.load_pem_private_key(settings.BANK_SIM_SIGNING_KEY.read_bytes(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TypeError("BANK_SIM_SIGNING_KEY: an RSA key is expected")
    key_id = f"SN={certificate.serial_number:X},CA={rfc2253_name(certificate.issuer.public_bytes())}"
    der = certificate.public_bytes(serialization.Encoding.DER)
    return key, key_id, base64.b64encode(der).decode("ascii")


def encode_rfc2047(value: str) -> str:
    if value.isascii():
        return value
    return "=?utf-8?B?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def quoted_string(value: str) -> str:
    """``value`` as an HTTP quoted-string: a backslash or double quote in it (an issuer DN that RFC 2253 escapes,
    ``O=Tillitstjenester Vest\\, AS``) is written with a backslash before it, as the TPP un-escapes it."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sign(response: HttpResponse) -> HttpResponse:
    if not settings.BANK_SIM_SIGN_RESPONSES:
        return response
    key, key_id, certificate = _seal()
    response["Date"] = format_datetime(clock.real_now(), usegmt=True)
    response["Digest"] = "SHA-256=" + base64.b64encode(hashlib.sha256(response.content).digest()).decode("ascii")
    lines = "\n".join(f"{name}: {response[name]}" for name in SIGNED_HEADERS if name in response)
    names = " ".join(name for name in SIGNED_HEADERS if name in response)
    signature = base64.b64encode(key.sign(lines.encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())).decode()
    response["ASPSP-Signature-Certificate"] = certificate
    response["Signature"] = encode_rfc2047(
        f'keyId={quoted_string(key_id)},algorithm="rsa-sha256",headers="{names}",signature="{signature}"'
    )
    return response
