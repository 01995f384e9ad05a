"""Reads of the users app: a user's confirmed address, the invitation a link names, a user's mail settings."""

from __future__ import annotations

import hashlib
from typing import Any

from allauth.account.models import EmailAddress
from django.conf import settings
from django.utils import timezone

from users.models import MailSettings, StaffInvitation


def confirmed_address(user: Any) -> str | None:
    """The address of ``user`` that was confirmed (a code typed, or typed by staff), the primary one first."""
    address = EmailAddress.objects.filter(user=user, verified=True).order_by("-primary", "pk").first()
    return address.email if address else None


def invitation_token_hash(token: str) -> str:
    """What is stored of an invitation's token: its SHA-256 (the token is 256 random bits, so no salt is needed
    for it not to be guessed back)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def staff_invitation_usable(*, user: Any, token: str) -> StaffInvitation | None:
    """The invitation ``token`` names when it is ``user``'s, unused and unexpired; else None (whichever it is)."""
    if not user.is_authenticated or not token or len(token) > 100:
        return None
    return StaffInvitation.objects.filter(
        token_hash=invitation_token_hash(token),
        user=user,
        used_at__isnull=True,
        expires_at__gt=timezone.now(),
    ).first()


def mail_settings(user_id: int) -> MailSettings:
    """The user's mail settings, or the defaults (not saved) when they never chose: the portal's language and
    the payment mails on. A language the portal no longer offers reads as the portal's language."""
    found = MailSettings.objects.filter(user_id=user_id).first() or MailSettings(user_id=user_id)
    if found.language not in dict(settings.LANGUAGES):
        found.language = settings.LANGUAGE_CODE
    return found
