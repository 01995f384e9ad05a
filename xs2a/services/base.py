"""What every service has: the requester it sends through, and the small helpers of the operations."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from xs2a.errors import InvalidRequestError
from xs2a.psu import PsuContext

if TYPE_CHECKING:
    from xs2a.core import Requester

T = TypeVar("T")


class Service:
    """One resource of the bank's interface; reached from the client, sharing its requester."""

    def __init__(self, requester: Requester) -> None:
        self._requester = requester


def text_bool(value: bool) -> str:
    return "true" if value else "false"


def redirect_preferred_header(value: bool | None) -> dict[str, str]:
    """TPP-Redirect-Preferred for an SCA-starting call: false asks for SCA in the bank's app; None: not sent
    (``PsuContext.redirect_preferred`` may still send it)."""
    if value is None:
        return {}
    if not isinstance(value, bool):
        raise InvalidRequestError("redirect_preferred: True, False or None is expected")
    return {"TPP-Redirect-Preferred": text_bool(value)}


def sca_headers(redirect_preferred: bool | None, redirect_uri: str | None) -> dict[str, str]:
    """The headers of an SCA-starting call beside the PSU's: TPP-Redirect-Preferred when asked, and a
    TPP-Redirect-URI of this SCA's own (the client's fixed one otherwise), for example one carrying the TPP's
    per-redirect state in its query, which the bank keeps when it sends the PSU back (spec section 6)."""
    headers = redirect_preferred_header(redirect_preferred)
    if redirect_uri is not None:
        parts = urlsplit(redirect_uri) if isinstance(redirect_uri, str) else None
        if (
            parts is None
            or parts.scheme not in {"http", "https"}
            or not parts.netloc
            or parts.fragment
            or not redirect_uri.isprintable()
        ):
            raise InvalidRequestError("redirect_uri: an absolute http(s) address without a fragment is expected")
        headers["TPP-Redirect-URI"] = redirect_uri
    return headers


def session_for(tpp_session_id: str | None, psu: PsuContext | None) -> str:
    """The TPP-Session-ID of an SCA-starting call: the one given, else the PSU's, else a new one."""
    return tpp_session_id or (psu.tpp_session_id if psu else None) or str(uuid.uuid4())


def with_changes(record: T, **changes: Any) -> T:
    return replace(record, **changes)  # type: ignore[type-var]
