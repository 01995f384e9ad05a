"""The address of the person making a request, the same for brute-force protection and PSU-IP-Address."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ipware import get_client_ip


def client_ip(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or behind ``TRUSTED_PROXY_COUNT`` proxies the client address they forwarded (django-ipware,
    configured as django-axes is); None when no address can be found."""
    address, _routable = get_client_ip(
        request,
        proxy_count=settings.AXES_IPWARE_PROXY_COUNT,
        request_header_order=settings.AXES_IPWARE_META_PRECEDENCE_ORDER,
    )
    return address
