"""Writes about portal users (people who sign in), kept apart from the bank-connection services."""

from __future__ import annotations

import logging
from typing import Any

from axes.helpers import get_client_ip_address
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlencode, urlsafe_base64_encode

logger = logging.getLogger(__name__)


class SignUpConfirmationTokenGenerator(PasswordResetTokenGenerator):
    """Tokens of the "confirm your address" link: they stop working once the account is active (one use),
    and after PASSWORD_RESET_TIMEOUT, like reset links."""

    key_salt = "users.services.SignUpConfirmationTokenGenerator"

    def _make_hash_value(self, user: Any, timestamp: int) -> str:
        return f"{super()._make_hash_value(user, timestamp)}{user.is_active}"


sign_up_token_generator = SignUpConfirmationTokenGenerator()


def user_sign_up(*, email: str, password: str, next_url: str = "") -> None:
    """Sign up ``email`` (validated and lower-cased by the form) without saying whether it already has an account.

    A new address gets an inactive account and a mail with a link that activates it (:func:`user_activate`),
    so nobody can sign up with someone else's address. An address that already has an account gets a mail
    saying so, with a link to reset the password; its account is left as it is (the password typed here is not
    set: the person typing may not be the owner). An account that was never confirmed gets a fresh link. The
    caller shows the same page in every case. ``next_url`` (already checked to stay inside the portal) is
    where the confirmation link leads after activating.
    """
    User = get_user_model()
    existing = User.objects.filter(Q(username__iexact=email) | Q(email__iexact=email)).first()
    if existing is None:
        try:
            with transaction.atomic():
                user = User.objects.create_user(username=email, email=email, password=password, is_active=False)
        except IntegrityError:  # two sign-ups with one address at the same moment: the other one won
            existing = User.objects.filter(Q(username__iexact=email) | Q(email__iexact=email)).first()
        else:
            _send_sign_up_confirmation(user=user, next_url=next_url)
            return
    make_password(password)  # the same hashing work as a new account, so the answer takes as long
    if existing is None:  # the winner of the race was rolled back: nothing to tell anyone
        return
    if existing.is_active:
        _send_account_exists_notice(user=existing)
    else:
        _send_sign_up_confirmation(user=existing, next_url=next_url)


def user_activate(*, user: Any) -> None:
    """Activate an account whose owner opened the confirmation link (the view checked the token)."""
    type(user).objects.filter(pk=user.pk).update(is_active=True)
    user.is_active = True


def _send_sign_up_confirmation(*, user: Any, next_url: str) -> None:
    link = reverse(
        "signup_confirm",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": sign_up_token_generator.make_token(user),
        },
    )
    if next_url:
        link = f"{link}?{urlencode({'next': next_url})}"
    _send(
        user=user,
        subject_template="registration/signup_confirm_subject.txt",
        body_template="registration/signup_confirm_email.txt",
        context={"confirm_url": settings.PORTAL_BASE_URL.rstrip("/") + link},
    )


def _send_account_exists_notice(*, user: Any) -> None:
    _send(
        user=user,
        subject_template="registration/signup_exists_subject.txt",
        body_template="registration/signup_exists_email.txt",
        context={"reset_url": settings.PORTAL_BASE_URL.rstrip("/") + reverse("password_reset")},
    )


def _send(*, user: Any, subject_template: str, body_template: str, context: dict[str, Any]) -> None:
    """Mail the user; a mail server that fails is logged (the page says to check the e-mail either way)."""
    context = {"user": user, **context}
    subject = "".join(render_to_string(subject_template, context).splitlines())
    body = render_to_string(body_template, context)
    try:
        send_mail(subject, body, None, [user.email])
    except OSError:
        logger.exception("sign-up mail not sent", extra={"user_id": user.pk, "template": body_template})


def user_send_password_changed_notice(*, user: Any) -> None:
    """Tell the owner of the account by mail that its password was changed, so a stranger's change is noticed.

    The change itself is already saved; a mail server that fails is logged and does not undo it.
    """
    if not user.email:
        return
    context = {"user": user, "portal_base_url": settings.PORTAL_BASE_URL}
    subject = "".join(render_to_string("users/email/password_changed_subject.txt", context).splitlines())
    body = render_to_string("users/email/password_changed.txt", context)
    try:
        send_mail(subject, body, None, [user.email])
    except OSError:
        logger.exception("password-changed notice not sent", extra={"user_id": user.pk})


def user_reset_failed_sign_ins(*, request: Any, username: str) -> int:
    """Forget the failed sign-ins of ``username`` from this request's address (after the right password).

    Only that name and address pair is reset, the pair django-axes locks out (AXES_LOCKOUT_PARAMETERS); with no
    address known nothing is reset, rather than every address of the name. Returns how many records went.
    """
    ip_address = get_client_ip_address(request)
    if not ip_address or not username:
        return 0
    return axes_reset(ip=ip_address, username=username)
