"""Exceptions of the bank client, and the one function that maps an error response to its exception.

Every bank error is an ``Xs2aError`` carrying the HTTP status (None when no response came), the tppMessages
(category, code, path, text), the X-Request-ID of the call, the method and endpoint (path template), and the
scaRedirect link when the bank gave one. Nothing else leaves the client: a malformed answer, a link to another
host, a broken connection or an argument refused before sending are all an ``Xs2aError`` (the last two kinds
are ``ValueError`` too, for callers that check their input that way). Subclasses exist for what a caller acts
on::

    Xs2aError
    ├── ConfigurationError          the client cannot be built as configured (also a ValueError)
    ├── InvalidRequestError         the client refused to send: an argument is invalid (also a ValueError)
    ├── TransportError              no answer, and the request changed nothing at the bank: it never left (no
    │                               name, connection refused, TLS handshake failed, connect timeout), or it was
    │                               a safe request (GET) whose answer was lost
    ├── OutcomeUnknownError         a request that changes something (POST, PUT, PATCH, DELETE) may have reached
    │   │                           the bank and its answer did not come (reset, close, TLS alert, read timeout)
    │   └── ServerOutcomeUnknownError  ... or came as 5xx (also a ServerError)
    ├── ResponseSignatureError      the bank's answer is unsigned, its Signature does not verify, or it does
    │   │                           not answer this request now (another X-Request-ID, a Date out of window)
    │   └── ResponseSignatureOutcomeUnknownError  ... to a request that changes something (also an
    │                               OutcomeUnknownError: the bank may have processed it)
    ├── UnexpectedResponseError     a success response the client cannot read (not JSON, wrong shape)
    │   ├── ResponseTooLargeError   the answer is longer than the client's cap (ClientConfig.max_response_bytes)
    │   └── LinkError               a link of the bank's that the client will not follow (another host, no href)
    ├── ClientError                 4xx
    │   ├── ScaRequiredError        the body carries a scaRedirect link: send the PSU there
    │   ├── ConsentError            ├─ ConsentInvalidError, ConsentExpiredError, ConsentUnknownError
    │   ├── ConsentDeletionNotOfferedError  404/405 to DELETE /v1/bank-offered-consents: end it at the bank
    │   ├── AccessExceededError     429 / ACCESS_EXCEEDED, with the reset time when given
    │   ├── FormatError             the request was malformed; ``field`` names the path
    │   ├── SignatureRejectedError  the bank refused the signature or the certificate
    │   ├── ResourceUnknownError    404 / RESOURCE_UNKNOWN / PRODUCT_UNKNOWN
    │   └── PaymentFailedError      PAYMENT_FAILED
    └── ServerError                 5xx (to a request that changes something: ServerOutcomeUnknownError)

``TransportError`` and ``OutcomeUnknownError`` are apart on purpose: a handler of "nothing was sent" (put the
payment back to the user) can never catch an unknown outcome by accident. Which one a failure is, is decided by
where it happened, not by its message (``xs2a.transport.was_not_sent``; docs/bank-interface.md, "Unknown outcome
or not sent").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = [
    "SAFE_METHODS",
    "AccessExceededError",
    "ClientError",
    "ConfigurationError",
    "ConsentDeletionNotOfferedError",
    "ConsentError",
    "ConsentExpiredError",
    "ConsentInvalidError",
    "ConsentUnknownError",
    "FormatError",
    "InvalidRequestError",
    "LinkError",
    "OutcomeUnknownError",
    "PaymentFailedError",
    "ResourceUnknownError",
    "ResponseSignatureError",
    "ResponseSignatureOutcomeUnknownError",
    "ResponseTooLargeError",
    "ScaRequiredError",
    "ServerError",
    "ServerOutcomeUnknownError",
    "SignatureRejectedError",
    "TppMessage",
    "TransportError",
    "UnexpectedResponseError",
    "Xs2aError",
    "error_from_response",
    "load_json",
    "parse_retry_after",
    "parse_tpp_messages",
]


@dataclass(frozen=True)
class TppMessage:
    """One element of tppMessages (spec 2.7): category ERROR or WARNING, a section-7 code, path, text."""

    category: str
    code: str
    path: str | None = None
    text: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> TppMessage:
        if not isinstance(data, Mapping):
            return cls(category="ERROR", code="UNREADABLE", text=str(data)[:512])
        return cls(
            category=str(data.get("category") or "ERROR"),
            code=str(data.get("code") or "UNKNOWN"),
            path=None if data.get("path") is None else str(data["path"]),
            text=None if data.get("text") is None else str(data["text"]),
        )


class Xs2aError(Exception):
    """A call to the bank failed; everything needed to act on it and to reconcile it is attached."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        tpp_messages: Sequence[TppMessage] = (),
        request_id: str | None = None,
        method: str | None = None,
        endpoint: str | None = None,
        sca_redirect: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.tpp_messages = tuple(tpp_messages)
        self.request_id = request_id
        self.method = method
        self.endpoint = endpoint
        self.sca_redirect = sca_redirect
        self.body = body

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(m.code for m in self.tpp_messages)

    @property
    def code(self) -> str | None:
        """The code of the first ERROR message (or of the first message), if any."""
        for message in self.tpp_messages:
            if message.category.upper() == "ERROR":
                return message.code
        return self.tpp_messages[0].code if self.tpp_messages else None

    @property
    def path(self) -> str | None:
        for message in self.tpp_messages:
            if message.path:
                return message.path
        return None

    @property
    def text(self) -> str | None:
        for message in self.tpp_messages:
            if message.text:
                return message.text
        return None

    def __str__(self) -> str:
        parts = [self.message]
        if self.method or self.endpoint:
            parts.append(f"{self.method or ''} {self.endpoint or ''}".strip())
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        for message in self.tpp_messages:
            detail = message.code + (f" at {message.path}" if message.path else "")
            parts.append(detail + (f": {message.text}" if message.text else ""))
        if self.request_id:
            parts.append(f"X-Request-ID {self.request_id}")
        return " | ".join(parts)


