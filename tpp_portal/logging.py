"""Logging filters: the request id on every record, and secrets redacted before anything is written."""

from __future__ import annotations

import logging
import re

from tpp_portal.requestid import current_request_id

# Values that must never reach a log line, whatever logged them: signatures, certificates, PSU identifiers,
# passwords, keys, tokens. Matched as ``name: value``, ``name=value`` or ``"name": "value"``.
_SECRET_NAMES = "|".join(
    [
        "signature",
        "tpp-signature-certificate",
        "psu-id",
        "psu-corporate-id",
        "x-psu-identity",
        "psu_id",
        "psu_corporate_id",
        "password",
        "passphrase",
        "secret",
        "secret_key",
        "authorization",
        "cookie",
        "sessionid",
        "csrftoken",
        r"api[_-]?key",
        "token",
    ]
)
_PATTERN = re.compile(
    rf"""(?ix)
    (?P<key>["']?(?:{_SECRET_NAMES})["']?\s*[:=]\s*)   # the name and its separator
    (?P<value>"[^"]*"|'[^']*'|[^\s,;&}}]+)             # a quoted or bare value
    """
)
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----", re.S)
_REDACTED = "[redacted]"


def redact(text: str) -> str:
    text = _PEM.sub(_REDACTED, text)
    return _PATTERN.sub(lambda m: m.group("key") + _REDACTED, text)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class RedactingFilter(logging.Filter):
    """Formats the message once, redacts it, and freezes it so handlers cannot re-expand the secrets."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            # Formatters re-render exc_info themselves; keep only the redacted text.
            record.exc_text = redact(record.exc_text)
            record.exc_info = None
        return True
