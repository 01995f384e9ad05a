"""Access control of every /v1 request (spec sections 4 and 5): signature, certificate, role, headers, PSU.

A view is declared with ``@endpoint(...)`` and receives an ``ApiRequest`` holding the verified TPP, the PSU
(when PSU-ID names one), the agreement in force and the parsed JSON body. Every refusal is an ``ApiError``
turned into a tppMessages body by the decorator.
"""

from __future__ import annotations

import datetime as dt
import functools
import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from bank_simulator import clock, selectors
from bank_simulator.errors import ApiError, error_response, format_error, header_required
from bank_simulator.models import Agreement, Consent, CustomerType, PsuIdentity
from bank_simulator.representations import as_configured
from bank_simulator.security import replay, response_signing
from bank_simulator.security.certificates import CertificateError, TppCertificate, load_tpp_certificate
from bank_simulator.security.httpsig import (
    REQUEST_TARGET,
    SignatureError,
    parse_key_id,
    parse_signature_header,
    signing_string,
    verify_digest,
    verify_rsa_sha256,
)

PSP_AI = "PSP_AI"
PSP_PI = "PSP_PI"
ROLE_SERVICES = {PSP_AI: "account information and consents", PSP_PI: "payments and /v1/users"}

KNOWN_FIXES = frozenset(
    {
        "amount-as-string",
        "cardaccount-switch-originalamount-and-transactionamount",
        "longer-names",
        "cash-account-type-iso",
    }
)

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Path characters a client leaves unescaped (RFC 3986 pchar); resource ids hold '!' and '='.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


@dataclass
class ApiRequest:
    http: HttpRequest
    tpp: TppCertificate
    now: dt.datetime  # business time
    request_id: str
    body: Any = None
    psu: PsuIdentity | None = None
    psu_id_given: bool = False
    agreement: Agreement | None = None
    consent: Consent | None = None  # the latest consent of the PSU for ``agreement`` (any status)
    psu_present: bool = False
    fixes: frozenset[str] = field(default_factory=frozenset)
    # The PSU's SCA in the request's TPP-Session-ID, read with the PSU when the PSU is present (psu_context);
    # session_read says whether it was (views.common.require_session_sca reads it itself otherwise).
    session_sca_at: dt.datetime | None = None
    session_read: bool = False

    @property
    def tpp_org_id(self) -> str:
        return self.tpp.organization_identifier

    def header(self, name: str) -> str | None:
        return _header(self.http, name)