class ConfigurationError(Xs2aError, ValueError):
    """The client cannot be built as configured (a setting out of range, a key that does not fit its
    certificate, an unreadable file). Raised when the client is made, never during a call."""


class InvalidRequestError(Xs2aError, ValueError):
    """The client refused to send the request: an argument is invalid (a float amount, an empty id, a character
    the bank cannot process, a PSU header value). Nothing was sent."""


class ServerError(Xs2aError):
    """The bank failed (5xx). To a request that changes something it is a :class:`ServerOutcomeUnknownError`;
    to a safe one (GET) a plain ServerError, retried by the client where the status allows (502, 503, 504)."""


#: Methods that change nothing at the bank: their lost answers are never an unknown outcome, and only they are
#: ever sent again by the client itself (``RetryPolicy.retry_methods``).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class TransportError(Xs2aError):
    """No answer, and the request changed nothing at the bank.

    Either nothing of the request left this machine (the bank's name did not resolve, the connection was refused
    or timed out, the TLS handshake failed: the client proves this, it does not guess it), or the request was a
    safe one (GET), whose answer was lost after it may have reached the bank: a read changes nothing, so its
    outcome is known and it may simply be asked again. A request that changes something and may have reached the
    bank is never a TransportError but an :class:`OutcomeUnknownError`.
    """


class OutcomeUnknownError(Xs2aError):
    """A request that changes something (POST, PUT, PATCH, DELETE) may or may not have been processed by the bank:
    it may have reached the bank, and no usable answer came (the connection was reset or closed, a TLS alert or a
    broken record came instead of the answer, the answer timed out, or the bank answered 5xx).

    Never a TransportError: "nothing was sent" is not known. Reconcile with ``request_id`` (the X-Request-ID that
    was sent) before trying again; never send it again under a new X-Request-ID.
    """


class ServerOutcomeUnknownError(ServerError, OutcomeUnknownError):
    """A 5xx answer to a request that changes something: the bank failed, and whether it processed the request
    first is not known. It carries the bank's status, tppMessages and the X-Request-ID like any ServerError."""


