"""Writes of the users app: the invitations of staff to enrol a second factor; a user's mail settings (last).

A password alone never enrols a second factor (users.security.StaffSecondFactorMiddleware): a staff user without
one enrols through a link mailed to their confirmed address by a superuser (``manage.py staff_invite`` or the
admin's action). The link works once, for that user only, until ``STAFF_INVITATION_MAX_AGE``; opening it lets
this browser session enrol for ``STAFF_ENROLMENT_WINDOW``. Only the token's hash is stored.
"""

from __future__ import annotations

import secrets
from typing import Any

from allauth.account.adapter import get_adapter
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from users.adapter import portal_url
from users.models import MailSettings, StaffInvitation
from users.selectors import confirmed_address, invitation_token_hash


class InvitationError(Exception):
    """The domain error of invitations."""


class InvitationRefused(InvitationError):
    """This user cannot be invited (not active staff, or no confirmed address to mail the link to)."""


class InvitationInvalid(InvitationError):
    """The link is unknown, used, revoked, expired or another user's (one answer for all of them)."""


def staff_invitation_create(*, user: Any, invited_by: Any = None) -> StaffInvitation:
    """Make an invitation for ``user`` and mail its link (once the transaction commits) to their confirmed
    address; earlier unused links of ``user`` stop working."""
    if not user.is_active or not (user.is_staff or user.is_superuser):
        raise InvitationRefused(_("%(user)s is not an active staff user") % {"user": user.get_username()})
    address = confirmed_address(user)
    if address is None:
        raise InvitationRefused(
            _("%(user)s has no confirmed e-mail address to send the link to") % {"user": user.get_username()}
        )
    token = secrets.token_urlsafe(32)
    moment = timezone.now()
    with transaction.atomic():
        StaffInvitation.objects.filter(user=user, used_at__isnull=True).update(used_at=moment)
        invitation = StaffInvitation.objects.create(
            user=user,
            token_hash=invitation_token_hash(token),
            created_at=moment,
            expires_at=moment + settings.STAFF_INVITATION_MAX_AGE,
            invited_by=invited_by,
        )
        context = {
            "invitation_url": portal_url(reverse("staff_invitation", kwargs={"token": token})),
            "expires_at": invitation.expires_at,
            "username": user.get_username(),
        }
        transaction.on_commit(lambda: get_adapter().send_mail("users/email/staff_invitation", address, context))
    return invitation


def staff_invitation_accept(*, user: Any, token: str) -> None:
    """Use up ``user``'s invitation ``token``: a conditional update, so two tabs opening it at once cannot both
    use it. Raises InvitationInvalid for anything but an unused, unexpired invitation of ``user``."""
    if not user.is_authenticated or not token or len(token) > 100:
        raise InvitationInvalid("no such invitation")
    moment = timezone.now()
    claimed = StaffInvitation.objects.filter(
        token_hash=invitation_token_hash(token), user=user, used_at__isnull=True, expires_at__gt=moment
    ).update(used_at=moment)
    if claimed != 1:
        raise InvitationInvalid("no such invitation")


# --- mail settings -----------------------------------------------------------------------------------------------
def mail_settings_save(*, user: Any, language: str, payment_mails: bool) -> None:
    """The user's choice on "My account": the language of the portal's mails and whether payments are mailed."""
    if language not in dict(settings.LANGUAGES):
        raise ValueError(f"not a language of the portal: {language!r}")
    MailSettings.objects.update_or_create(
        user_id=user.pk, defaults={"language": language, "payment_mails": payment_mails}
    )


def mail_language_remember(*, user: Any, language: str, replace: bool = True) -> None:
    """The language the user chose on the portal (the header's language form; a sign-in records the page's
    language once, ``replace=False``): the portal's mails come in it."""
    if language not in dict(settings.LANGUAGES) or not getattr(user, "pk", None):
        return
    if replace:
        MailSettings.objects.update_or_create(user_id=user.pk, defaults={"language": language})
    else:
        MailSettings.objects.get_or_create(user_id=user.pk, defaults={"language": language})
