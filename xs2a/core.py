"""The core of the bank client: one request, from the operation's arguments to the bank's answer or an error.

The services (``xs2a.services``) say which request; nothing here knows an operation. A call goes through small
steps, each one function or object (botocore's endpoint and stripe-python's requestor are the models):

- :meth:`Requester.prepare`: a :class:`Call` from the arguments: the address, the body's exact bytes, every
  header but Date and the signature (X-Request-ID a new UUID unless given, TPP-Redirect-URI, x-accept-fix, the
  PSU headers of the ``PsuContext``);
- :meth:`Requester.send`: the attempts, each one :meth:`Requester._attempt`: a Date from the clock, signed again
  (``xs2a.signing.RequestSigner``), sent over the pooled session, the body read as a stream under the size cap,
  the answer's signature checked (:class:`ResponseVerifier`), and recorded (:class:`Auditor`, one
  ``AuditRecord`` per attempt). :class:`~xs2a.config.RetryPolicy` decides whether to wait and try again: only
  safe methods (GET), on connection errors, timeouts and 429/502/503/504, honouring Retry-After, a bounded number
  of times, with the same X-Request-ID. Any other method is sent once: when it may have reached the bank without
  an answer (or was answered 5xx), ``OutcomeUnknownError`` carries the X-Request-ID to reconcile with; only a
  failure that proves nothing left (:func:`transport_error`) is a ``TransportError``;
- :func:`read`: an error status to its exception (``error_from_response``, the one mapping), a success to the
  operation's typed record (``UnexpectedResponseError`` when it does not fit).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from http.cookiejar import DefaultCookiePolicy
from typing import Any, TypeVar

import requests
from cryptography import x509

from xs2a import models
from xs2a.audit import AuditHook, AuditRecord, message_fields, redact_headers
from xs2a.config import ClientConfig
from xs2a.errors import (
    SAFE_METHODS,
    InvalidRequestError,
    OutcomeUnknownError,
    ResponseSignatureError,
    ResponseSignatureOutcomeUnknownError,
    ResponseTooLargeError,
    TransportError,
    UnexpectedResponseError,
    Xs2aError,
    error_from_response,
    load_json,
    parse_retry_after,
    parse_tpp_messages,
)
from xs2a.links import BaseUrl, template_for
from xs2a.psu import PsuContext
from xs2a.signing import RequestSigner, SignatureVerificationError, imf_fixdate, verify_response
from xs2a.transport import build_session, build_ssl_context, was_not_sent

__all__ = ["BankResponse", "Call", "Requester", "read"]

log = logging.getLogger("xs2a")

T = TypeVar("T")

#: A body that is not JSON (or none was read): ``BankResponse.json`` says so when asked.
_UNREAD: Any = object()


@dataclass(frozen=True)
class BankResponse:
    """One HTTP answer of the bank, as received (after retries)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    method: str
    url: str
    endpoint: str
    request_id: str
    attempts: int = 1
    request_headers: Mapping[str, str] = field(default_factory=dict)  # as sent, redacted
    #: The body as JSON, read once when the answer came (``_UNREAD``: not JSON); see :meth:`json`.
    data: Any = field(default=_UNREAD, repr=False, compare=False)
    #: The exception of an error status (300 and above), mapped once when the answer came.
    error: Xs2aError | None = field(default=None, repr=False, compare=False)

    def json(self) -> Any:
        """The body as JSON (None when empty); UnexpectedResponseError when it is not JSON."""
        if self.data is not _UNREAD:
            return self.data
        if not self.body:
            return None
        try:
            return load_json(self.body)
        except (ValueError, RecursionError):
            raise UnexpectedResponseError(
                "the bank's answer is not JSON",
                status=self.status,
                request_id=self.request_id,
                method=self.method,
                endpoint=self.endpoint,
            ) from None


@dataclass(frozen=True)
class Call:
    """One request as an operation asked for it; each attempt of it gets a Date and is signed anew."""

    method: str
    url: str
    endpoint: str  # the path template, for the audit trail: no ids
    headers: Mapping[str, str]  # everything but Date and the signature headers
    payload: bytes | None  # exactly the bytes hashed and sent
    request_id: str
    psu: PsuContext
    secrets: tuple[str, ...] = ()  # values that never reach the audit record (PSU identifiers, redact=)


