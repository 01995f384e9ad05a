"""The invitations that let a staff user enrol a second factor (users.services, users.security).

A password alone never enrols one: whoever first held a staff password could otherwise enrol their own. A
superuser (``manage.py staff_invite`` or the admin's action) has a single-use link mailed to the staff member's
confirmed address; only the SHA-256 of its token is stored, so the table does not hold a working link.
Its labels are translated, as every admin table's.
"""

from __future__ import annotations

from allauth.mfa.models import Authenticator
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class StaffInvitation(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("staff user"), on_delete=models.CASCADE, related_name="+"
    )
    token_hash = models.CharField(_("token (SHA-256)"), max_length=64, unique=True)
    created_at = models.DateTimeField(_("created at"))
    expires_at = models.DateTimeField(_("expires at"))
    # Set once, by the conditional update that accepts the link (or that a newer invitation revokes it with).
    used_at = models.DateTimeField(_("used or revoked at"), null=True, blank=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("invited by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        verbose_name = _("second-factor invitation")
        verbose_name_plural = _("second-factor invitations")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return _("invitation for %(user)s (%(at)s UTC)") % {
            "user": self.user,
            "at": f"{self.created_at:%Y-%m-%d %H:%M}",
        }


class MailSettings(models.Model):
    """What a user chose for the portal's own mails about their business (payments.services.notifications): the
    language they come in (the language last chosen on the portal, or on "My account") and whether the
    payment mails come at all. No row: the defaults (the portal's language, mails on)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="mail_settings",
    )
    language = models.CharField(_("language of mails"), max_length=8, default=settings.LANGUAGE_CODE)
    payment_mails = models.BooleanField(_("mails about payments"), default=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("mail settings")
        verbose_name_plural = _("mail settings")

    def __str__(self) -> str:
        return _("mail settings for %(user)s") % {"user": self.user}


class SecondFactor(Authenticator):
    """allauth.mfa's authenticators (a staff member's authenticator app, security keys and recovery codes) as the
    admin shows them: allauth's model has no verbose names, so the admin named it "Authenticators" with "User",
    "Created at" and "Last used at" in either language. This proxy gives the table its names (users/admin.py
    labels its columns); the rows are allauth's own."""

    class Meta:
        proxy = True
        verbose_name = _("second factor")
        verbose_name_plural = _("second factors")
