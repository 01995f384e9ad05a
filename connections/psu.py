"""The PSU's presence, read from the PSU's own request: what the portal forwards to the bank (spec section 8).

PSU-IP-Address is sent exactly when the PSU is present; with it go the headers that describe the PSU's live
request (user agent, Accept*, method). A header the bank could not carry (control characters, over-long) is
left out rather than failing the PSU's request.
"""

from __future__ import annotations

import ipaddress

from django.http import HttpRequest

from core.clientip import client_ip
from xs2a.psu import PsuContext

_FORWARDED = {
    "user_agent": "HTTP_USER_AGENT",
    "accept": "HTTP_ACCEPT",
    "accept_charset": "HTTP_ACCEPT_CHARSET",
    "accept_encoding": "HTTP_ACCEPT_ENCODING",
    "accept_language": "HTTP_ACCEPT_LANGUAGE",
}
_MAX_HEADER = 500


def _clean(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    if not value or len(value) > _MAX_HEADER or not value.isprintable():
        return None
    return value


def psu_presence(request: HttpRequest) -> PsuContext:
    """PsuContext of a request the PSU is making now (PSU-IP-Address and the live-request headers).

    The address is the one django-axes uses too (``core.clientip``): REMOTE_ADDR, or behind
    TRUSTED_PROXY_COUNT reverse proxies the client address they forwarded, never a header the client controls.
    """
    address = (client_ip(request) or "").strip()
    try:
        ipaddress.ip_address(address)
    except ValueError:  # every WSGI server sets it: a deployment fault, not the PSU's
        raise ValueError(f"the client address is not an IP address: {address[:60]!r}") from None
    method = request.method if request.method in {"GET", "POST", "PUT", "PATCH", "DELETE"} else None
    forwarded = {name: _clean(request.META.get(key)) for name, key in _FORWARDED.items()}
    return PsuContext(ip_address=address, http_method=method, **forwarded)
