"""HTTP message signatures as the bank profiles them (draft-cavage-12 with the rules of spec section 5).

- ``Signature: keyId="SN=<hex>,CA=<RFC 2253 issuer>",algorithm="rsa-sha256",headers="date digest ...",
  signature="<base64>"``, possibly wrapped as RFC 2047 ``=?utf-8?B?<base64 of the whole value>?=`` when the
  issuer name holds non-ASCII characters.
- The signing string is one ``<lower-case name>: <value>`` line per listed header, joined with newlines;
  ``(request-target)`` is ``<lower-case method> <path and query>``.
- ``Digest: SHA-256=<base64>`` (or SHA-512) over the exact body bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import quopri
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

REQUEST_TARGET = "(request-target)"
SUPPORTED_ALGORITHMS = frozenset({"rsa-sha256"})
DIGEST_ALGORITHMS: dict[str, Callable[[bytes], hashlib._Hash]] = {
    "SHA-256": hashlib.sha256,
    "SHA-512": hashlib.sha512,
}

_ENCODED_WORD = re.compile(r"^=\?([A-Za-z0-9_.:-]+)\?([BbQq])\?([^?]*)\?=$")
_PARAM = re.compile(r'\s*([A-Za-z]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


class SignatureError(Exception):
    """The signature is unusable or wrong; the message names the rule that failed."""


@dataclass(frozen=True)
class SignatureParameters:
    key_id: str
    algorithm: str
    headers: tuple[str, ...]
    signature: bytes


def decode_rfc2047(value: str) -> str:
    """The value itself, or the decoded text of one RFC 2047 encoded word (charset utf-8 or iso-8859-1)."""
    value = value.strip()
    match = _ENCODED_WORD.match(value)
    if not match:
        return value
    charset, encoding, payload = match.group(1).lower(), match.group(2).upper(), match.group(3)
    if charset not in {"utf-8", "utf8", "iso-8859-1", "latin-1", "latin1"}:
        raise SignatureError(f"Signature header: RFC 2047 charset {charset!r} is not supported")
    try:
        if encoding == "B":
            raw = base64.b64decode(payload, validate=True)
        else:
            raw = quopri.decodestring(payload.replace("_", " ").encode("ascii"), header=True)
        return raw.decode("utf-8" if charset.startswith("utf") else "iso-8859-1")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise SignatureError("Signature header: the RFC 2047 encoded value cannot be decoded") from None


def parse_signature_header(value: str) -> SignatureParameters:
    """Parse ``keyId``, ``algorithm``, ``headers`` and ``signature``; SignatureError names what is wrong."""
    text = decode_rfc2047(value)
    params: dict[str, str] = {}
    position = 0
    while position < len(text):
        match = _PARAM.match(text, position)
        if not match or match.end() == position:
            raise SignatureError(
                'Signature header: expected comma-separated key="value" parts '
                "(keyId, algorithm, headers, signature)"
            )
        name = match.group(1)
        if name in params:
            raise SignatureError(f"Signature header: the part {name} is given twice")
        params[name] = re.sub(r"\\(.)", r"\1", match.group(2))
        position = match.end()
    for required in ("keyId", "algorithm", "headers", "signature"):
        if not params.get(required):
            raise SignatureError(f"Signature header: the part {required} is missing")
    algorithm = params["algorithm"].lower()
    if algorithm not in SUPPORTED_ALGORITHMS:
        raise SignatureError(f"Signature header: algorithm {params['algorithm']!r} is not supported (rsa-sha256)")
    headers = tuple(params["headers"].split(" "))
    if any(not h or h != h.lower() for h in headers):
        raise SignatureError("Signature header: headers must be lower-case names separated by single spaces")
    if len(set(headers)) != len(headers):
        raise SignatureError("Signature header: a header is listed twice in headers")
    try:
        signature = base64.b64decode(params["signature"], validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("Signature header: signature is not base64") from None
    return SignatureParameters(params["keyId"], algorithm, headers, signature)


def parse_key_id(key_id: str) -> tuple[str, str]:
    """``SN=<serial>,CA=<issuer>`` -> (serial, issuer)."""
    if not key_id.startswith("SN=") or ",CA=" not in key_id:
        raise SignatureError("Signature keyId: expected the form SN=<serial>,CA=<issuer>")
    serial, issuer = key_id[3:].split(",CA=", 1)
    if not serial or not issuer:
        raise SignatureError("Signature keyId: expected the form SN=<serial>,CA=<issuer>")
    return serial, issuer


def signing_string(
    header_names: Iterable[str], get_header: Callable[[str], str | None], *, method: str, target: str
) -> str:
    """The string that was signed: one ``name: value`` line per listed header, in the listed order."""
    lines = []
    for name in header_names:
        if name == REQUEST_TARGET:
            lines.append(f"{REQUEST_TARGET}: {method.lower()} {target}")
            continue
        value = get_header(name)
        if value is None:
            raise SignatureError(f"Signature headers: {name} is listed but absent from the request")
        lines.append(f"{name}: {value}")
    return "\n".join(lines)


def verify_rsa_sha256(public_key: rsa.RSAPublicKey, signature: bytes, message: str) -> None:
    try:
        public_key.verify(signature, message.encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise SignatureError(
            "Signature: the signature does not verify with TPP-Signature-Certificate over the listed headers"
        ) from None


def verify_digest(header_value: str, body: bytes) -> None:
    """Check ``Digest`` against the exact body bytes; at least one supported algorithm and all of them match."""
    checked = 0
    for part in header_value.split(","):
        label, sep, encoded = part.strip().partition("=")
        if not sep:
            raise SignatureError("Digest: expected <algorithm>=<base64 hash>")
        algorithm = DIGEST_ALGORITHMS.get(label.upper())
        if algorithm is None:
            continue
        try:
            expected = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise SignatureError(f"Digest: the {label.upper()} value is not base64") from None
        if algorithm(body).digest() != expected:
            raise SignatureError(f"Digest: the {label.upper()} hash does not match the request body")
        checked += 1
    if not checked:
        raise SignatureError("Digest: no supported algorithm (SHA-256 or SHA-512)")