def _header(request: HttpRequest, name: str) -> str | None:
    value = request.headers.get(name)
    if value is None or value.isascii():  # ASCII reads the same either way (the certificate: 1.5 kB of it)
        return value
    try:  # WSGI hands header bytes over as ISO-8859-1; a client may have sent UTF-8
        return value.encode("iso-8859-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def request_target(request: HttpRequest) -> str:
    """Path and query as the client sent them (gunicorn's RAW_URI when available)."""
    raw = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")
    if raw and raw.startswith("/"):
        return raw
    target = quote(request.path, safe=_PATH_SAFE)
    query = request.META.get("QUERY_STRING", "")
    return f"{target}?{query}" if query else target


def _bad(text: str, path: str | None = None) -> ApiError:
    return ApiError(400, "BAD_REQUEST", text, path=path)


# Headers that must be in the signature whenever the request carries them, and why (shown in the error).
_SIGNED_WHEN_SENT = (
    ("PSU-ID", "psu-id", "it names the PSU whose data or money the request reaches"),
    ("PSU-Corporate-ID", "psu-corporate-id", "it names the corporate agreement the request acts for"),
)


@dataclass(frozen=True)
class VerifiedSignature:
    tpp: TppCertificate
    signature: bytes  # the RSA signature bytes (what the replay store keeps a hash of)
    date: dt.datetime  # the signed Date header


# Whole on purpose: the checks of spec 5.2-5.5 in the order a bank applies them, each failing with its own 400.
def verify_signature(request: HttpRequest, *, real_now: dt.datetime) -> VerifiedSignature:
    """Spec 5.2-5.5 and the bank's own rules: every failure a 400 naming the rule.

    The signature must cover ``(request-target)`` (so it cannot be re-aimed at another path), ``date``,
    ``x-request-id``, ``digest`` with a body, and ``psu-id`` and ``psu-corporate-id`` whenever they are sent
    (so they cannot be added to a captured request). Replays are refused by the caller (``security.replay``).
    """
    signature_value = _header(request, "Signature")
    if not signature_value:
        raise header_required("Signature", "on every request (spec 5.2)")
    certificate_value = _header(request, "TPP-Signature-Certificate")
    if not certificate_value:
        raise header_required("TPP-Signature-Certificate", "to verify the signature")
    date_value = _header(request, "Date")
    if not date_value:
        raise header_required("Date", "and must be signed")
    if not _header(request, "X-Request-ID"):
        raise header_required("X-Request-ID")
    try:
        params = parse_signature_header(signature_value)
    except SignatureError as exc:
        raise _bad(str(exc), "Signature") from None
    try:
        cert = load_tpp_certificate(certificate_value, tuple(settings.BANK_SIM_TRUSTED_CAS), at=real_now)
    except CertificateError as exc:
        raise _bad(f"TPP-Signature-Certificate: {exc}", "TPP-Signature-Certificate") from None
    try:
        serial, issuer = parse_key_id(params.key_id)
    except SignatureError as exc:
        raise _bad(str(exc), "Signature") from None
    if serial != cert.serial_hex:
        raise _bad(
            f"Signature keyId: SN={serial} is not the serial number of TPP-Signature-Certificate "
            f"(expected upper-case hexadecimal {cert.serial_hex})",
            "Signature",
        )
    if issuer != cert.issuer_rfc2253:
        raise _bad(
            "Signature keyId: CA= is not the issuer of TPP-Signature-Certificate in RFC 2253 form "
            f"(expected {cert.issuer_rfc2253}; keyId is a quoted string: write each \\ of the name as \\\\ "
            'and each " as \\")',
            "Signature",
        )
    body = request.body
    digest_value = _header(request, "Digest")
    if REQUEST_TARGET not in params.headers:
        raise _bad(
            f"Signature headers: {REQUEST_TARGET} must be signed (the bank requires it in every signature, so "
            "that a signed request cannot be sent to another path)",
            "Signature",
        )
    required_signed = ["date", "x-request-id"]
    if body:
        if not digest_value:
            raise header_required("Digest", "on a request with a body")
        required_signed.append("digest")
    for name in required_signed:
        if name not in params.headers:
            raise _bad(f"Signature headers: {name} must be signed", "Signature")
    for header, name, why in _SIGNED_WHEN_SENT:
        if _header(request, header) is not None and name not in params.headers:
            raise _bad(
                f"Signature headers: {name} must be signed when the {header} header is sent ({why})", "Signature"
            )
    try:
        text = signing_string(
            params.headers,
            lambda name: _header(request, name),
            method=request.method or "GET",
            target=request_target(request),
        )
        verify_rsa_sha256(cert.public_key, params.signature, text)
        if digest_value is not None:
            verify_digest(digest_value, body)
    except SignatureError as exc:
        raise _bad(str(exc), "Signature" if not str(exc).startswith("Digest") else "Digest") from None
    try:
        sent = parsedate_to_datetime(date_value)
    except (TypeError, ValueError):
        sent = None
    if sent is None or sent.tzinfo is None:
        raise _bad("Date: not an RFC 7231 date (e.g. Sun, 06 Nov 1994 08:49:37 GMT)", "Date")
    tolerance = settings.BANK_SIM_DATE_TOLERANCE
    if abs((real_now - sent).total_seconds()) > tolerance:
        raise _bad(f"Date: deviates more than {tolerance} seconds from the bank's clock", "Date")
    return VerifiedSignature(tpp=cert, signature=params.signature, date=sent)


def refuse_replay(verified: VerifiedSignature, *, real_now: dt.datetime) -> None:
    """A Signature value accepted before is refused while its Date is still within the allowed deviation."""
    expires_at = verified.date + dt.timedelta(seconds=settings.BANK_SIM_DATE_TOLERANCE)
    try:
        replay.remember(signature=verified.signature, expires_at=expires_at, real_now=real_now)
    except replay.ReplayedSignature:
        raise _bad(
            "Signature: this signature was already used (a replayed request); sign every request anew, with "
            "its own Date and X-Request-ID",
            "Signature",
        ) from None


def _check_content(request: HttpRequest, body_mode: str) -> Any:
    accept = request.headers.get("Accept")
    if accept and not any(
        part.split(";")[0].strip().lower() in {"*/*", "application/*", "application/json"}
        for part in accept.split(",")
    ):
        raise ApiError(406, "FORMAT_ERROR", "Accept: the bank answers in application/json only", path="Accept")
    if request.META.get("QUERY_STRING"):
        for name, values in request.GET.lists():
            _refuse_astral(name + "".join(values), name)
    body = request.body
    if not body:
        return None
    if body_mode == "none":
        raise format_error("body", "This operation takes no request body.")
    content_type = request.headers.get("Content-Type", "")
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "application/json":
        raise format_error("Content-Type", "Only application/json request bodies are accepted (no XML).")
    charset = params.strip().lower()
    if charset and charset.replace(" ", "") not in {"charset=utf-8", 'charset="utf-8"'}:
        raise format_error("Content-Type", "Request bodies are UTF-8.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise format_error("body", "The request body is not valid UTF-8.") from None
    _refuse_astral(text, "body")
    if body_mode == "ignored":
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise format_error(
            "body", f"The request body is not valid JSON ({exc.msg} at position {exc.pos})."
        ) from None


def _refuse_astral(text: str, path: str) -> None:
    """The bank's downstream systems store 3-byte UTF-8 only: emoji and other astral characters are refused."""
    for ch in text:
        if ord(ch) > 0xFFFF:
            raise format_error(
                path, f"The character U+{ord(ch):04X} cannot be processed by the bank's systems (spec section 1)."
            )


def _uuid_header(request: HttpRequest, name: str) -> str | None:
    value = _header(request, name)
    if value is None or value == "":
        return None
    if not _UUID.match(value):
        raise format_error(name, f"{name} must be a UUID.")
    return value.lower()


def _resolve_psu(api: ApiRequest, *, corporate_required: bool) -> dt.timedelta:
    """Fill in the PSU, the agreement in force and its latest consent; returns the business clock's offset."""
    request = api.http
    ip = _header(request, "PSU-IP-Address")
    if ip is not None:
        try:
            ipaddress.ip_address(ip.strip())
        except ValueError:
            raise format_error("PSU-IP-Address", "PSU-IP-Address must be an IPv4 or IPv6 address.") from None
        api.psu_present = True
    psu_id = _uuid_header(request, "PSU-ID")
    corporate_id = _uuid_header(request, "PSU-Corporate-ID")
    if psu_id is None:
        return clock.offset()
    api.psu_id_given = True
    # With the PSU present, the PSU's SCA in this TPP session is read in the same query (views.common).
    session_id = (_header(request, "TPP-Session-ID") or "") if api.psu_present else ""
    context = selectors.psu_context(
        psu_id=psu_id, tpp_org_id=api.tpp_org_id, corporate_id=corporate_id, tpp_session_id=session_id
    )
    if context is None:
        return clock.offset()
    api.psu = context.psu
    api.session_sca_at, api.session_read = context.session_sca_at, bool(session_id)
    customer = context.psu.customer
    if corporate_id:
        if context.agreement is None:
            raise ApiError(
                403,
                "FORBIDDEN",
                "PSU-Corporate-ID names no corporate agreement this PSU may act for.",
                path="PSU-Corporate-ID",
            )
    elif customer.customer_type == CustomerType.CORPORATE and corporate_required:
        raise header_required("PSU-Corporate-ID", "for a corporate user (spec 5.6)")
    api.agreement = context.agreement
    api.consent = context.consent
    return context.offset


def _check_redirect_uri(request: HttpRequest) -> None:
    value = _header(request, "TPP-Redirect-URI")
    if value is None:
        return
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.netloc or len(value) > 2000:
        raise format_error("TPP-Redirect-URI", "TPP-Redirect-URI must be an absolute http(s) address.")


def endpoint(
    *,
    roles: frozenset[str] | None,
    required: tuple[str, ...] = (),
    body: str = "none",
    sandbox: bool = False,
    corporate_required: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., HttpResponse]]:
    """Declare a /v1 operation.

    roles: the PSD2 roles of which the certificate must hold one (None: any valid TPP certificate).
    required: operation headers besides the signing ones (HTTP_HEADER_REQUIRED names a missing one).
    body: "none", "json" (parsed into ApiRequest.body) or "ignored" (checked for format, then ignored).
    sandbox: a mock-data operation; 404 when BANK_SIM_SANDBOX is off.
    corporate_required: a corporate PSU must send PSU-Corporate-ID (spec 5.6).
    """

    def decorate(view: Callable[..., Any]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            try:
                if sandbox and not settings.BANK_SIM_SANDBOX:
                    raise ApiError(404, "NOT_FOUND", "The sandbox operations are not available on this bank.")
                real_now = clock.real_now()
                verified = verify_signature(request, real_now=real_now)
                cert = verified.tpp
                if roles is not None and not roles & cert.roles:
                    wanted = " or ".join(sorted(roles))
                    services = ", ".join(ROLE_SERVICES.get(r, r) for r in sorted(roles))
                    raise _bad(
                        f"TPP-Signature-Certificate: the PSD2 role {wanted} is required for {services}; "
                        f"the certificate holds {', '.join(sorted(cert.roles)) or 'none'}",
                        "TPP-Signature-Certificate",
                    )
                for name in required:
                    if not _header(request, name):
                        raise header_required(name)
                _check_redirect_uri(request)
                parsed = _check_content(request, body)
                refuse_replay(verified, real_now=real_now)
                api = ApiRequest(
                    http=request,
                    tpp=cert,
                    now=real_now,
                    request_id=_header(request, "X-Request-ID") or "",
                    body=parsed,
                    fixes=_fixes(request),
                )
                api.now = real_now + _resolve_psu(api, corporate_required=corporate_required)
                result = view(api, **kwargs)
                response = (
                    result
                    if isinstance(result, HttpResponse)
                    else JsonResponse(as_configured(result[1], request=request, now=api.now), status=result[0])
                )
            except ApiError as error:
                response = error_response(error)
            response["X-Request-ID"] = request.headers.get("X-Request-ID", "")
            return response_signing.sign(response)

        return csrf_exempt(wrapper)

    return decorate


def _fixes(request: HttpRequest) -> frozenset[str]:
    raw = _header(request, "x-accept-fix") or ""
    return frozenset(part.strip() for part in raw.split(",") if part.strip() in KNOWN_FIXES)


def methods(**handlers: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """One URL, one view per HTTP method; other methods get 405 with a tppMessages body."""
    allowed = ", ".join(sorted(handlers))

    @csrf_exempt
    def dispatch(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        handler = handlers.get(request.method or "")
        if handler is None:
            response = error_response(
                ApiError(405, "BAD_REQUEST", f"Method {request.method} is not allowed here (allowed: {allowed}).")
            )
            response["Allow"] = allowed
            return response
        return handler(request, **kwargs)

    return dispatch


def bool_query(api: ApiRequest, name: str) -> bool:
    """A boolean query parameter (``true``/``false``; absent is false); anything else is a FORMAT_ERROR."""
    raw = api.http.GET.get(name)
    if raw is None:
        return False
    if raw not in {"true", "false"}:
        raise format_error(name, f"{name} must be true or false.")
    return raw == "true"