@dataclass
class _Attempt:
    """What one attempt came to: the answer (status, headers, body) or the error, and whether to try again."""

    started_at: datetime
    sent_headers: Mapping[str, str]
    duration_ms: float = 0.0
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    received: int | None = None  # bytes read, when the body was not kept (too long)
    data: Any = _UNREAD
    error: Xs2aError | None = None  # raised at once (no usable answer)
    refusal: str = ""  # why the answer was refused (ResponseSignatureError), for the audit record
    mapped: Xs2aError | None = None  # the answer's error status, raised by ``read``
    delay: float | None = None  # wait this long, then try again

    @property
    def error_name(self) -> str | None:
        failure = self.error or self.mapped
        return type(failure).__name__ if failure is not None and self.delay is None else None


# --- preparing -----------------------------------------------------------------------------------------------

#: Characters outside the Basic Multilingual Plane (emoji and the like): the bank cannot process them.
_OUTSIDE_BMP = re.compile("[\U00010000-\U0010ffff]")


def encode_json(data: Any) -> bytes:
    """Compact UTF-8 JSON, exactly the bytes that are hashed and sent. Decimals as strings, never floats."""

    def default(value: Any) -> Any:
        if isinstance(value, Decimal):
            return models.decimal_text(value)
        if isinstance(value, date):
            return value.isoformat()
        raise InvalidRequestError(f"cannot send a {type(value).__name__} to the bank")

    def check(value: Any) -> None:
        if isinstance(value, float):
            raise InvalidRequestError("a float cannot be sent to the bank: use Decimal (or a string) for amounts")
        if isinstance(value, str) and (bad := _OUTSIDE_BMP.search(value)):
            raise InvalidRequestError(
                f"the bank cannot process the character U+{ord(bad.group()):04X} (spec section 1)"
            )
        if isinstance(value, Mapping):
            for k, v in value.items():
                check(k)
                check(v)
        elif isinstance(value, list | tuple):
            for v in value:
                check(v)

    try:
        check(data)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=default).encode("utf-8")
    except InvalidRequestError:
        raise
    except (TypeError, ValueError, RecursionError) as exc:  # a non-finite Decimal, a circular structure
        raise InvalidRequestError(f"the request body cannot be sent as JSON: {exc}") from None


def _fixed_headers(config: ClientConfig) -> dict[str, str]:
    """The headers of every request: Accept, TPP-Redirect-URI, x-accept-fix, TPP-Brand-Logging-Information."""
    headers = {"Accept": "application/json", "TPP-Redirect-URI": config.redirect_uri}
    if config.accept_fix:
        headers["x-accept-fix"] = ",".join(config.accept_fix)
    if config.brand_logging_information:
        headers["TPP-Brand-Logging-Information"] = config.brand_logging_information
    return headers


