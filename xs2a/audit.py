"""The audit record handed to the client's audit hook after every attempt (one per HTTP exchange).

It says what was asked of the bank and what came back, and nothing that identifies the PSU or could be replayed:
PSU identifiers (PSU-ID, PSU-Corporate-ID, X-PSU-IDENTITY, the PSU's IP address, device and location), the
Signature and the certificate are redacted, and any PSU identifier the bank echoes in a tppMessage text is
blanked out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from xs2a.errors import TppMessage
from xs2a.psu import PSU_IDENTIFYING_HEADERS

__all__ = ["REDACTED", "AuditHook", "AuditRecord", "redact_headers", "redact_text"]

REDACTED = "[redacted]"
_SECRET_HEADERS = PSU_IDENTIFYING_HEADERS | {
    "signature",
    "tpp-signature-certificate",
    "aspsp-signature-certificate",
}


@dataclass(frozen=True)
class AuditRecord:
    """One attempt of one call to the bank."""

    started_at: datetime  # timezone-aware UTC
    method: str
    path_template: str  # "/v1/accounts/{account_id}/transactions": no ids, no query
    request_id: str  # X-Request-ID (the same on every attempt of a call)
    attempt: int  # 1 for the first attempt
    status: int | None  # None when no response arrived
    duration_ms: float
    psu_present: bool  # PSU-IP-Address was sent
    bytes_sent: int  # request body
    bytes_received: int  # response body
    tpp_message_codes: tuple[str, ...] = ()
    tpp_message_texts: tuple[str, ...] = ()
    error: str | None = None  # class name of the exception the attempt ended in, if any
    #: Why the client refused the bank's answer (its signature, or its binding to this request); "" otherwise.
    refusal_reason: str = ""
    will_retry: bool = False
    request_headers: Mapping[str, str] = field(default_factory=dict)  # redacted
    response_headers: Mapping[str, str] = field(default_factory=dict)  # redacted


AuditHook = Callable[[AuditRecord], None]


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: (REDACTED if name.lower() in _SECRET_HEADERS else value) for name, value in headers.items()}


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def message_fields(
    messages: Iterable[TppMessage], secrets: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    secrets = [s for s in secrets if s]
    codes: list[str] = []
    texts: list[str] = []
    for message in messages:
        codes.append(message.code)
        if message.text:
            texts.append(redact_text(message.text, secrets))
    return tuple(codes), tuple(texts)
