"""Request signing as the bank profiles draft-cavage-http-signatures-12 (docs/bank-interface.md, spec 5).

Every request carries ``Digest`` (over the exact body bytes), ``TPP-Signature-Certificate`` (Base64 DER of the
QSealC, one line) and ``Signature``::

    keyId="SN=<upper-case hex serial>,CA=<issuer DN per RFC 2253>",algorithm="rsa-sha256",
    headers="date digest x-request-id ...",signature="<Base64 RSA-SHA256 over the UTF-8 signing string>"

Each part is an HTTP quoted-string: a backslash or double quote in the value (an issuer DN that RFC 2253 escapes,
``O=Tillitstjenester Vest\\, AS``) is written with a backslash before it (``\\\\`` and ``\\"``).

The signed headers are ``(request-target)`` (method, path and query: a signature never covers another address)
followed by those of ``date digest x-request-id psu-id psu-corporate-id tpp-redirect-uri`` present in the
request, in that order: PSU-ID and PSU-Corporate-ID whenever they are sent. When the Signature value holds
non-ASCII characters (a Norwegian letter in the issuer DN), it is sent RFC 2047 encoded as
``=?utf-8?B?<base64>?=``.

The bank's signed answers are read in the same profile (``verify_signature``), and ``verify_response`` adds what
binds an answer to its request: Date, X-Request-ID and (with a body) Digest signed, the request's X-Request-ID,
and a Date within a window of the caller's clock.

Everything here is a pure function of its arguments: no clock, no randomness. The caller supplies Date and
X-Request-ID (see ``xs2a.client``), so that a retry is signed again with a new Date, and the moment an answer
is judged at.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from xs2a.errors import ConfigurationError, InvalidRequestError

__all__ = [
    "ALGORITHM",
    "DIGEST_ALGORITHMS",
    "REQUEST_TARGET",
    "RESPONSE_SIGNED_HEADERS",
    "SIGNABLE_HEADERS",
    "RequestSigner",
    "SignatureParameters",
    "SignatureVerificationError",
    "certificate_header",
    "decode_rfc2047",
    "digest_header",
    "encode_rfc2047",
    "imf_fixdate",
    "key_id",
    "parse_signature_header",
    "quoted_string",
    "rfc2253_name",
    "sign_request",
    "signature_for",
    "signature_header",
    "signed_header_names",
    "signing_string",
    "unquote_string",
    "verify_digest",
    "verify_response",
    "verify_signature",
]

#: The headers the bank accepts in a signature, in the order they are signed (spec 5.4).
SIGNABLE_HEADERS: tuple[str, ...] = (
    "date",
    "digest",
    "x-request-id",
    "psu-id",
    "psu-corporate-id",
    "tpp-redirect-uri",
)
REQUEST_TARGET = "(request-target)"
ALGORITHM = "rsa-sha256"
#: Digest labels (RFC 3230 / RFC 5843) and their hash functions.
DIGEST_ALGORITHMS = {"SHA-256": hashlib.sha256, "SHA-512": hashlib.sha512}


class SignatureVerificationError(Exception):
    """A signature or digest (of a response) is malformed or does not verify; the message names the rule."""


# --- small pieces --------------------------------------------------------------------------------------------


def imf_fixdate(moment: datetime) -> str:
    """RFC 7231 IMF-fixdate (``Sun, 06 Nov 1994 08:49:37 GMT``) of a timezone-aware moment."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("imf_fixdate: a timezone-aware datetime is required")
    return format_datetime(moment.astimezone(UTC).replace(microsecond=0), usegmt=True)


def digest_header(body: bytes, algorithm: str = "SHA-256") -> str:
    """``SHA-256=<base64 hash>`` (or ``SHA-512=``) of exactly ``body``."""
    label = algorithm.upper()
    function = DIGEST_ALGORITHMS.get(label)
    if function is None:
        raise ValueError(f"digest algorithm {algorithm!r} is not supported (SHA-256 or SHA-512)")
    return f"{label}={base64.b64encode(function(body).digest()).decode('ascii')}"


