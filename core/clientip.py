"""The address of the person making a request, the same for the sign-in limits and PSU-IP-Address."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ipware import get_client_ip


def client_ip(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or behind ``TRUSTED_PROXY_COUNT`` proxies the client address they forwarded in
    X-Forwarded-For (a client's own X-Forwarded-For is ignored when no proxy is trusted); None when no address can
    be found."""
    proxies = settings.TRUSTED_PROXY_COUNT
    address, _routable = get_client_ip(
        request,
        proxy_count=proxies or None,
        request_header_order=("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR") if proxies else ("REMOTE_ADDR",),
    )
    return address
