"""The bank client: every operation of bank-api-spec.md section 4 over one signed, pooled HTTP session.

Each call gets a Date from the clock, an X-Request-ID (a new UUID unless the caller gives one), TPP-Redirect-URI,
x-accept-fix, the PSU headers of its ``PsuContext``, and is signed (``xs2a.signing``) on every attempt. Only GET
is retried (connection errors, timeouts, 429/502/503/504), a bounded number of times with exponential backoff and
full jitter, honouring Retry-After; each retry is signed again with a new Date and the same X-Request-ID. Any
other method is sent once: when it may have reached the bank without an answer, ``OutcomeUnknownError`` carries
the X-Request-ID so that the caller can reconcile. Every attempt is reported to the audit hook.
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from http.cookiejar import DefaultCookiePolicy
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from xs2a import models
from xs2a.audit import AuditHook, AuditRecord, message_fields, redact_headers
from xs2a.errors import (
    ConfigurationError,
    InvalidRequestError,
    LinkError,
    OutcomeUnknownError,
    ResponseSignatureError,
    ResponseTooLargeError,
    TransportError,
    UnexpectedResponseError,
    Xs2aError,
    error_from_response,
    load_json,
    parse_retry_after,
    parse_tpp_messages,
)
from xs2a.links import BaseUrl, path_from_template, template_for
from xs2a.psu import PsuContext
from xs2a.signing import RequestSigner, SignatureVerificationError, imf_fixdate, verify_signature
from xs2a.transport import build_session, build_ssl_context

__all__ = [
    "CROSS_BORDER",
    "DEFAULT_ACCEPT_FIX",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DOMESTIC",
    "BankResponse",
    "ClientConfig",
    "RetryPolicy",
    "Xs2aClient",
]

log = logging.getLogger("xs2a")

CROSS_BORDER = "norwegian-cross-border-credit-transfers"
DOMESTIC = "norwegian-domestic-credit-transfers"
PRODUCTS = (CROSS_BORDER, DOMESTIC)
#: Spec section 9: all four announced fixes.
DEFAULT_ACCEPT_FIX: tuple[str, ...] = (
    "amount-as-string",
    "cardaccount-switch-originalamount-and-transactionamount",
    "longer-names",
    "cash-account-type-iso",
)
#: The longest answer the client reads: the bank's largest answers (a page of transactions) are far smaller.
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
BOOKING_STATUSES = frozenset({"booked", "pending", "both", "all", "information"})

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a safe request again."""

    max_attempts: int = 3  # in all, the first one included
    backoff_base: float = 0.5  # seconds; attempt n waits up to base * 2**(n-1) ...
    backoff_max: float = 8.0  # ... and never more than this
    max_retry_after: float = 30.0  # a longer Retry-After is not waited for: the error goes to the caller
    retry_methods: frozenset[str] = frozenset({"GET"})
    retry_statuses: frozenset[int] = frozenset({429, 502, 503, 504})

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError("RetryPolicy.max_attempts must be at least 1")
        if self.retry_methods - {"GET", "HEAD", "OPTIONS"}:
            raise ConfigurationError("only safe methods (GET, HEAD, OPTIONS) may be retried")

    def backoff(self, attempt: int, rng: Callable[[], float]) -> float:
        """Full jitter: uniform in [0, min(max, base * 2**(attempt-1))]."""
        return rng() * min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))


@dataclass(frozen=True)
class ClientConfig:
    base_url: str
    signing_key: rsa.RSAPrivateKey
    signing_certificate: x509.Certificate
    redirect_uri: str  # TPP-Redirect-URI, sent on every request
    ca_bundle: str | None = None
    tls_client_cert: str | None = None  # QWAC
    tls_client_key: str | None = None
    tls_client_key_passphrase: str | None = None
    response_certificate: x509.Certificate | None = None  # the bank's seal: signed responses are verified
    timeout: float | tuple[float, float] = 20.0  # seconds (connect, read)
    accept_fix: tuple[str, ...] = DEFAULT_ACCEPT_FIX
    digest_algorithm: str = "SHA-256"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    pool_maxsize: int = 10
    user_agent: str = "fjordpay-xs2a/0.1 (python-requests)"
    brand_logging_information: str | None = None  # TPP-Brand-Logging-Information
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # a longer answer is not read (ResponseTooLargeError)

    def __post_init__(self) -> None:
        timeouts = self.timeout if isinstance(self.timeout, tuple) else (self.timeout,)
        if not timeouts or any(t is None or t <= 0 for t in timeouts):
            raise ConfigurationError("ClientConfig.timeout: a positive number of seconds is required")
        redirect = urlsplit(self.redirect_uri)
        if redirect.scheme not in {"http", "https"} or not redirect.netloc:
            raise ConfigurationError("ClientConfig.redirect_uri: an absolute http(s) address is required")
        if isinstance(self.max_response_bytes, bool) or not isinstance(self.max_response_bytes, int):
            raise ConfigurationError("ClientConfig.max_response_bytes: a whole number of bytes is required")
        if self.max_response_bytes < 1:
            raise ConfigurationError("ClientConfig.max_response_bytes: must be at least 1")
        for fix in self.accept_fix:
            if not fix or "," in fix or not fix.isprintable():
                raise ConfigurationError(f"ClientConfig.accept_fix: {fix!r} is not a fix name")


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

    def json(self) -> Any:
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