def verify_digest(header_value: str, body: bytes) -> None:
    """Check a ``Digest`` header against ``body``: every supported algorithm given must match, at least one."""
    checked = 0
    for part in header_value.split(","):
        label, sep, encoded = part.strip().partition("=")
        if not sep:
            raise SignatureVerificationError("Digest: expected <algorithm>=<base64 hash>")
        function = DIGEST_ALGORITHMS.get(label.upper())
        if function is None:
            continue
        try:
            expected = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise SignatureVerificationError(f"Digest: the {label.upper()} value is not base64") from None
        if not hmac.compare_digest(function(body).digest(), expected):
            raise SignatureVerificationError(f"Digest: the {label.upper()} hash does not match the body")
        checked += 1
    if not checked:
        raise SignatureVerificationError("Digest: no supported algorithm (SHA-256 or SHA-512)")


def certificate_header(certificate: x509.Certificate) -> str:
    """TPP-Signature-Certificate: Base64 of the DER certificate, on one line."""
    return base64.b64encode(certificate.public_bytes(serialization.Encoding.DER)).decode("ascii")


# --- RFC 2253 as java.security.X500Principal.getName(RFC2253) writes it ---------------------------------------

# The only attribute types RFC 2253 (section 2.3) writes by short name; everything else is <dotted OID>=#<BER hex>.
_RFC2253_KEYWORDS = {
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
# ASN.1 string types X500Principal prints as text (others, e.g. UniversalString, are printed as #hex).
_TEXT_DECODERS = {
    0x0C: "utf-8",  # UTF8String
    0x13: "latin-1",  # PrintableString (a subset of ASCII)
    0x14: "latin-1",  # TeletexString, as Java reads it
    0x16: "latin-1",  # IA5String
    0x1B: "latin-1",  # GeneralString
    0x1E: "utf-16-be",  # BMPString
}
_RFC2253_ESCAPED = frozenset(',=+<>#;"\\')


def _der_read(data: bytes, offset: int) -> tuple[int, int, int, int]:
    """(tag, start of content, end of content, end of element) of the DER element at ``offset``."""
    if offset + 2 > len(data):
        raise ValueError("truncated DER")
    tag = data[offset]
    if tag & 0x1F == 0x1F:
        raise ValueError("high-tag-number DER tags are not expected in a Name")
    length = data[offset + 1]
    start = offset + 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or start + count > len(data):
            raise ValueError("unsupported DER length")
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    end = start + length
    if end > len(data):
        raise ValueError("truncated DER")
    return tag, start, end, end


def _der_children(data: bytes, start: int, end: int) -> Iterable[tuple[int, int, int, int]]:
    """The elements inside [start, end) as (tag, element start, content start, content end)."""
    offset = start
    while offset < end:
        tag, content_start, content_end, next_offset = _der_read(data, offset)
        yield tag, offset, content_start, content_end
        offset = next_offset


def _oid_text(content: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs:
        raise ValueError("empty OBJECT IDENTIFIER")
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(arc) for arc in head + arcs[1:])


def _rfc2253_value(text: str) -> str:
    out = []
    for char in text:
        if char in _RFC2253_ESCAPED:
            out.append("\\" + char)
        elif char == "\x00":
            out.append("\\00")
        else:
            out.append(char)
    escaped = "".join(out)
    # Leading and trailing spaces (and CRs) are escaped, as X500Principal does.
    lead = len(escaped) - len(escaped.lstrip(" \r"))
    trail = len(escaped.rstrip(" \r"))
    return "".join("\\" + c if i < lead or i >= trail else c for i, c in enumerate(escaped))


def rfc2253_name(name: x509.Name) -> str:
    """A distinguished name in RFC 2253 form as Java's ``X500Principal.getName(RFC2253)`` writes it.

    Most specific RDN first; short names only for CN L ST O OU C STREET DC UID; any other attribute type (for
    example organizationIdentifier) as ``<dotted OID>=#<hex of the value's BER encoding>``; ``,=+<>#;"\\``
    escaped with a backslash; non-ASCII characters kept as they are (UTF-8 once encoded).
    """
    der = name.public_bytes()
    tag, start, end, _ = _der_read(der, 0)
    if tag != 0x30:
        raise ValueError("a Name is a DER SEQUENCE")
    rdns: list[str] = []
    for set_tag, _, set_start, set_end in _der_children(der, start, end):
        if set_tag != 0x31:
            raise ValueError("an RDN is a DER SET")
        avas = []
        for seq_tag, _, seq_start, seq_end in _der_children(der, set_start, set_end):
            if seq_tag != 0x30:
                raise ValueError("an AttributeTypeAndValue is a DER SEQUENCE")
            parts = list(_der_children(der, seq_start, seq_end))
            if len(parts) != 2 or parts[0][0] != 0x06:
                raise ValueError("an AttributeTypeAndValue is (OID, value)")
            oid = _oid_text(der[parts[0][2] : parts[0][3]])
            value_tag, value_start, value_content, value_end = parts[1]
            keyword = _RFC2253_KEYWORDS.get(oid)
            codec = _TEXT_DECODERS.get(value_tag)
            if keyword is None or codec is None:
                avas.append(f"{keyword or oid}=#{der[value_start:value_end].hex()}")
            else:
                avas.append(f"{keyword}={_rfc2253_value(der[value_content:value_end].decode(codec))}")
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


def key_id(certificate: x509.Certificate) -> str:
    """``SN=<upper-case hex serial>,CA=<issuer DN per RFC 2253>``."""
    return f"SN={certificate.serial_number:X},CA={rfc2253_name(certificate.issuer)}"


# --- RFC 2047 ------------------------------------------------------------------------------------------------

_RFC2047 = re.compile(r"^=\?(?P<charset>[^?]+)\?(?P<encoding>[BbQq])\?(?P<text>[^?]*)\?=$")


def encode_rfc2047(value: str) -> str:
    """``value`` unchanged when ASCII, else ``=?utf-8?B?<base64 of its UTF-8>?=`` on one line (no folding)."""
    if value.isascii():
        return value
    return "=?utf-8?B?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def decode_rfc2047(value: str) -> str:
    """The inverse of ``encode_rfc2047`` (B encoding; UTF-8 or ISO-8859-1); other values come back unchanged."""
    match = _RFC2047.match(value.strip())
    if not match:
        return value
    charset = match["charset"].lower()
    if charset not in {"utf-8", "utf8", "iso-8859-1", "latin1", "latin-1"}:
        raise SignatureVerificationError(f"Signature: RFC 2047 charset {charset!r} is not supported")
    if match["encoding"].upper() != "B":
        raise SignatureVerificationError("Signature: only the RFC 2047 B encoding is supported")
    try:
        return base64.b64decode(match["text"], validate=True).decode(charset)
    except (binascii.Error, ValueError):
        raise SignatureVerificationError("Signature: the RFC 2047 encoded value cannot be decoded") from None


# --- signing -------------------------------------------------------------------------------------------------


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(value, str):
            raise InvalidRequestError(f"header {name}: a str value is expected, got {type(value).__name__}")
        if "\n" in value or "\r" in value:
            raise InvalidRequestError(f"header {name}: a value must not contain a line break")
        lowered[name.lower()] = value
    return lowered


def signing_string(header_names: Sequence[str], *, method: str, target: str, headers: Mapping[str, str]) -> str:
    """One ``<lower-case name>: <value>`` line per name, in order, joined by newlines.

    ``(request-target)`` is ``<lower-case method> <path?query>``. A listed header absent from ``headers``
    (looked up case-insensitively) is an error: the caller chose to sign it.
    """
    lowered = _lower(headers)
    lines = []
    for name in header_names:
        name = name.lower()
        if name == REQUEST_TARGET:
            lines.append(f"{REQUEST_TARGET}: {method.lower()} {target}")
            continue
        if name not in lowered:
            raise InvalidRequestError(f"header {name} is to be signed but is absent")
        lines.append(f"{name}: {lowered[name]}")
    return "\n".join(lines)


def _rsa_sha256(key: rsa.RSAPrivateKey, message: str) -> str:
    raw = key.sign(message.encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())
    return base64.b64encode(raw).decode("ascii")


def signature_for(
    header_names: Sequence[str], *, method: str, target: str, headers: Mapping[str, str], key: rsa.RSAPrivateKey
) -> str:
    """Base64 RSA-SHA256 (PKCS#1 v1.5) signature over the signing string of exactly ``header_names``.

    The low-level primitive: it signs whatever names it is given (the published vectors sign ``host``,
    ``content-type`` and ``content-length`` too).
    """
    return _rsa_sha256(key, signing_string(header_names, method=method, target=target, headers=headers))


def quoted_string(value: str) -> str:
    """``value`` as an HTTP quoted-string (RFC 9110 5.6.4): in double quotes, with backslash and double quote
    escaped by a backslash. An issuer DN that RFC 2253 escapes (``O=Tillitstjenester Vest\\, AS``) thus keeps
    its backslash through the Signature header."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unquote_string(value: str) -> str:
    """The inverse of :func:`quoted_string` for the text between the quotes: ``\\x`` stands for ``x``."""
    return _QUOTED_PAIR.sub(r"\1", value)


_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)


def signature_header(
    *, key_id: str, header_names: Sequence[str], signature: str, algorithm: str = ALGORITHM
) -> str:
    """The Signature header value (each part a quoted-string), RFC 2047 encoded when it holds non-ASCII."""
    names = " ".join(name.lower() for name in header_names)
    parts = {"keyId": key_id, "algorithm": algorithm, "headers": names, "signature": signature}
    return encode_rfc2047(",".join(f"{name}={quoted_string(value)}" for name, value in parts.items()))


def signed_header_names(headers: Mapping[str, str]) -> list[str]:
    """``(request-target)``, then the signable headers present in ``headers``, in the bank's order."""
    present = {name.lower() for name in headers}
    return [REQUEST_TARGET, *(name for name in SIGNABLE_HEADERS if name in present)]


_GENERATED = frozenset({"signature", "tpp-signature-certificate"})


class RequestSigner:
    """Signs requests with one key and certificate; the keyId and certificate header are computed once.

    ``sign`` is a pure function of its arguments and makes exactly one RSA signature.
    """

    def __init__(
        self,
        key: rsa.RSAPrivateKey,
        certificate: x509.Certificate,
        *,
        digest_algorithm: str = "SHA-256",
    ) -> None:
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ConfigurationError("an RSA private key is required (algorithm rsa-sha256)")
        if key.public_key().public_numbers() != certificate.public_key().public_numbers():
            raise ConfigurationError("the signing key does not belong to the signing certificate")
        if digest_algorithm.upper() not in DIGEST_ALGORITHMS:
            raise ConfigurationError(
                f"digest algorithm {digest_algorithm!r} is not supported (SHA-256 or SHA-512)"
            )
        try:
            self.key_id = key_id(certificate)
        except ValueError as exc:
            raise ConfigurationError(
                f"the signing certificate's issuer cannot be written (RFC 2253): {exc}"
            ) from None
        self.key = key
        self.certificate = certificate
        self.digest_algorithm = digest_algorithm.upper()
        self.certificate_header = certificate_header(certificate)

    def sign(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> dict[str, str]:
        out = {name: value for name, value in headers.items() if name.lower() not in _GENERATED}
        present = {name.lower() for name in out}
        if body is not None and "digest" not in present:
            out["Digest"] = digest_header(body, self.digest_algorithm)
        out["TPP-Signature-Certificate"] = self.certificate_header
        names = signed_header_names(out)
        signature = signature_for(names, method=method, target=target, headers=out, key=self.key)
        out["Signature"] = signature_header(key_id=self.key_id, header_names=names, signature=signature)
        return out


def sign_request(
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes | None,
    key: rsa.RSAPrivateKey,
    certificate: x509.Certificate,
    *,
    digest_algorithm: str = "SHA-256",
) -> dict[str, str]:
    """A new dict: ``headers`` plus Digest (when there is a body), TPP-Signature-Certificate and Signature.

    ``headers`` holds what the caller decided (Date, X-Request-ID, TPP-Redirect-URI, PSU-ID, PSU-Corporate-ID,
    ...; names are matched case-insensitively). ``target`` is the path and query as sent. A Digest already in
    ``headers`` is kept; any Signature or TPP-Signature-Certificate given is replaced.
    """
    return RequestSigner(key, certificate, digest_algorithm=digest_algorithm).sign(method, target, headers, body)


# --- verification (of the bank's signed responses) ----------------------------------------------------------


@dataclass(frozen=True)
class SignatureParameters:
    key_id: str
    algorithm: str
    headers: tuple[str, ...]
    signature: bytes


_PART = re.compile(r'\s*([A-Za-z]+)="((?:[^"\\]|\\.)*)"\s*(?:,|$)', re.DOTALL)


def parse_signature_header(value: str) -> SignatureParameters:
    """Parse ``keyId``, ``algorithm``, ``headers`` and ``signature`` (after undoing RFC 2047); each part is a
    quoted-string, its backslash escapes undone."""
    text = decode_rfc2047(value)
    params: dict[str, str] = {}
    position = 0
    while position < len(text):
        match = _PART.match(text, position)
        if not match:
            raise SignatureVerificationError('Signature: expected comma-separated key="value" parts')
        if match[1] in params:
            raise SignatureVerificationError(f"Signature: the part {match[1]} is given twice")
        params[match[1]] = unquote_string(match[2])
        position = match.end()
    for required in ("keyId", "signature"):
        if required not in params:
            raise SignatureVerificationError(f"Signature: the part {required} is missing")
    algorithm = params.get("algorithm", ALGORITHM)
    if algorithm.lower() != ALGORITHM:
        raise SignatureVerificationError(f"Signature: algorithm {algorithm!r} is not supported ({ALGORITHM})")
    names = tuple(params.get("headers", "date").split())
    if not names:
        raise SignatureVerificationError("Signature: headers is empty")
    try:
        raw = base64.b64decode(params["signature"], validate=True)
    except (binascii.Error, ValueError):
        raise SignatureVerificationError("Signature: signature is not base64") from None
    return SignatureParameters(params["keyId"], algorithm.lower(), names, raw)


def verify_signature(
    signature_value: str,
    *,
    headers: Mapping[str, str],
    body: bytes | None,
    certificate: x509.Certificate,
    method: str = "",
    target: str = "",
    required_headers: Iterable[str] = ("date", "digest"),
) -> SignatureParameters:
    """Verify a Signature header against ``certificate`` and, when a Digest is given, the body.

    Raises SignatureVerificationError when the keyId names another certificate, a listed header is absent, a
    header in ``required_headers`` is present in the message but not covered by the signature, the Digest does
    not match the body, or the signature does not verify.
    """
    params = parse_signature_header(signature_value)
    try:
        expected_key_id = key_id(certificate)
    except ValueError as exc:
        raise SignatureVerificationError(f"Signature: the configured certificate's issuer: {exc}") from None
    if params.key_id != expected_key_id:
        raise SignatureVerificationError(
            f"Signature: keyId {params.key_id!r} does not name the configured certificate {expected_key_id!r}"
        )
    try:
        lowered = _lower(headers)
    except ValueError as exc:  # a header value of the message that no signing string can hold
        raise SignatureVerificationError(f"Signature: {exc}") from None
    for name in required_headers:
        if name in lowered and name not in params.headers:
            raise SignatureVerificationError(f"Signature: the {name} header is present but not signed")
    if "digest" in lowered and body is not None:
        verify_digest(lowered["digest"], body)
    try:
        message = signing_string(params.headers, method=method, target=target, headers=lowered)
    except ValueError as exc:
        raise SignatureVerificationError(f"Signature: {exc}") from None
    public_key = certificate.public_key()
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise SignatureVerificationError("Signature: the configured certificate does not hold an RSA key")
    try:
        public_key.verify(params.signature, message.encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise SignatureVerificationError("Signature: does not verify with the configured certificate") from None
    return params


#: What a signed answer's Signature must cover, whatever else it covers: its Date and its X-Request-ID, which bind
#: it to one moment and one request, and (with a body) its Digest, which binds the body.
RESPONSE_SIGNED_HEADERS: tuple[str, ...] = ("date", "x-request-id")


def _shown(value: str, limit: int = 64) -> str:
    """A header value of the answer as a refusal names it: quoted, and cut short (the bank chose it)."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


def verify_response(
    signature_value: str | None,
    *,
    headers: Mapping[str, str],
    body: bytes,
    certificate: x509.Certificate,
    request_id: str,
    now: datetime,
    max_age: float,
    method: str = "",
    target: str = "",
) -> SignatureParameters:
    """Verify a signed answer of the bank and that it answers this request, now.

    Beyond :func:`verify_signature` (the keyId names ``certificate``, the signature verifies, a Digest matches
    the body), the answer must:

    - be signed over ``date`` and ``x-request-id``, and over ``digest`` when it has a body (a body with no Digest,
      or with a Digest the signature does not cover, is unauthenticated);
    - carry the X-Request-ID of the request (``request_id``): an answer signed for another request is not this
      one's;
    - carry a Date no more than ``max_age`` seconds from ``now`` (either way): an answer signed days earlier and
      replayed is refused, however well signed.

    ``now`` is the caller's clock (timezone-aware); nothing here reads a clock. Raises
    SignatureVerificationError naming the first rule broken.
    """
    if not signature_value:
        raise SignatureVerificationError("the answer carries no Signature header")
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("verify_response: a timezone-aware now is required")
    params = parse_signature_header(signature_value)
    lowered = {name.lower(): value for name, value in headers.items()}
    required = [*RESPONSE_SIGNED_HEADERS, *(("digest",) if body else ())]
    for name in required:
        if name not in lowered:
            raise SignatureVerificationError(f"the answer carries no {name} header (required in a signed answer)")
        if name not in params.headers:
            raise SignatureVerificationError(f"Signature: the {name} header is not signed")
    verify_signature(
        signature_value,
        headers=headers,
        body=body,
        certificate=certificate,
        method=method,
        target=target,
        required_headers=(*RESPONSE_SIGNED_HEADERS, "digest"),
    )
    answered = lowered["x-request-id"].strip()
    if not hmac.compare_digest(answered.encode("utf-8"), request_id.encode("utf-8")):
        raise SignatureVerificationError(
            f"X-Request-ID {_shown(answered)} of the answer is not the request's {request_id!r} "
            "(an answer to another request)"
        )
    try:
        dated = parsedate_to_datetime(lowered["date"])
    except (TypeError, ValueError, IndexError):
        dated = None
    if dated is None or dated.tzinfo is None:
        raise SignatureVerificationError(f"Date {_shown(lowered['date'])} of the answer is not an HTTP date")
    age = (now - dated).total_seconds()
    if abs(age) > max_age:
        when = f"{age:.0f} seconds old" if age > 0 else f"{-age:.0f} seconds ahead"
        raise SignatureVerificationError(
            f"Date {_shown(lowered['date'])} of the answer is {when}, outside the {max_age:g} seconds allowed "
            "(a replayed or delayed answer)"
        )
    return params
