"""How django-allauth signs people up and in here (ACCOUNT_ADAPTER).

- **The client address** of every limit is ``core.clientip`` (REMOTE_ADDR, or behind TRUSTED_PROXY_COUNT
  proxies the address they forwarded), the same as PSU-IP-Address.
- **Failed passwords** are counted per login (e-mail address or username) *and* client address: five wrong ones
  lock that pair out for SIGN_IN_COOL_OFF (ACCOUNT_RATE_LIMITS["login_failed"]), while the owner signing in
  from elsewhere is not locked out by a stranger's guesses; ten a minute from one address, whatever the name.
  Re-authentication and the old password of a password change count in the same way (users.forms).
- **Confirmation codes** are mailed at most 1 a minute and 3 an hour to one address *from one client address*
  (ACCOUNT_RATE_LIMITS["confirm_email_to_address"], counted by :meth:`AccountAdapter.consume_code_mail`: the
  sign-up page, a sign-in before confirming, "Send a new code"), and 10 a minute, 50 an hour from one client
  address to any (allauth's "confirm_email"). Counted per address alone, a stranger's sign-ups with someone's
  address used up the owner's mails, and the owner's own sign-up answered 429.
- **Mails** are rendered here and sent by the worker (``users.tasks.send_account_mail``): the answer of a page
  takes as long whether it mailed an existing account, an unknown address or nobody. Links in them are built
  from PORTAL_BASE_URL, never from the request's Host header.
- **Usernames** of people who sign up are their e-mail address, as before allauth. A sign-up for an address that
  already has an unconfirmed one (users.forms.SignUpForm) gets a stand-in username until it types its code;
  then the others are deleted and it takes the address as its username (:meth:`AccountAdapter.confirm_email`).
"""

from __future__ import annotations

import secrets
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.core.ratelimit import consume, respond_429
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.urls import reverse

from core.clientip import client_ip
from users.forms import pending_sign_ups
from users.tasks import send_account_mail

#: The permission the staff dashboard asks for (staff.views.dashboard: reading the audit log of bank calls).
STAFF_DASHBOARD_PERMISSION = "tpp_portal.view_bankcall"


def portal_url(path: str) -> str:
    """An absolute address of the portal, from PORTAL_BASE_URL (not from the request's Host header)."""
    return settings.PORTAL_BASE_URL.rstrip("/") + path


class AccountAdapter(DefaultAccountAdapter):
    # --- who is asking ---------------------------------------------------------------------------------------
    def get_client_ip(self, request) -> str:
        address = client_ip(request)
        if not address:
            raise PermissionDenied("no client address")
        return address

    def _get_login_attempts_cache_key(self, request, **credentials: Any) -> str:
        login = str(credentials.get("email", credentials.get("username", ""))).lower()
        return f"{login}|{self.get_client_ip(request)}"

    def authenticate(self, request, **credentials: Any):
        user = super().authenticate(request, **credentials)
        if user is not None:
            # The right password forgets the earlier failures of this login from this address, so typos spread
            # over a day do not add up to a lockout.
            self._delete_login_attempts_cached_email(request, **credentials)
        return user

    def get_login_redirect_url(self, request) -> str:
        """Where a sign-in lands when it names no ``next`` (allauth reads ``next`` before asking here): staff on
        the staff dashboard, or on the admin when the dashboard is not theirs to read (staff.views.dashboard
        asks for STAFF_DASHBOARD_PERMISSION); customers where LOGIN_REDIRECT_URL says."""
        user = request.user
        if user.is_staff:
            if user.has_perm(STAFF_DASHBOARD_PERMISSION):
                return reverse("staff-dashboard")
            return reverse("admin:index")
        return super().get_login_redirect_url(request)

    # --- sign-up ---------------------------------------------------------------------------------------------
    def populate_username(self, request, user) -> None:
        username = (user.email or "").lower()
        if get_user_model().objects.filter(username__iexact=username).exists():
            username = f"pending-{secrets.token_hex(16)}"  # another unconfirmed sign-up holds the address
        user.username = username

    def confirm_email(self, request, email_address) -> bool:
        """The first unconfirmed account of an address to type its code keeps the address: the others (other
        sign-ups with it, never confirmed) are deleted, their passwords and codes with them."""
        with transaction.atomic():
            others = [user for user in pending_sign_ups(email_address.email) if user.pk != email_address.user_id]
            confirmed = super().confirm_email(request, email_address)
            if not confirmed:
                return confirmed
            for user in others:
                user.delete()
            user = email_address.user
            address = email_address.email.lower()
            if user.username != address and not get_user_model().objects.filter(username__iexact=address).exists():
                user.username = address
                user.save(update_fields=["username"])
        return confirmed

    def save_user(self, request, user, form, commit: bool = True):
        # users.signals gives accounts made elsewhere (staff, commands) a verified address; not this one.
        user._made_by_sign_up = True
        return super().save_user(request, user, form, commit=commit)

    def consume_code_mail(self, request, email: str) -> bool:
        """Count a confirmation code mailed to ``email`` at this client's request; False when over the limit."""
        key = f"{email.strip().lower()}|{self.get_client_ip(request)}"
        return consume(request, action="confirm_email_to_address", key=key)

    def should_send_confirmation_mail(self, request, email_address, signup: bool) -> bool:
        # A sign-up is counted by its page (users.views.SignUpView), for an address with an account as for one
        # without; this is a sign-in before confirming, which mails a new code.
        if not signup and not self.consume_code_mail(request, email_address.email):
            raise ImmediateHttpResponse(respond_429(request))
        return super().should_send_confirmation_mail(request, email_address, signup)

    # --- mails -----------------------------------------------------------------------------------------------
    def format_email_subject(self, subject: str) -> str:
        return settings.ACCOUNT_EMAIL_SUBJECT_PREFIX + str(subject)

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        ctx = {
            "email": email,
            "current_site": SimpleNamespace(name="Fjordpay", domain=urlsplit(settings.PORTAL_BASE_URL).netloc),
            "portal_base_url": settings.PORTAL_BASE_URL.rstrip("/"),
            "sign_in_url": portal_url(reverse("account_login")),
            "signup_url": portal_url(reverse("account_signup")),
            "password_reset_url": portal_url(reverse("account_reset_password")),
            **context,
        }
        # Only the context's own links survive: the request is left out, so no template can build one from it.
        ctx.pop("request", None)
        message = self.render_mail(template_prefix, email, ctx)
        payload = {
            "template": template_prefix,
            "subject": message.subject,
            "body": message.body,
            "from_email": message.from_email,
            "to": list(message.to),
            "alternatives": [list(alternative) for alternative in getattr(message, "alternatives", [])],
        }
        if settings.ACCOUNT_MAIL_QUEUED:
            # The arguments hold a code or a link: keep them out of Celery's own log lines.
            send_account_mail.apply_async(args=[payload], argsrepr=f"({template_prefix!r})")
        else:
            send_account_mail(payload)

    def send_account_already_exists_mail(self, email: str) -> None:
        self.send_mail("account/email/account_already_exists", email, {})

    def get_reset_password_from_key_url(self, key: str) -> str:
        path = reverse("account_reset_password_from_key", kwargs={"uidb36": "UID", "key": "KEY"})
        return portal_url(path.replace("UID-KEY", key))
