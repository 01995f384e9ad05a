"""The PSU context of a call: who the PSU is and, when the PSU is present, what its request looked like.

PSU-IP-Address is sent exactly when the PSU is present (spec section 8): it is the presence flag. The headers
forwarded from the PSU's own request (port, user agent, Accept*, method, device, geo location) describe a live
request, so they are refused without an IP address.
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from dataclasses import dataclass, fields

from xs2a.errors import InvalidRequestError

__all__ = ["PSU_HEADER_NAMES", "PsuContext"]

_GEO = re.compile(r"^GEO:-?\d{1,3}(\.\d+)?,-?\d{1,3}(\.\d+)?$")
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
_CONTEXTS = frozenset({"PRIVATE", "CORPORATE"})

# field name -> header name, in the order the headers are written.
_HEADERS = {
    "psu_id": "PSU-ID",
    "corporate_id": "PSU-Corporate-ID",
    "context": "PSU-Context",
    "identity": "X-PSU-IDENTITY",
    "ip_address": "PSU-IP-Address",
    "ip_port": "PSU-IP-Port",
    "user_agent": "PSU-User-Agent",
    "accept": "PSU-Accept",
    "accept_charset": "PSU-Accept-Charset",
    "accept_encoding": "PSU-Accept-Encoding",
    "accept_language": "PSU-Accept-Language",
    "http_method": "PSU-HTTP-Method",
    "device_id": "PSU-Device-ID",
    "geo_location": "PSU-Geo-Location",
    "tpp_session_id": "TPP-Session-ID",
}
REDIRECT_PREFERRED = "TPP-Redirect-Preferred"
#: The PsuContext fields that become headers, in the order the headers are written.
HEADER_FIELDS = tuple(_HEADERS)
PSU_HEADER_NAMES = tuple(name for name in _HEADERS.values() if name != "TPP-Session-ID")
# Forwarded from the PSU's live request: meaningless (and refused) when the PSU is not present.
_LIVE_ONLY = (
    "ip_port",
    "user_agent",
    "accept",
    "accept_charset",
    "accept_encoding",
    "accept_language",
    "http_method",
    "device_id",
    "geo_location",
)
#: Headers that identify the PSU: redacted in audit records, never logged.
PSU_IDENTIFYING_HEADERS = frozenset(
    {"psu-id", "psu-corporate-id", "x-psu-identity", "psu-ip-address", "psu-device-id", "psu-geo-location"}
)


def _uuid(value: str, name: str) -> str:
    try:
        uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        raise InvalidRequestError(f"{name} must be a UUID") from None
    return value


@dataclass(frozen=True)
class PsuContext:
    """PSU headers of one call. ``present`` is true exactly when ``ip_address`` is given."""

    psu_id: str | None = None
    corporate_id: str | None = None
    context: str | None = None
    identity: str | None = None
    ip_address: str | None = None
    ip_port: str | None = None
    user_agent: str | None = None
    accept: str | None = None
    accept_charset: str | None = None
    accept_encoding: str | None = None
    accept_language: str | None = None
    http_method: str | None = None
    device_id: str | None = None
    geo_location: str | None = None
    #: TPP-Session-ID: the portal's session with this PSU. Not a PSU header, but it travels with the PSU: an SCA
    #: is valid for one hour within one TPP-Session-ID (spec section 3), so the portal keeps and reuses it.
    tpp_session_id: str | None = None
    #: TPP-Redirect-Preferred: False asks the bank for SCA in its mobile app (biometrics) where it can, True for
    #: the redirect; None sends nothing (the bank's default, true). Spec 4.1 and 5.8.
    redirect_preferred: bool | None = None

    def __post_init__(self) -> None:
        if self.redirect_preferred is not None and not isinstance(self.redirect_preferred, bool):
            raise InvalidRequestError("TPP-Redirect-Preferred: True, False or None is expected")
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name == "redirect_preferred":
                continue
            if not isinstance(value, str):
                raise InvalidRequestError(f"{_HEADERS[f.name]}: a str is expected, got {type(value).__name__}")
            if not value.strip() or "\r" in value or "\n" in value or not value.isprintable():
                raise InvalidRequestError(
                    f"{_HEADERS[f.name]}: an empty value or a control character is not allowed"
                )
        if self.psu_id is not None:
            _uuid(self.psu_id, "PSU-ID")
        if self.corporate_id is not None:
            _uuid(self.corporate_id, "PSU-Corporate-ID")
        if self.device_id is not None:
            _uuid(self.device_id, "PSU-Device-ID")
        if self.context is not None and self.context not in _CONTEXTS:
            raise InvalidRequestError("PSU-Context must be PRIVATE or CORPORATE")
        if self.ip_address is not None:
            try:
                ipaddress.ip_address(self.ip_address)
            except ValueError:
                raise InvalidRequestError("PSU-IP-Address must be an IPv4 or IPv6 address") from None
        if self.ip_port is not None and not (self.ip_port.isdigit() and 0 < int(self.ip_port) < 65536):
            raise InvalidRequestError("PSU-IP-Port must be a port number")
        if self.http_method is not None and self.http_method not in _METHODS:
            raise InvalidRequestError("PSU-HTTP-Method must be one of GET, POST, PUT, PATCH, DELETE")
        if self.geo_location is not None and not _GEO.match(self.geo_location):
            raise InvalidRequestError("PSU-Geo-Location must have the form GEO:<latitude>,<longitude>")
        if self.ip_address is None:
            given = [_HEADERS[name] for name in _LIVE_ONLY if getattr(self, name) is not None]
            if given:
                raise InvalidRequestError(
                    f"{', '.join(given)} describe the PSU's live request: give PSU-IP-Address too "
                    "(it is present exactly when the PSU is present)"
                )

    @property
    def present(self) -> bool:
        return self.ip_address is not None

    def headers(self) -> dict[str, str]:
        out = {header: getattr(self, name) for name, header in _HEADERS.items() if getattr(self, name) is not None}
        if self.redirect_preferred is not None:
            out[REDIRECT_PREFERRED] = "true" if self.redirect_preferred else "false"
        return out
