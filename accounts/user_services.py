"""Writes about portal users (people who sign in), kept apart from the bank-connection services."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)


class EmailAlreadyRegistered(Exception):
    """Another account already uses this e-mail address."""


def user_sign_up(*, email: str, password: str) -> Any:
    """Create a customer who signs in with ``email`` (already validated and lower-cased by the form)."""
    User = get_user_model()
    try:
        with transaction.atomic():
            return User.objects.create_user(username=email, email=email, password=password)
    except IntegrityError as exc:  # two sign-ups with one address at the same moment
        raise EmailAlreadyRegistered(email) from exc


def user_send_password_changed_notice(*, user: Any) -> None:
    """Tell the owner of the account by mail that its password was changed, so a stranger's change is noticed.

    The change itself is already saved; a mail server that fails is logged and does not undo it.
    """
    if not user.email:
        return
    context = {"user": user, "portal_base_url": settings.PORTAL_BASE_URL}
    subject = "".join(render_to_string("accounts/email/password_changed_subject.txt", context).splitlines())
    body = render_to_string("accounts/email/password_changed.txt", context)
    try:
        send_mail(subject, body, None, [user.email])
    except OSError:
        logger.exception("password-changed notice not sent", extra={"user_id": user.pk})