def _not_delivered(exc: BaseException) -> bool:
    """True when the request certainly did not reach the bank (no connection was made)."""
    if isinstance(exc, requests.exceptions.ConnectTimeout | requests.exceptions.SSLError):
        return True
    seen: set[int] = set()
    stack: list[Any] = [exc]
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ConnectTimeoutError):
            return True
        if isinstance(item, urllib3.exceptions.MaxRetryError):
            stack.append(item.reason)
        if isinstance(item, BaseException):
            stack.extend(a for a in item.args if isinstance(a, BaseException))
            stack.append(item.__cause__)
            stack.append(item.__context__)
    return False


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


def _read_body(response: requests.Response, limit: int) -> bytes:
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


#: Characters outside the Basic Multilingual Plane (emoji and the like): the bank cannot process them.
_OUTSIDE_BMP = re.compile("[\U00010000-\U0010ffff]")


def _encode_json(data: Any) -> bytes:
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


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _redirect_preferred(value: bool | None) -> dict[str, str]:
    """TPP-Redirect-Preferred for an SCA-starting call: false asks for SCA in the bank's app; None: not sent
    (PsuContext.redirect_preferred may still send it)."""
    if value is None:
        return {}
    if not isinstance(value, bool):
        raise InvalidRequestError("redirect_preferred: True, False or None is expected")
    return {"TPP-Redirect-Preferred": _bool(value)}


