"""System checks (``manage.py check``, run before migrate and by every start): certificates close to expiry."""

from __future__ import annotations

from django.core import checks
from django.utils import timezone

from core import certificates


def certificates_expiry(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A warning for each certificate file of the bank connection that expires within the warning days or has
    expired. A warning, not an error: the portal still starts (users see their stored data), and bank calls are
    refused with a clear error until the certificate is renewed."""
    now = timezone.now()
    found = []
    for status in certificates.file_certificates():
        level = status.level(now)
        if level in (certificates.OK, certificates.UNKNOWN):
            continue
        when = f"{status.not_after:%Y-%m-%d %H:%M} UTC" if status.not_after else "?"
        message = (
            f"{status.label} ({status.source}) expired on {when}: bank calls are refused"
            if level == certificates.EXPIRED
            else f"{status.label} ({status.source}) expires on {when}, in {status.days_left(now):.0f} days"
        )
        found.append(
            checks.Warning(message, hint="renew it: docs/operations.md, Certificates", id="tpp_portal.W001")
        )
    return found


def register() -> None:
    checks.register(certificates_expiry)
