"""Error bodies of the bank: ``{"tppMessages": [{"category", "code", "path", "text"}]}`` (spec section 7)."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

# Spec section 7: the codes the bank uses (and one of Berlin Group's, below).
CODES = frozenset(
    {
        "SYSTEM_ERROR",
        "BAD_REQUEST",
        "FORBIDDEN",
        "NOT_FOUND",
        "CONFLICT",
        "HTTP_HEADER_REQUIRED",
        "QUERY_PARAMETER_REQUIRED",
        "SCA_NOT_FOUND",
        "SCA_EXPIRED",
        "SCA_INVALID",
        "FORMAT_ERROR",
        "RESOURCE_UNKNOWN",
        "PSU_CREDENTIALS_INVALID",
        "CONSENT_UNKNOWN",
        "CONSENT_INVALID",
        "CONSENT_EXPIRED",
        "ACCESS_EXCEEDED",
        "PRODUCT_UNKNOWN",
        "PRODUCT_INVALID",
        "KID_MISSING",
        "KID_INVALID",
        "PAYMENT_FAILED",
        "EXECUTION_DATE_INVALID",
        "REFERENCE_MIX_INVALID",
        # Berlin Group's code for an operation the bank does not offer (405); this bank's spec is silent, and it
        # is used only when a setting switches an operation off (BANK_SIM_CONSENT_DELETE=false).
        "SERVICE_INVALID",
    }
)
MAX_TEXT = 512


class ApiError(Exception):
    """An error answer: HTTP status, a section-7 code, an optional path and a text for the TPP."""

    def __init__(
        self,
        status: int,
        code: str,
        text: str,
        *,
        path: str | None = None,
        links: dict[str, Any] | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"{code!r} is not an error code of spec section 7")
        super().__init__(text)
        self.status = status
        self.code = code
        self.text = text
        self.path = path
        self.links = links

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"category": "ERROR", "code": self.code}
        if self.path:
            message["path"] = self.path
        message["text"] = _clip(self.text)
        body: dict[str, Any] = {"tppMessages": [message]}
        if self.links:
            body["_links"] = self.links
        return body


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def header_required(name: str, why: str = "") -> ApiError:
    text = f"The {name} header is required" + (f" {why}" if why else "") + "."
    return ApiError(400, "HTTP_HEADER_REQUIRED", text, path=name)


def format_error(path: str, text: str) -> ApiError:
    return ApiError(400, "FORMAT_ERROR", text, path=path)


def error_response(error: ApiError) -> JsonResponse:
    return JsonResponse(error.body(), status=error.status)