class Xs2aClient:
    """The portal's only door to the bank. One instance holds one pooled session; share it, close it at exit."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        audit_hook: AuditHook | None = None,
        clock: Callable[[], datetime] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self.base = BaseUrl(config.base_url)
        self.signer = RequestSigner(
            config.signing_key,
            config.signing_certificate,
            digest_algorithm=config.digest_algorithm,
        )
        context = build_ssl_context(
            ca_bundle=config.ca_bundle,
            client_cert=config.tls_client_cert,
            client_key=config.tls_client_key,
            client_key_passphrase=config.tls_client_key_passphrase,
        )
        self.session = build_session(context, pool_maxsize=config.pool_maxsize, user_agent=config.user_agent)
        self.session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))  # no state across PSUs
        self.audit_hook = audit_hook
        self._clock = clock or (lambda: datetime.now(UTC))
        self._sleep = sleep
        self._rng = rng
        self._fixed_headers = {"Accept": "application/json", "TPP-Redirect-URI": config.redirect_uri}
        if config.accept_fix:
            self._fixed_headers["x-accept-fix"] = ",".join(config.accept_fix)
        if config.brand_logging_information:
            self._fixed_headers["TPP-Brand-Logging-Information"] = config.brand_logging_information

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Xs2aClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the one request path ----------------------------------------------------------------------------

    def request(
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
    ) -> BankResponse:
        """Send one request (with safe retries) and return the bank's answer, whatever its status.

        ``path`` is an API path (``/v1/...``) below the base address, or ``href`` a link from a response.
        ``redact``: further personal values sent in the body (a national identity number, say) that the bank may
        echo in a tppMessage text; like the PSU identifiers, they never reach the audit record.
        Raises TransportError / OutcomeUnknownError when no answer came, ResponseSignatureError when the answer's
        Signature does not verify. Error statuses are returned, not raised (see ``error_from_response``).
        """
        method = method.upper()
        if (path is None) == (href is None):
            raise InvalidRequestError("give either an API path or a link href")
        if href is not None and query:
            raise InvalidRequestError("a link carries its own query")
        url = self.base.url(path, dict(query or {})) if path is not None else self.base.resolve(href or "")
        endpoint = endpoint or template_for(self.base.api_path(url))
        if json_body is not None and body is not None:
            raise InvalidRequestError("give json_body or body, not both")
        payload = _encode_json(json_body) if json_body is not None else body
        if payload is None and method in {"POST", "PUT", "PATCH"}:
            payload = b""  # an empty body is still hashed: Digest is sent on every request that has one
        request_id = request_id or str(uuid.uuid4())
        psu = psu or PsuContext()

        base_headers: dict[str, str] = {**self._fixed_headers, "X-Request-ID": request_id}
        if payload:
            base_headers["Content-Type"] = "application/json"
        base_headers.update(psu.headers())
        if tpp_session_id:
            base_headers["TPP-Session-ID"] = tpp_session_id
        for name, value in (headers or {}).items():
            base_headers = {k: v for k, v in base_headers.items() if k.lower() != name.lower()}
            base_headers[name] = value
        secrets = [v for v in (psu.psu_id, psu.corporate_id, psu.identity, psu.ip_address, *redact) if v]

        policy = self.config.retry
        retryable = method in policy.retry_methods
        attempt = 0
        while True:
            attempt += 1
            started_at = self._clock()
            attempt_headers = {**base_headers, "Date": imf_fixdate(started_at)}
            prepared = self._prepare(method, url, attempt_headers, payload)
            sent_headers = redact_headers(dict(prepared.headers))
            started = time.perf_counter()
            response = None
            try:
                response = self.session.send(
                    prepared, timeout=self.config.timeout, allow_redirects=False, stream=True
                )
                received = _read_body(response, self.config.max_response_bytes)
            except _TooLarge as exc:
                assert response is not None
                response.close()  # the rest is never read: the connection is dropped, not reused
                error = ResponseTooLargeError(
                    f"the bank's answer is longer than {self.config.max_response_bytes} bytes; not read",
                    limit=self.config.max_response_bytes,
                    received=exc.received,
                    declared=exc.declared,
                    status=response.status_code,
                    request_id=request_id,
                    method=method,
                    endpoint=endpoint,
                )
                self._audit(
                    started_at=started_at,
                    method=method,
                    endpoint=endpoint,
                    request_id=request_id,
                    attempt=attempt,
                    status=response.status_code,
                    duration_ms=(time.perf_counter() - started) * 1000,
                    psu=psu,
                    bytes_sent=len(payload or b""),
                    bytes_received=exc.received,
                    error=type(error).__name__,
                    request_headers=sent_headers,
                    response_headers=redact_headers(dict(response.headers)),
                )
                raise error from None
            except requests.exceptions.RequestException as exc:
                duration = (time.perf_counter() - started) * 1000
                error = self._transport_error(exc, method=method, endpoint=endpoint, request_id=request_id)
                will_retry = (
                    retryable
                    and attempt < policy.max_attempts
                    and not isinstance(exc, requests.exceptions.SSLError | requests.exceptions.InvalidURL)
                )
                self._audit(
                    started_at=started_at,
                    method=method,
                    endpoint=endpoint,
                    request_id=request_id,
                    attempt=attempt,
                    status=None,
                    duration_ms=duration,
                    psu=psu,
                    bytes_sent=len(payload or b""),
                    bytes_received=0,
                    error=type(error).__name__,
                    will_retry=will_retry,
                    request_headers=sent_headers,
                )
                if will_retry:
                    self._sleep(policy.backoff(attempt, self._rng))
                    continue
                raise error from exc
            duration = (time.perf_counter() - started) * 1000
            status = response.status_code
            response_headers = dict(response.headers)
            delay = None
            if retryable and status in policy.retry_statuses and attempt < policy.max_attempts:
                retry_after, _ = parse_retry_after(response.headers.get("Retry-After"), now=self._clock())
                if retry_after is None:
                    delay = policy.backoff(attempt, self._rng)
                elif retry_after <= policy.max_retry_after:
                    delay = retry_after
            error_name = None
            signature_error = None
            if delay is None:
                signature_error = self._verify_response(response, received, method, prepared.path_url)
                if signature_error is not None:
                    error_name = ResponseSignatureError.__name__
                elif status >= 300:
                    error_name = type(
                        error_from_response(status=status, body=received, headers=response_headers, method=method)
                    ).__name__
            data = None
            if status >= 300 or received[:1] == b"{":
                try:
                    data = load_json(received) if received else None
                except (ValueError, RecursionError):
                    data = None
            codes, texts = message_fields(parse_tpp_messages(data), secrets)
            self._audit(
                started_at=started_at,
                method=method,
                endpoint=endpoint,
                request_id=request_id,
                attempt=attempt,
                status=status,
                duration_ms=duration,
                psu=psu,
                bytes_sent=len(payload or b""),
                bytes_received=len(received),
                codes=codes,
                texts=texts,
                error=error_name,
                will_retry=delay is not None,
                request_headers=sent_headers,
                response_headers=redact_headers(response_headers),
            )
            if delay is not None:
                response.close()
                self._sleep(delay)
                continue
            if signature_error is not None:
                raise ResponseSignatureError(
                    f"the bank's response signature is not valid: {signature_error}",
                    status=status,
                    request_id=request_id,
                    method=method,
                    endpoint=endpoint,
                )
            return BankResponse(
                status=status,
                headers=response.headers,
                body=received,
                method=method,
                url=url,
                endpoint=endpoint,
                request_id=request_id,
                attempts=attempt,
                request_headers=sent_headers,
            )

    def _prepare(
        self, method: str, url: str, headers: dict[str, str], payload: bytes | None
    ) -> requests.PreparedRequest:
        # Prepared on its own, not by Session.prepare_request: the session holds nothing to merge (no cookies are
        # kept, no auth, no environment), and the merging cost more CPU than the rest of the preparation.
        prepared = requests.PreparedRequest()
        prepared.prepare(method=method, url=url, headers=self.session.headers, data=payload)
        signed = self.signer.sign(method, prepared.path_url, headers, payload)
        prepared.headers.update(signed)
        return prepared

    def _verify_response(
        self, response: requests.Response, body: bytes, method: str, target: str
    ) -> SignatureVerificationError | None:
        certificate = self.config.response_certificate
        if certificate is None:
            return None
        value = response.headers.get("Signature")
        if not value:  # with the bank's seal configured, an unsigned answer is no better than a badly signed one
            return SignatureVerificationError("the answer carries no Signature header")
        try:
            verify_signature(
                value, headers=response.headers, body=body, certificate=certificate, method=method, target=target
            )
        except SignatureVerificationError as exc:
            return exc
        return None

    def _transport_error(self, exc: BaseException, *, method: str, endpoint: str, request_id: str) -> Xs2aError:
        common = {"request_id": request_id, "method": method, "endpoint": endpoint}
        if isinstance(exc, requests.exceptions.SSLError):
            return TransportError(
                f"TLS with the bank failed (TLS 1.2 or higher and a trusted certificate): {exc}", **common
            )
        if _not_delivered(exc):
            return TransportError(f"the bank could not be reached; the request was not sent: {exc}", **common)
        if method not in self.config.retry.retry_methods:
            kind = "timed out" if isinstance(exc, requests.exceptions.Timeout) else "lost its connection"
            return OutcomeUnknownError(
                f"the request {kind} after it was sent: the bank may or may not have processed it; "
                f"reconcile with X-Request-ID {request_id} before trying again",
                **common,
            )
        return TransportError(f"no answer from the bank: {exc}", **common)

    def _audit(
        self,
        *,
        started_at: datetime,
        method: str,
        endpoint: str,
        request_id: str,
        attempt: int,
        status: int | None,
        duration_ms: float,
        psu: PsuContext,
        bytes_sent: int,
        bytes_received: int,
        codes: tuple[str, ...] = (),
        texts: tuple[str, ...] = (),
        error: str | None = None,
        will_retry: bool = False,
        request_headers: Mapping[str, str] | None = None,
        response_headers: Mapping[str, str] | None = None,
    ) -> None:
        log.info(
            "bank %s %s -> %s in %.0f ms (attempt %d, X-Request-ID %s%s)",
            method,
            endpoint,
            status if status is not None else "no response",
            duration_ms,
            attempt,
            request_id,
            f", {error}" if error else "",
        )
        if self.audit_hook is None:
            return
        record = AuditRecord(
            started_at=started_at.astimezone(UTC),
            method=method,
            path_template=endpoint,
            request_id=request_id,
            attempt=attempt,
            status=status,
            duration_ms=duration_ms,
            psu_present=psu.present,
            bytes_sent=bytes_sent,
            bytes_received=bytes_received,
            tpp_message_codes=codes,
            tpp_message_texts=texts,
            error=error,
            will_retry=will_retry,
            request_headers=dict(request_headers or {}),
            response_headers=dict(response_headers or {}),
        )
        try:
            self.audit_hook(record)
        except Exception:
            # The bank call has happened; losing its answer because the audit sink failed would be worse.
            log.exception("the bank audit hook failed for X-Request-ID %s", request_id)

    # --- reading answers ---------------------------------------------------------------------------------

    def _raise_for_error(self, response: BankResponse) -> None:
        if response.status >= 300:
            raise error_from_response(
                status=response.status,
                body=response.body,
                headers=response.headers,
                request_id=response.request_id,
                method=response.method,
                endpoint=response.endpoint,
                now=self._clock(),
            )

    def _read(self, response: BankResponse, reader: Callable[[Any], T]) -> T:
        self._raise_for_error(response)
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

    def _get(self, reader: Callable[[Any], T], path: str, **kwargs: Any) -> T:
        return self._read(self.request("GET", path, **kwargs), reader)

    # --- payments (spec 4.1, 4.3) -----------------------------------------------------------------------

    def payment_initiate(
        self,
        payment: models.PaymentInitiation | Mapping[str, Any],
        *,
        psu: PsuContext,
        product: str = CROSS_BORDER,
        tpp_session_id: str | None = None,
        allow_logical_duplicate: bool | None = None,
        redirect_preferred: bool | None = None,
        request_id: str | None = None,
    ) -> models.PaymentInitiationResponse:
        """POST /v1/payments/{product}. Sent once, never retried; see OutcomeUnknownError.

        The PSU must be present (PSU-IP-Address) and identified by PSU-ID or X-PSU-IDENTITY (single SCA).
        A TPP-Session-ID is made when none is given; the response carries it and the X-Request-ID.
        """
        if product not in PRODUCTS:
            raise InvalidRequestError(
                f"unknown payment product {product!r}; expected one of {', '.join(PRODUCTS)}"
            )
        if not psu.present:
            raise InvalidRequestError("payment initiation needs the PSU present: PsuContext.ip_address (spec 4.1)")
        if not (psu.psu_id or psu.identity):
            raise InvalidRequestError("payment initiation needs PSU-ID or X-PSU-IDENTITY (spec 4.1)")
        body = payment.to_json() if isinstance(payment, models.PaymentInitiation) else dict(payment)
        tpp_session_id = tpp_session_id or psu.tpp_session_id or str(uuid.uuid4())
        request_id = request_id or str(uuid.uuid4())
        query = {}
        if allow_logical_duplicate is not None:
            query["allowLogicalDuplicate"] = _bool(allow_logical_duplicate)
        headers = _redirect_preferred(redirect_preferred)
        response = self.request(
            "POST",
            path_from_template("/v1/payments/{product}", product=product),
            query=query,
            json_body=body,
            psu=psu,
            request_id=request_id,
            tpp_session_id=tpp_session_id,
            headers=headers,
        )
        result = self._read(response, models.PaymentInitiationResponse.from_json)
        return _with(result, request_id=request_id, tpp_session_id=tpp_session_id)

    def _payment_href(self, href: str | None, product: str, payment_id: str | None, suffix: str) -> dict[str, str]:
        if href:
            return {"href": href}
        if not payment_id:
            raise InvalidRequestError("give the link href or the payment id")
        return {
            "path": path_from_template(
                "/v1/payments/{product}/{payment_id}", product=product, payment_id=payment_id
            )
            + suffix
        }

    def authorisation_start(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
        tpp_session_id: str | None = None,
        redirect_preferred: bool | None = None,
    ) -> models.AuthorisationResponse:
        """POST (empty body) to the payment's startAuthorisation link; the answer holds the scaRedirect."""
        target = self._payment_href(href, product, payment_id, "/authorisations")
        headers = _redirect_preferred(redirect_preferred)
        response = self.request("POST", psu=psu, tpp_session_id=tpp_session_id, headers=headers, **target)
        return self._read(response, models.AuthorisationResponse.from_json)

    def payment_status(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
    ) -> models.PaymentStatus:
        """GET the payment's status link (or /v1/payments/{product}/{paymentId}/status)."""
        target = self._payment_href(href, product, payment_id, "/status")
        return self._read(self.request("GET", psu=psu, **target), models.PaymentStatus.from_json)

    def payment_get(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
    ) -> models.PaymentDetails:
        target = self._payment_href(href, product, payment_id, "")
        return self._read(self.request("GET", psu=psu, **target), models.PaymentDetails.from_json)

    def payment_delete(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
    ) -> models.PaymentCancellationResponse:
        """DELETE the payment (available for all products in the sandbox). Sent once."""
        target = self._payment_href(href, product, payment_id, "")
        return self._read(self.request("DELETE", psu=psu, **target), models.PaymentCancellationResponse.from_json)

    # --- PSU identification and consent -------------------------------------------------------------------

    def users(
        self,
        *,
        psu: PsuContext | None = None,
        tpp_session_id: str | None = None,
        redirect_preferred: bool | None = None,
    ) -> models.RedirectResponse:
        """GET /v1/users: starts SCA for a PISP without a PSU-ID; answers with a scaRedirect link.

        Starts SCA, so a TPP-Session-ID is always sent (made when neither argument nor ``psu`` gives one) and
        returned on the response.
        """
        session = tpp_session_id or (psu.tpp_session_id if psu else None) or str(uuid.uuid4())
        result = self._get(
            models.RedirectResponse.from_json,
            "/v1/users",
            psu=psu,
            tpp_session_id=session,
            headers=_redirect_preferred(redirect_preferred),
        )
        return _with(result, tpp_session_id=session)

    def agreements(self, *, psu: PsuContext) -> list[models.Agreement]:
        """GET /v1/agreements: the corporate agreements of a known PSU."""
        if not psu.psu_id:
            raise InvalidRequestError("listing agreements needs the PSU-ID")
        return self._get(
            lambda d: models.read_list(d, "agreements", models.Agreement.from_json, "agreements"),
            "/v1/agreements",
            psu=psu,
        )

    def consent_start(
        self, *, psu: PsuContext, tpp_session_id: str | None = None, redirect_preferred: bool | None = None
    ) -> models.RedirectResponse:
        """POST /v1/bank-offered-consents (PSU-Context in ``psu``): the answer holds the scaRedirect link.

        Starts SCA: a TPP-Session-ID is always sent (made when none is given) and returned on the response.
        """
        session = tpp_session_id or psu.tpp_session_id or str(uuid.uuid4())
        response = self.request(
            "POST",
            "/v1/bank-offered-consents",
            json_body={},
            psu=psu,
            tpp_session_id=session,
            headers=_redirect_preferred(redirect_preferred),
        )
        return _with(self._read(response, models.RedirectResponse.from_json), tpp_session_id=session)

    # --- account information -----------------------------------------------------------------------------

    def accounts(self, *, psu: PsuContext, with_balance: bool = False) -> list[models.Account]:
        query = {"withBalance": _bool(with_balance)}
        return self._get(
            lambda d: models.read_list(d, "accounts", models.Account.from_json, "accounts"),
            "/v1/accounts",
            query=query,
            psu=psu,
        )

    def account(self, account_id: str, *, psu: PsuContext, with_balance: bool = False) -> models.Account:
        path = path_from_template("/v1/accounts/{account_id}", account_id=account_id)
        return self._get(
            lambda d: models.Account.from_json(d.get("account") if isinstance(d, dict) else d),
            path,
            query={"withBalance": _bool(with_balance)},
            psu=psu,
        )

    def balances(self, account_id: str, *, psu: PsuContext) -> models.AccountBalances:
        path = path_from_template("/v1/accounts/{account_id}/balances", account_id=account_id)
        return self._get(models.AccountBalances.from_json, path, psu=psu)

    def _transactions_query(
        self,
        booking_status: str,
        date_from: date | None,
        date_to: date | None,
        limit: int | None,
        offset: int | None,
    ) -> dict[str, str]:
        if booking_status not in BOOKING_STATUSES:
            raise InvalidRequestError(
                f"bookingStatus {booking_status!r}: expected one of {', '.join(sorted(BOOKING_STATUSES))}"
            )
        query = {"bookingStatus": booking_status}
        if date_from is not None:
            query["dateFrom"] = date_from.isoformat()
        if date_to is not None:
            query["dateTo"] = date_to.isoformat()
        if date_from and date_to and date_from > date_to:
            raise InvalidRequestError("dateFrom is after dateTo")
        if limit is not None:
            if limit < 1:
                raise InvalidRequestError("limit must be positive")
            query["limit"] = str(limit)
        if offset is not None:
            if offset < 0:
                raise InvalidRequestError("offset must not be negative")
            query["offset"] = str(offset)
        return query

    def transactions_page(
        self,
        account_id: str | None = None,
        *,
        psu: PsuContext,
        href: str | None = None,
        booking_status: str = "both",
        date_from: date | None = None,
        date_to: date | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.TransactionList:
        """One page of an account's transactions (or the page a ``next`` link names)."""
        if href:
            return self._read(self.request("GET", href=href, psu=psu), models.TransactionList.from_json)
        if not account_id:
            raise InvalidRequestError("give the account id or a page link")
        path = path_from_template("/v1/accounts/{account_id}/transactions", account_id=account_id)
        query = self._transactions_query(booking_status, date_from, date_to, limit, offset)
        return self._get(models.TransactionList.from_json, path, query=query, psu=psu)

    def transactions(
        self,
        account_id: str,
        *,
        psu: PsuContext,
        booking_status: str = "both",
        date_from: date | None = None,
        date_to: date | None = None,
        limit: int | None = None,
        offset: int | None = None,
        max_pages: int = 200,
    ) -> models.TransactionList:
        """All pages of an account's transactions, following ``next`` links.

        Booked items are kept once per transactionId; pending items, which the bank repeats on every page
        (spec 4.3, known issue), are kept once per identical record.
        """
        path = path_from_template("/v1/accounts/{account_id}/transactions", account_id=account_id)
        query = self._transactions_query(booking_status, date_from, date_to, limit, offset)
        pages = self._pages(path, query, psu, "transactions", max_pages)
        return self._merge(pages, "transactions", "transactionId", models.TransactionList)

    def transaction_details(self, account_id: str, transaction_id: str, *, psu: PsuContext) -> models.Transaction:
        path = path_from_template(
            "/v1/accounts/{account_id}/transactions/{transaction_id}",
            account_id=account_id,
            transaction_id=transaction_id,
        )
        return self._get(
            lambda d: models.Transaction.from_json(
                d["transactionsDetails"] if isinstance(d, dict) and "transactionsDetails" in d else d,
                "transactionsDetails",
            ),
            path,
            psu=psu,
        )

    def card_accounts(self, *, psu: PsuContext) -> list[models.CardAccount]:
        return self._get(
            lambda d: models.read_list(d, "cardAccounts", models.CardAccount.from_json, "cardAccounts"),
            "/v1/card-accounts",
            psu=psu,
        )

    def card_account_balances(self, account_id: str, *, psu: PsuContext) -> models.AccountBalances:
        path = path_from_template("/v1/card-accounts/{account_id}/balances", account_id=account_id)
        return self._get(models.AccountBalances.from_json, path, psu=psu)

    def card_account_transactions(
        self,
        account_id: str,
        *,
        psu: PsuContext,
        booking_status: str = "both",
        date_from: date | None = None,
        date_to: date | None = None,
        max_pages: int = 200,
    ) -> models.CardTransactionList:
        path = path_from_template("/v1/card-accounts/{account_id}/transactions", account_id=account_id)
        query = self._transactions_query(booking_status, date_from, date_to, None, None)
        pages = self._pages(path, query, psu, "cardTransactions", max_pages)
        return self._merge(pages, "cardTransactions", "cardTransactionId", models.CardTransactionList)

    def _pages(
        self, path: str, query: dict[str, str], psu: PsuContext, key: str, max_pages: int
    ) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        seen: set[str] = set()
        response = self.request("GET", path, query=query, psu=psu)
        while True:
            self._raise_for_error(response)
            data = response.json()
            if not isinstance(data, dict):
                raise UnexpectedResponseError(
                    f"{key}: expected a JSON object", status=response.status, request_id=response.request_id
                )
            pages.append(data)
            href = _next_href(data, key)
            if href is None or href == "":
                return pages
            absolute = self.base.resolve(href)
            if absolute in seen or absolute == response.url:
                raise LinkError(f"{key}: the next link repeats an earlier page ({href})")
            if len(pages) >= max_pages:
                raise UnexpectedResponseError(f"{key}: more than {max_pages} pages; refusing to read on")
            seen.add(absolute)
            response = self.request("GET", href=href, psu=psu)

    def _merge(self, pages: list[dict[str, Any]], key: str, id_field: str, cls: Any) -> Any:
        booked: list[Any] = []
        pending: list[Any] = []
        booked_ids: set[str] = set()
        pending_seen: set[str] = set()
        for page in pages:
            inner = page.get(key) if isinstance(page.get(key), dict) else {}
            for item in inner.get("booked") or []:
                item_id = item.get(id_field) if isinstance(item, dict) else None
                if item_id is not None:
                    if item_id in booked_ids:
                        continue
                    booked_ids.add(item_id)
                booked.append(item)
            for item in inner.get("pending") or []:
                fingerprint = json.dumps(item, sort_keys=True, default=str)
                if fingerprint in pending_seen:
                    continue
                pending_seen.add(fingerprint)
                pending.append(item)
        last = pages[-1]
        merged = {k: v for k, v in last.items() if k != key}
        last_inner = last.get(key) if isinstance(last.get(key), dict) else {}
        merged[key] = {**last_inner, "booked": booked, "pending": pending}
        try:
            result = cls.from_json(merged)
        except models.ModelError as exc:
            raise UnexpectedResponseError(f"the bank's answer does not have the expected shape: {exc}") from None
        return _with(result, pages=len(pages))

    # --- sandbox (spec 4.2, 4.3; facts.md section 1) ---------------------------------------------------------

    def sandbox_customers(
        self, *, with_accounts: bool = False, with_agreements: bool = False
    ) -> list[models.SandboxCustomer]:
        query = {"withAccounts": _bool(with_accounts), "withAgreements": _bool(with_agreements)}
        return self._get(
            lambda d: models.read_list(d, "customers", models.SandboxCustomer.from_json, "customers"),
            "/v1/sandbox/customers",
            query=query,
        )

    def sandbox_customer(self, customer_id: str) -> models.SandboxCustomer:
        path = path_from_template("/v1/sandbox/customers/{customer_id}", customer_id=customer_id)
        return self._get(models.SandboxCustomer.from_json, path)

    def sandbox_customer_create(self, customer: Mapping[str, Any]) -> models.SandboxCustomer:
        # The customerNumber is a national identity (or organisation) number: kept out of the audit record.
        number = str(customer.get("customerNumber") or "")
        response = self.request("POST", "/v1/sandbox/customers", json_body=dict(customer), redact=[number])
        return self._read(response, models.SandboxCustomer.from_json)

    def sandbox_initialize(self) -> list[models.SandboxCustomer]:
        """POST /v1/sandbox/initialize: resets the sandbox to its known state (removes created customers)."""
        response = self.request("POST", "/v1/sandbox/initialize")
        return self._read(
            response,
            lambda d: (
                []
                if d is None
                else models.read_list(d, "customers", models.SandboxCustomer.from_json, "customers")
            ),
        )

    def sandbox_account_create(self, account: Mapping[str, Any]) -> models.Account:
        response = self.request("POST", "/v1/sandbox/accounts", json_body=dict(account))
        return self._read(
            response, lambda d: models.Account.from_json(d.get("account", d) if isinstance(d, dict) else d)
        )

    def sandbox_agreement_create(self, agreement: Mapping[str, Any]) -> models.Agreement:
        response = self.request("POST", "/v1/sandbox/agreements", json_body=dict(agreement))
        return self._read(response, models.Agreement.from_json)

    def sandbox_agreement_engagements(self, agreement_id: str, engagements: Mapping[str, Any]) -> models.Agreement:
        path = path_from_template("/v1/sandbox/agreements/{agreement_id}/engagements", agreement_id=agreement_id)
        return self._read(self.request("POST", path, json_body=dict(engagements)), models.Agreement.from_json)

    def sandbox_mock_transaction_create(
        self, account_id: str, transaction: Mapping[str, Any]
    ) -> models.Transaction | models.CardTransaction:
        """POST /v1/sandbox/accounts/{id}/transactions (rejected when another account is the debtor)."""
        path = path_from_template("/v1/sandbox/accounts/{account_id}/transactions", account_id=account_id)
        response = self.request("POST", path, json_body=dict(transaction))
        return self._read(
            response,
            lambda d: (
                models.CardTransaction.from_json(d)
                if isinstance(d, dict) and "cardTransactionId" in d
                else models.Transaction.from_json(d)
            ),
        )


def _next_href(data: Mapping[str, Any], key: str) -> Any:
    """The href of a page's ``next`` link (in ``_links`` of the answer or of its ``key`` object; the inner one
    wins), None when there is none. Not checked here: ``BaseUrl.resolve`` refuses what is not a link."""
    found = None
    for holder in (data, data.get(key)):
        links = holder.get("_links") if isinstance(holder, Mapping) else None
        if isinstance(links, Mapping) and links.get("next") is not None:
            found = links["next"]
    return found.get("href") if isinstance(found, Mapping) else found


def _with(record: T, **changes: Any) -> T:
    return replace(record, **changes)  # type: ignore[type-var]