class ResponseSignatureError(Xs2aError):
    """With the bank's seal configured (``ClientConfig.response_certificate``), its answer carries no Signature,
    one that does not verify against the seal, or one that does not bind it to this request (the signature does
    not cover Date, X-Request-ID and, with a body, Digest; the X-Request-ID is another request's; the Date is
    outside ``ClientConfig.response_max_age``). The answer is not used; ``reason`` says why.

    To a safe request (GET) it is this class; to a request that changes something it is a
    :class:`ResponseSignatureOutcomeUnknownError`.
    """

    def __init__(self, message: str, *, reason: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.reason = reason


class ResponseSignatureOutcomeUnknownError(ResponseSignatureError, OutcomeUnknownError):
    """An answer refused (see :class:`ResponseSignatureError`) to a request that changes something (POST, PUT,
    PATCH, DELETE): whatever the refused answer said, the request may have reached the bank and been processed.
    Reconcile with ``request_id`` before trying again, as for any unknown outcome."""


class UnexpectedResponseError(Xs2aError):
    """A success response that cannot be read: not JSON, or not the shape of the operation."""


class ResponseTooLargeError(UnexpectedResponseError):
    """The answer's body is longer than the client reads (``ClientConfig.max_response_bytes``).

    The client stops reading at the cap (or at once, when Content-Length already says so) and closes the
    connection, so a runaway answer never fills the memory. ``limit`` is the cap, ``received`` the bytes read
    before stopping and ``declared`` the Content-Length, when the bank sent one.
    """

    def __init__(self, message: str, *, limit: int, received: int, declared: int | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.limit = limit
        self.received = received
        self.declared = declared


class LinkError(UnexpectedResponseError):
    """A link of the bank's (``_links``) that the client will not follow: it points at another host (a signed
    request never leaves for another address), has no href, or is not a link at all. Nothing was sent."""


class ClientError(Xs2aError):
    """The bank refused the request (4xx)."""


class ScaRequiredError(ClientError):
    """The bank asks for strong customer authentication: send the PSU to ``sca_redirect``."""


class ConsentError(ClientError):
    """The consent behind an account-information request cannot be used."""


class ConsentInvalidError(ConsentError):
    """CONSENT_INVALID."""


class ConsentExpiredError(ConsentError):
    """CONSENT_EXPIRED: the PSU must give consent again."""


class ConsentUnknownError(ConsentError):
    """CONSENT_UNKNOWN: the consent does not exist (any more); the PSU may have revoked it at the bank."""


class ConsentDeletionNotOfferedError(ClientError):
    """The bank does not offer ending a consent through the interface (404 or 405 to DELETE
    /v1/bank-offered-consents): the PSU ends it at the bank (spec 5.7: the PSU may revoke consent directly with
    the bank)."""


class AccessExceededError(ClientError):
    """ACCESS_EXCEEDED / 429: too many requests; ``retry_after`` and ``reset_at`` when the bank said."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, reset_at: datetime | None = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after
        self.reset_at = reset_at


class FormatError(ClientError):
    """The request was malformed; ``field`` is the path the bank named (a body field or a header)."""

    @property
    def field(self) -> str | None:
        return self.path


class SignatureRejectedError(ClientError):
    """The bank refused the request's Signature, Digest, Date or TPP-Signature-Certificate."""


class ResourceUnknownError(ClientError):
    """The addressed payment, account, transaction or product does not exist for this TPP and PSU."""


class PaymentFailedError(ClientError):
    """PAYMENT_FAILED: the bank refused to execute the payment."""


# --- the mapping -------------------------------------------------------------------------------------------

_CONSENT = {
    "CONSENT_INVALID": ConsentInvalidError,
    "CONSENT_EXPIRED": ConsentExpiredError,
    "CONSENT_UNKNOWN": ConsentUnknownError,
}
_FORMAT_CODES = frozenset(
    {
        "FORMAT_ERROR",
        "HTTP_HEADER_REQUIRED",
        "QUERY_PARAMETER_REQUIRED",
        "PARAMETER_NOT_CONSISTENT",
        "PARAMETER_NOT_SUPPORTED",
        "EXECUTION_DATE_INVALID",
        "KID_MISSING",
        "KID_INVALID",
        "PERIOD_INVALID",
        "TIMESTAMP_INVALID",
    }
)
_UNKNOWN_CODES = frozenset({"RESOURCE_UNKNOWN", "NOT_FOUND", "PRODUCT_UNKNOWN"})
#: The operation a bank may not offer: ending a consent through the interface.
_CONSENT_DELETION = ("DELETE", "/v1/bank-offered-consents")
# Headers whose rejection means the signature or the certificate was refused (the bank answers 400 for these).
_SIGNATURE_PATHS = frozenset({"signature", "tpp-signature-certificate", "digest", "date"})


def _is_signature_message(message: TppMessage) -> bool:
    code = message.code.upper()
    if code.startswith(("SIGNATURE_", "CERTIFICATE_")):
        return True
    return (message.path or "").strip().lower() in _SIGNATURE_PATHS


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> tuple[float | None, datetime | None]:
    """Retry-After as (seconds from now, moment); (None, None) when absent or unreadable."""
    if not value:
        return None, None
    now = now or datetime.now(UTC)
    text = value.strip()
    if text.isascii() and text.isdigit():
        if len(text) > 9:  # over 31 years: not a real answer (and beyond what timedelta holds)
            return None, None
        seconds = float(int(text))
        return seconds, now + timedelta(seconds=seconds)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None, None
    if moment is None or moment.tzinfo is None:
        return None, None
    return max(0.0, (moment - now).total_seconds()), moment.astimezone(UTC)


def _decode(body: bytes | str | Mapping[str, Any] | None) -> Any:
    if body is None or isinstance(body, Mapping | list):
        return body
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        return load_json(body)
    except (ValueError, RecursionError):
        return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259)")


def load_json(text: str | bytes) -> Any:
    """The bank's JSON: numbers with a fraction as Decimal (never float); NaN and Infinity refused (not JSON).
    Raises ValueError (UnicodeDecodeError included) or RecursionError (nesting too deep)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(text, parse_float=Decimal, parse_constant=_no_constant)


def parse_tpp_messages(data: Any) -> tuple[TppMessage, ...]:
    if not isinstance(data, Mapping):
        return ()
    raw = data.get("tppMessages")
    if not isinstance(raw, list):
        return ()
    return tuple(TppMessage.from_json(item) for item in raw)


def _sca_redirect(data: Any) -> str | None:
    if not isinstance(data, Mapping):
        return None
    links = data.get("_links")
    if not isinstance(links, Mapping):
        return None
    link = links.get("scaRedirect")
    if isinstance(link, Mapping) and isinstance(link.get("href"), str):
        return link["href"]
    if isinstance(link, str):
        return link
    return None


def error_from_response(
    *,
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
    request_id: str | None = None,
    method: str | None = None,
    endpoint: str | None = None,
    now: datetime | None = None,
) -> Xs2aError:
    """The exception for an error response (status 300 and above). The one place that decides the class."""
    data = _decode(body)
    messages = parse_tpp_messages(data)
    codes = {m.code.upper() for m in messages}
    sca_redirect = _sca_redirect(data)
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    common: dict[str, Any] = {
        "status": status,
        "tpp_messages": messages,
        "request_id": request_id,
        "method": method,
        "endpoint": endpoint,
        "sca_redirect": sca_redirect,
        "body": data,
    }
    first = next(iter(messages), None)
    summary = (first.text or first.code) if first else f"HTTP {status}"

    if status >= 500:
        if (method or "").upper() not in SAFE_METHODS:
            return ServerOutcomeUnknownError(
                f"the bank failed ({summary}): the request may or may not have been processed; reconcile with "
                "its X-Request-ID before trying again",
                **common,
            )
        return ServerError(f"the bank failed: {summary}", **common)
    if status < 400:
        return UnexpectedResponseError(f"unexpected HTTP {status} (redirects are not followed)", **common)
    if any(_is_signature_message(m) for m in messages):
        return SignatureRejectedError(f"the bank refused the signature or certificate: {summary}", **common)
    if status == 429 or "ACCESS_EXCEEDED" in codes:
        retry_after, reset_at = parse_retry_after(lowered.get("retry-after"), now=now)
        return AccessExceededError(
            f"access exceeded: {summary}", retry_after=retry_after, reset_at=reset_at, **common
        )
    if sca_redirect:
        return ScaRequiredError(f"strong customer authentication is required: {summary}", **common)
    for code, cls in _CONSENT.items():
        if code in codes:
            return cls(f"consent cannot be used: {summary}", **common)
    if ((method or "").upper(), endpoint) == _CONSENT_DELETION and status in {404, 405}:
        return ConsentDeletionNotOfferedError(
            f"the bank does not offer ending the consent here (HTTP {status}); the PSU ends it at the bank",
            **common,
        )
    if "PAYMENT_FAILED" in codes:
        return PaymentFailedError(f"the payment failed: {summary}", **common)
    if codes & _FORMAT_CODES:
        return FormatError(f"the request was malformed: {summary}", **common)
    if status == 404 or codes & _UNKNOWN_CODES:
        return ResourceUnknownError(f"unknown resource: {summary}", **common)
    return ClientError(f"the bank refused the request: {summary}", **common)