def _merged(base: dict[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``extra`` set over it, header names compared without case."""
    for name, value in extra.items():
        base = {k: v for k, v in base.items() if k.lower() != name.lower()}
        base[name] = value
    return base


# --- reading the answer ----------------------------------------------------------------------------------------


class _TooLarge(Exception):
    """The body is longer than the cap: how much was read, and what Content-Length said."""

    def __init__(self, received: int, declared: int | None) -> None:
        super().__init__(received, declared)
        self.received = received
        self.declared = declared


_CHUNK = 64 * 1024


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isascii() and value.isdigit() else None


def read_body(response: requests.Response, limit: int) -> bytes:
    """The body of a streamed answer, read in chunks and never more than ``limit`` bytes (plus one chunk):
    refused at once when Content-Length already says it is longer, else as soon as the count passes the cap."""
    declared = _content_length(response.headers.get("Content-Length"))
    if declared is not None and declared > limit:
        raise _TooLarge(0, declared)
    chunks: list[bytes] = []
    received = 0
    for chunk in response.iter_content(chunk_size=min(_CHUNK, limit + 1)):
        received += len(chunk)
        if received > limit:
            raise _TooLarge(received, declared)
        chunks.append(chunk)
    return b"".join(chunks)


def _json_of(status: int, body: bytes) -> Any:
    """The body as JSON when it may be JSON (an error, or an object), else ``_UNREAD``; never raises."""
    if not body:
        return None
    if status < 300 and body[:1] not in (b"{", b"["):
        return _UNREAD
    try:
        return load_json(body)
    except (ValueError, RecursionError):
        return _UNREAD


def transport_error(exc: BaseException, call: Call) -> Xs2aError:
    """The exception for a request that got no answer.

    - Nothing of the request left this machine (``xs2a.transport.was_not_sent``: the name did not resolve, the
      connection was refused or timed out, the TLS handshake failed, or requests refused the address): a
      TransportError, whatever the method. The bank has nothing.
    - Anything later (a reset or close while the request was written or its answer read, a TLS alert or a broken
      record, a read timeout): the request may have reached the bank. For a request that changes something
      (POST, PUT, PATCH, DELETE) that is an OutcomeUnknownError, to reconcile with its X-Request-ID. For a safe
      request (GET) it is a TransportError: a read changes nothing, so it is asked again (the client's retries)
      and its loss costs nothing but the answer.

    An exception that carries no mark (one raised by a stand-in adapter in tests, or anything the connection
    classes did not see) counts as "may have reached the bank": for a request that changes something, the
    conservative reading.
    """
    common = {"request_id": call.request_id, "method": call.method, "endpoint": call.endpoint}
    if was_not_sent(exc):
        if isinstance(exc, requests.exceptions.SSLError):
            return TransportError(
                f"TLS with the bank failed (TLS 1.2 or higher and a trusted certificate); the request was not "
                f"sent: {exc}",
                **common,
            )
        return TransportError(f"the bank could not be reached; the request was not sent: {exc}", **common)
    if isinstance(exc, requests.exceptions.Timeout):
        kind = "timed out"
    elif isinstance(exc, requests.exceptions.SSLError):
        kind = "broke off in TLS"
    else:
        kind = "lost its connection"
    if call.method not in SAFE_METHODS:
        return OutcomeUnknownError(
            f"the request {kind} after it may have reached the bank: the bank may or may not have processed it; "
            f"reconcile with X-Request-ID {call.request_id} before trying again ({exc})",
            **common,
        )
    return TransportError(f"no answer from the bank: the request {kind} after it was sent ({exc})", **common)


class ResponseVerifier:
    """Checks the bank's signature on its answers, when its seal is configured: an unsigned answer is refused
    like a badly signed one, and so is a well-signed answer that is not this request's, now (``verify_response``:
    its X-Request-ID, its Date within ``max_age`` seconds of the clock, Date, X-Request-ID and Digest signed)."""

    def __init__(self, certificate: x509.Certificate | None, *, max_age: float) -> None:
        self.certificate = certificate
        self.max_age = max_age

    def problem(
        self,
        headers: Mapping[str, str],
        body: bytes,
        method: str,
        target: str,
        *,
        request_id: str,
        now: datetime,
    ) -> str | None:
        """Why the answer is not acceptable; None when it is (or no seal is configured)."""
        if self.certificate is None:
            return None
        try:
            verify_response(
                headers.get("Signature"),
                headers=headers,
                body=body,
                certificate=self.certificate,
                request_id=request_id,
                now=now,
                max_age=self.max_age,
                method=method,
                target=target,
            )
        except SignatureVerificationError as exc:
            return str(exc)
        return None


class Auditor:
    """One AuditRecord per attempt to the hook (and one log line); a failing hook never fails the call."""

    def __init__(self, hook: AuditHook | None) -> None:
        self.hook = hook

    def record(self, call: Call, attempt: int, outcome: _Attempt) -> None:
        error = outcome.error_name
        log.info(
            "bank %s %s -> %s in %.0f ms (attempt %d, X-Request-ID %s%s)%s",
            call.method,
            call.endpoint,
            outcome.status if outcome.status is not None else "no response",
            outcome.duration_ms,
            attempt,
            call.request_id,
            f", {error}" if error else "",
            f": {outcome.refusal}" if outcome.refusal else "",
        )
        if self.hook is None:
            return
        data = outcome.data if outcome.data is not _UNREAD else None
        codes, texts = message_fields(parse_tpp_messages(data), call.secrets)
        record = AuditRecord(
            started_at=outcome.started_at.astimezone(UTC),
            method=call.method,
            path_template=call.endpoint,
            request_id=call.request_id,
            attempt=attempt,
            status=outcome.status,
            duration_ms=outcome.duration_ms,
            psu_present=call.psu.present,
            bytes_sent=len(call.payload or b""),
            bytes_received=len(outcome.body) if outcome.received is None else outcome.received,
            tpp_message_codes=codes,
            tpp_message_texts=texts,
            error=error,
            refusal_reason=outcome.refusal,
            will_retry=outcome.delay is not None,
            request_headers=dict(outcome.sent_headers),
            response_headers=redact_headers(dict(outcome.headers)) if outcome.status is not None else {},
        )
        try:
            self.hook(record)
        except Exception:
            # The bank call has happened; losing its answer because the audit sink failed would be worse.
            log.exception("the bank audit hook failed for X-Request-ID %s", call.request_id)


# --- the requester ---------------------------------------------------------------------------------------------


class Requester:
    """Prepares, signs, sends (with safe retries), verifies, audits and reads one request at a time, over one
    pooled session. Shared by every service of a client."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        audit_hook: AuditHook | None,
        clock: Callable[[], datetime],
        sleep: Callable[[float], None],
        rng: Callable[[], float],
        http_adapter: requests.adapters.BaseAdapter | None = None,
    ) -> None:
        self.config = config
        self.base = BaseUrl(config.base_url)
        self.signer = RequestSigner(
            config.signing_key, config.signing_certificate, digest_algorithm=config.digest_algorithm
        )
        context = build_ssl_context(
            ca_bundle=config.ca_bundle,
            client_cert=config.tls_client_cert,
            client_key=config.tls_client_key,
            client_key_passphrase=config.tls_client_key_passphrase,
        )
        self.session = build_session(context, pool_maxsize=config.pool_maxsize, user_agent=config.user_agent)
        self.session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))  # no state across PSUs
        if http_adapter is not None:  # a stand-in for the network (tests): mounted for the bank's address only
            self.session.mount(self.base.origin, http_adapter)
        self.verifier = ResponseVerifier(config.response_certificate, max_age=config.response_max_age)
        self.auditor = Auditor(audit_hook)
        self.fixed_headers = _fixed_headers(config)
        self.clock = clock
        self.sleep = sleep
        self.rng = rng

    def close(self) -> None:
        self.session.close()

    def prepare(
        self,
        method: str,
        path: str | None = None,
        *,
        href: str | None = None,
        query: Mapping[str, str] | None = None,
        json_body: Any = None,
        body: bytes | None = None,
        psu: PsuContext | None = None,
        request_id: str | None = None,
        tpp_session_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        endpoint: str | None = None,
        redact: Iterable[str] = (),
    ) -> Call:
        """The request: ``path`` an API path (``/v1/...``) below the base address, or ``href`` a link from an
        answer (LinkError when it points elsewhere). ``redact``: further personal values sent in the body (a
        national identity number, say) that the bank may echo in a tppMessage text; like the PSU identifiers,
        they never reach the audit record."""
        method = method.upper()
        if (path is None) == (href is None):
            raise InvalidRequestError("give either an API path or a link href")
        if href is not None and query:
            raise InvalidRequestError("a link carries its own query")
        if json_body is not None and body is not None:
            raise InvalidRequestError("give json_body or body, not both")
        url = self.base.url(path, dict(query or {})) if path is not None else self.base.resolve(href or "")
        payload = encode_json(json_body) if json_body is not None else body
        if payload is None and method in {"POST", "PUT", "PATCH"}:
            payload = b""  # an empty body is still hashed: Digest is sent on every request that has one
        request_id = request_id or str(uuid.uuid4())
        psu = psu or PsuContext()
        sent = {**self.fixed_headers, "X-Request-ID": request_id}
        if payload:
            sent["Content-Type"] = "application/json"
        sent.update(psu.headers())
        if tpp_session_id:
            sent["TPP-Session-ID"] = tpp_session_id
        secrets = (psu.psu_id, psu.corporate_id, psu.identity, psu.ip_address, *redact)
        return Call(
            method=method,
            url=url,
            endpoint=endpoint or template_for(self.base.api_path(url)),
            headers=_merged(sent, headers or {}),
            payload=payload,
            request_id=request_id,
            psu=psu,
            secrets=tuple(s for s in secrets if s),
        )

    def send(self, call: Call) -> BankResponse:
        """The bank's answer to ``call``, whatever its status (after safe retries). Raises TransportError when no
        answer came and the request changed nothing (never sent, or a GET), OutcomeUnknownError when a request
        that changes something may have reached the bank without its answer, ResponseSignatureError when the
        answer's signature is missing, does not verify or does not bind it to this request now (to a request that
        changes something: ResponseSignatureOutcomeUnknownError, an OutcomeUnknownError too),
        ResponseTooLargeError when it is longer than the cap."""
        attempt = 0
        while True:
            attempt += 1
            outcome = self._attempt(call, attempt)
            self.auditor.record(call, attempt, outcome)
            if outcome.delay is not None:
                # The retry is signed again with a new Date; Date counts whole seconds, and the bank refuses a
                # Signature it has already seen (a replay): the next attempt goes in a later second.
                next_second = outcome.started_at.replace(microsecond=0) + timedelta(seconds=1) - self.clock()
                self.sleep(max(outcome.delay, next_second.total_seconds()))
                continue
            if outcome.error is not None:
                raise outcome.error
            assert outcome.status is not None
            return BankResponse(
                status=outcome.status,
                headers=outcome.headers,
                body=outcome.body,
                method=call.method,
                url=call.url,
                endpoint=call.endpoint,
                request_id=call.request_id,
                attempts=attempt,
                request_headers=outcome.sent_headers,
                data=outcome.data,
                error=outcome.mapped,
            )

    def call(self, method: str, path: str | None = None, *, reader: Callable[[Any], T], **arguments: Any) -> T:
        """Prepare, send and read one request: the typed record of a success, or its exception."""
        return read(self.send(self.prepare(method, path, **arguments)), reader)

    # -- one attempt --

    def _signed(self, call: Call, moment: datetime) -> requests.PreparedRequest:
        # Prepared on its own, not by Session.prepare_request: the session holds nothing to merge (no cookies are
        # kept, no auth, no environment), and the merging cost more CPU than the rest of the preparation.
        prepared = requests.PreparedRequest()
        prepared.prepare(method=call.method, url=call.url, headers=self.session.headers, data=call.payload)
        headers = {**call.headers, "Date": imf_fixdate(moment)}
        prepared.headers.update(self.signer.sign(call.method, prepared.path_url, headers, call.payload))
        return prepared

    def _attempt(self, call: Call, attempt: int) -> _Attempt:
        started_at = self.clock()
        prepared = self._signed(call, started_at)
        outcome = _Attempt(started_at=started_at, sent_headers=redact_headers(dict(prepared.headers)))
        started = time.perf_counter()
        response = None
        try:
            response = self.session.send(prepared, timeout=self.config.timeout, allow_redirects=False, stream=True)
            outcome.body = read_body(response, self.config.max_response_bytes)
        except _TooLarge as exc:
            assert response is not None
            response.close()  # the rest is never read: the connection is dropped, not reused
            self._too_large(call, outcome, response, exc)
        except requests.exceptions.RequestException as exc:
            self._no_answer(call, attempt, outcome, exc)
        else:
            self._answer(call, attempt, outcome, response, prepared.path_url)
        outcome.duration_ms = (time.perf_counter() - started) * 1000
        return outcome

    def _too_large(self, call: Call, outcome: _Attempt, response: requests.Response, exc: _TooLarge) -> None:
        limit = self.config.max_response_bytes
        outcome.status, outcome.headers = response.status_code, response.headers
        outcome.error = ResponseTooLargeError(
            f"the bank's answer is longer than {limit} bytes; not read",
            limit=limit,
            received=exc.received,
            declared=exc.declared,
            status=response.status_code,
            request_id=call.request_id,
            method=call.method,
            endpoint=call.endpoint,
        )
        outcome.received = exc.received

    def _no_answer(self, call: Call, attempt: int, outcome: _Attempt, exc: requests.RequestException) -> None:
        policy = self.config.retry
        outcome.error = transport_error(exc, call)
        # A TLS handshake refused, or an address requests will not use, would be refused again the same way.
        refused_again = isinstance(exc, requests.exceptions.InvalidURL) or (
            isinstance(exc, requests.exceptions.SSLError) and was_not_sent(exc)
        )
        if call.method in policy.retry_methods and not refused_again and attempt < policy.max_attempts:
            outcome.delay = policy.backoff(attempt, self.rng)

    def _answer(
        self, call: Call, attempt: int, outcome: _Attempt, response: requests.Response, target: str
    ) -> None:
        outcome.status, outcome.headers = response.status_code, response.headers
        outcome.data = _json_of(outcome.status, outcome.body)
        outcome.delay = self._retry_delay(call, attempt, outcome)
        if outcome.delay is not None:
            response.close()
            return
        problem = self.verifier.problem(
            outcome.headers, outcome.body, call.method, target, request_id=call.request_id, now=self.clock()
        )
        common = {"status": outcome.status, "request_id": call.request_id, "method": call.method}
        if problem is not None:
            outcome.refusal = problem
            if call.method in SAFE_METHODS:
                outcome.error = ResponseSignatureError(
                    f"the bank's answer is not accepted: {problem}",
                    reason=problem,
                    endpoint=call.endpoint,
                    **common,
                )
            else:
                # Whatever the refused answer says, the request reached the bank and may have been processed.
                outcome.error = ResponseSignatureOutcomeUnknownError(
                    f"the bank's answer is not accepted: {problem}; the request may or may not have been "
                    f"processed: reconcile with X-Request-ID {call.request_id} before trying again",
                    reason=problem,
                    endpoint=call.endpoint,
                    **common,
                )
        elif outcome.status >= 300:
            outcome.mapped = error_from_response(
                body=outcome.data if outcome.data is not _UNREAD else outcome.body,
                headers=outcome.headers,
                endpoint=call.endpoint,
                now=self.clock(),
                **common,
            )

    def _retry_delay(self, call: Call, attempt: int, outcome: _Attempt) -> float | None:
        """Seconds to wait before the next attempt of a safe request answered 429/502/503/504; None: no retry."""
        policy = self.config.retry
        if (
            call.method not in policy.retry_methods
            or outcome.status not in policy.retry_statuses
            or attempt >= policy.max_attempts
        ):
            return None
        retry_after, _ = parse_retry_after(outcome.headers.get("Retry-After"), now=self.clock())
        if retry_after is None:
            return policy.backoff(attempt, self.rng)
        return retry_after if retry_after <= policy.max_retry_after else None


def raise_for_error(response: BankResponse) -> None:
    """Raise the exception of an error answer (status 300 and above)."""
    if response.status >= 300:
        raise response.error or error_from_response(
            status=response.status,
            body=response.body,
            headers=response.headers,
            request_id=response.request_id,
            method=response.method,
            endpoint=response.endpoint,
        )


def read(response: BankResponse, reader: Callable[[Any], T]) -> T:
    """The typed record of a success answer (``reader`` of its JSON); the mapped exception of an error."""
    raise_for_error(response)
    try:
        return reader(response.json())
    except models.ModelError as exc:
        raise UnexpectedResponseError(
            f"the bank's answer does not have the expected shape: {exc}",
            status=response.status,
            request_id=response.request_id,
            method=response.method,
            endpoint=response.endpoint,
        ) from None
