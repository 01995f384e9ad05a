"""Logging filters: the request id on every record, and secrets redacted before anything is written; and the
formatters that stamp every line in UTC.

Redacted (``redact``): the values of secret-named fields (signatures, PSU identifiers, the TPP-Session-ID,
passwords, tokens, cookies ...), of people's names (creditorName, ownerName, first_name ...), of the query
parameters state and q, PEM blocks, and 11-digit numbers (national identity numbers). ``core.observability``
scrubs traces and error reports with the same function and more.

Times: Django sets the process's local time zone to TIME_ZONE (Europe/Oslo, what users see), so logging's
default clock would print Oslo time while honcho, gunicorn's master and the other services print UTC. Every log
line is therefore written in UTC with its offset shown (``UtcFormatter``, ``UtcJsonFormatter``), whatever
TIME_ZONE is; gunicorn's logs do the same (tpp_portal/gunicorn.conf.py).
"""

from __future__ import annotations

import logging
import re
import time

from pythonjsonlogger.json import JsonFormatter

from core.requestid import current_request_id

# Names whose values must never reach a log line, whatever logged them: signatures, certificates, PSU
# identifiers, the TPP-Session-ID, national identity numbers, passwords, keys, tokens, cookies.
# (The S105 exemption below: these are the names of secrets, not a secret.)
_SECRET_NAME = (
    r"(?:signature|tpp-signature-certificate|psu[-_]?id|psu[-_]?corporate[-_]?id|x-psu-identity"  # noqa: S105
    r"|tpp[-_]?session[-_]?id|national[-_]?id\w*|f[oø]dselsnummer|personnummer|fnr|ssn"
    r"|\w*password\w*|\w*passphrase|\w*secret\w*|authorization|proxy-authorization|set-cookie|cookie|sessionid"
    r"|csrftoken|csrfmiddlewaretoken|api[-_]?key|\w*token)"
)
# People's names (creditorName, creditor_name, ultimateDebtor, ownerName, first_name ...). Their values hold spaces
# ("Kari Nordmann"), so a bare one runs to the next separator.
_PERSON_NAME = (
    r"(?:\w*(?:first|last|full|given|family|middle|sur|creditor|debtor|counterparty|owner|holder|customer|payee"
    r"|payer|beneficiary|person|display)[-_]?name|ultimate[-_]?(?:creditor|debtor)|account[-_]?holder)"
)
# Query parameters whose values are a person's or the redirect's: the SCA callback's state, the search box's
# text (a name, an account); with the names above, also encoded (next=%2Fbank%2Fcallback%3Fstate%3D...).
_QUERY_NAME = rf"(?:state|q|{_SECRET_NAME}|{_PERSON_NAME})"
# Header-like names whose whole value (spaces included: "Bearer abc", "Basic abc") is secret.
_WHOLE_LINE_NAMES = r"(?:authorization|proxy-authorization|cookie|set-cookie|signature|tpp-signature-certificate)"
_PATTERNS = [
    # creditor_name=Kari Nordmann, ownerName: 'Kari Nordmann'  -> up to the next separator.
    re.compile(rf"""(?ix)(?P<key>\b{_PERSON_NAME}\s*[:=]\s*)(?P<value>"[^"]*"|'[^']*'|[^,;&}})\[\]\r\n"']+)"""),
    # ?state=abc&psu-id=… and their encoded forms: the value up to the next parameter.
    re.compile(rf"""(?ix)(?P<key>(?:^|[?&]|%3F|%26){_QUERY_NAME}(?:=|%3D))(?P<value>(?:(?!%26)[^&\s"'#<>])*)"""),
    # ('Authorization', 'Bearer abc') and {"psuId": "…"}: a quoted name, then a quoted value.
    re.compile(
        rf"""(?ix)(?P<key>(["'])(?:{_SECRET_NAME}|{_PERSON_NAME})\2\s*[:,=]\s*)(?P<value>"[^"]*"|'[^']*')"""
    ),
    # Authorization: Bearer abc def  -> everything up to the end of the line.
    re.compile(rf"(?imx)(?P<key>\b{_WHOLE_LINE_NAMES}\s*:\s*)(?P<value>[^\r\n]+)"),
    # name=value, name: value (bare or quoted value).
    re.compile(rf"""(?ix)(?P<key>\b{_SECRET_NAME}\s*[:=]\s*)(?P<value>"[^"]*"|'[^']*'|[^\s,;&}})\[\]]+)"""),
]
_SECRET_KEY_NAME = re.compile(rf"(?i)^(?:{_SECRET_NAME}|{_PERSON_NAME})$")
# 11 digits, optionally as 6+5: a Norwegian national identity number (fødselsnummer, D-number), or an 11-digit
# account number, which is kept out as well.
_NATIONAL_ID = re.compile(r"(?<![\w.])\d{6}[ .]?\d{5}(?!\w)")
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----", re.S)
_REDACTED = "[redacted]"
# Attributes every LogRecord has; anything else came from ``extra=`` and is checked too.
_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def _quoted(match: re.Match) -> str:
    value = match.group("value")
    quote = value[0] if value[:1] in {'"', "'"} else ""
    return match.group("key") + quote + _REDACTED + quote


def redact(text: str) -> str:
    text = _PEM.sub(_REDACTED, text)
    for pattern in _PATTERNS:
        text = pattern.sub(_quoted, text)
    return _NATIONAL_ID.sub(_REDACTED, text)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class RedactingFilter(logging.Filter):
    """Formats the message once, redacts it, and freezes it so handlers cannot re-expand the secrets.

    Values passed through ``extra=`` are redacted too: a secret-named attribute loses its value, and string
    values are scrubbed like the message.
    """

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
        for name, value in list(vars(record).items()):
            if name in _STANDARD_ATTRIBUTES or name == "request_id":
                continue
            if _SECRET_KEY_NAME.match(name):
                setattr(record, name, _REDACTED)
            elif isinstance(value, str):
                setattr(record, name, redact(value))
            elif isinstance(value, dict | list | tuple):
                setattr(record, name, redact(repr(value)))
        return True


class UtcFormatter(logging.Formatter):
    """Times in UTC with the offset shown: 2026-12-07T05:10:00.123+0000 (or ``datefmt`` on UTC's clock)."""

    converter = time.gmtime

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        return f"{time.strftime('%Y-%m-%dT%H:%M:%S', self.converter(record.created))}.{int(record.msecs):03d}+0000"


class UtcJsonFormatter(JsonFormatter):
    """The production JSON lines, their time in UTC (``datefmt``'s %z gives +0000)."""

    converter = time.gmtime
