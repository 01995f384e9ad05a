"""Signing up, in and out, the password pages and the password-again page: django-allauth's views, with the
portal's pages around them. Here only what the portal adds:

- a sign-in refused by the failed-password limit answers 429 with a page saying why and for how long (sign-in,
  re-authentication and password change alike);
- the password-again page before a payment records the moment for ``users.security.require_recent_authentication``
  and is itself a sensitive page (idle timeout);
- "My account" with the mail settings, and the password change as a sensitive page;
- the header's language form, which also sets the language of the portal's mails to a signed-in user;
- "Stay signed in" of the warning a minute before the idle sign-out (``session_keep_alive``);
- a staff user's invitation link to enrol a second factor, and the page saying they need one
  (users.services, users.security.StaffSecondFactorMiddleware).
"""

from __future__ import annotations

import math

from allauth.account import views as allauth_views
from allauth.account.adapter import get_adapter
from allauth.account.internal.flows.reauthentication import did_recently_reauthenticate
from allauth.core.ratelimit import respond_429
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.forms import Form
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import check_for_language
from django.utils.translation import gettext as _
from django.views import i18n as i18n_views
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from users.forms import MailSettingsForm
from users.security import (
    SensitivePageMixin,
    has_second_factor,
    idle_warning_seconds,
    is_recently_authenticated,
    needs_second_factor,
    sensitive_page,
    session_grant_enrolment,
    session_is_idle_expired,
    session_keep_alive,
    session_mark_reauthenticated,
)
from users.selectors import mail_settings, staff_invitation_usable
from users.services import (
    InvitationInvalid,
    mail_language_remember,
    mail_settings_save,
    staff_invitation_accept,
)

LOCKED_OUT = "too_many_login_attempts"


def is_locked_out(form: Form) -> bool:
    """True when the form was refused by the failed-password limit (allauth's "too many attempts")."""
    return any(error.code == LOCKED_OUT for errors in form.errors.as_data().values() for error in errors)


def lockout(request) -> HttpResponse:
    """The answer to a password check refused by the limit: why, for how long, and the way out (a reset)."""
    minutes = math.ceil(settings.SIGN_IN_COOL_OFF.total_seconds() / 60)
    return render(request, "registration/lockout.html", {"cooloff_minutes": minutes}, status=429)


class LockoutMixin:
    def form_invalid(self, form):
        if is_locked_out(form):
            return lockout(self.request)
        return super().form_invalid(form)


class SignInView(LockoutMixin, allauth_views.LoginView):
    pass


class SignOutView(allauth_views.LogoutView):
    http_method_names = ["post", "options"]  # a link or a prefetch never signs anyone out


class SignUpView(allauth_views.SignupView):
    def form_valid(self, form):
        # The mail limit of one address from one client (users.adapter), counted here for every sign-up: an
        # address with an account gets the same answer as one without.
        if not get_adapter().consume_code_mail(self.request, form.cleaned_data["email"]):
            return respond_429(self.request)
        return super().form_valid(form)


class ConfirmEmailCodeView(allauth_views.ConfirmEmailVerificationCodeView):
    """The page that asks for the mailed code; "Send a new code" is counted like a sign-up (users.adapter), so
    the owner of an address can ask for one whatever strangers did elsewhere with it."""

    def _resend_form_valid(self, form):
        adapter = get_adapter()
        if not adapter.consume_code_mail(self.request, self._process.email):
            adapter.add_message(self.request, messages.ERROR, message=adapter.error_messages["rate_limited"])
            return HttpResponseRedirect(self.passthrough_next_url(reverse("account_email_verification_sent")))
        return super()._resend_form_valid(form)


class ReauthenticateView(LockoutMixin, SensitivePageMixin, allauth_views.ReauthenticateView):
    """The password again before a payment; returns to ``next`` (an address inside the portal)."""

    def get(self, request, *args, **kwargs):
        next_url = self.get_next_url()
        # Straight back only when both clocks call the password recent: the portal's (signing in counts: payments)
        # and allauth's (only the password typed again counts: a change of second factor). Were allauth's left
        # out, its pages would send the browser here, here back to them, and round again.
        if next_url and is_recently_authenticated(request) and did_recently_reauthenticate(request):
            return HttpResponseRedirect(next_url)
        return super().get(request, *args, **kwargs)

    def get_default_success_url(self):
        return reverse("account")

    def form_valid(self, form):
        session_mark_reauthenticated(self.request)
        return super().form_valid(form)


class PasswordChangeView(LockoutMixin, SensitivePageMixin, allauth_views.PasswordChangeView):
    def get_default_success_url(self):
        return reverse("account")

    def form_valid(self, form):
        response = super().form_valid(form)
        session_mark_reauthenticated(self.request)
        return response


@sensitive_page
@require_http_methods(["GET", "POST"])
def account(request):
    """ "My account", with the mail settings' form (the language of the portal's mails, payment mails on/off)."""
    chosen = mail_settings(request.user.pk)
    form = MailSettingsForm(
        request.POST or None, initial={"language": chosen.language, "payment_mails": chosen.payment_mails}
    )
    if request.method == "POST" and form.is_valid():
        mail_settings_save(
            user=request.user,
            language=form.cleaned_data["language"],
            payment_mails=form.cleaned_data["payment_mails"],
        )
        messages.success(request, _("Your e-mail settings are saved."))
        return HttpResponseRedirect(reverse("account"))
    return render(request, "users/account.html", {"account_user": request.user, "mail_form": form})


@require_POST
def set_language(request):
    """The header's language form (Django's ``set_language``): a signed-in user's choice is also the language of
    the portal's mails to them."""
    response = i18n_views.set_language(request)
    language = request.POST.get("language", "")
    if request.user.is_authenticated and check_for_language(language):
        mail_language_remember(user=request.user, language=language)
    return response


@require_POST
def keep_alive(request):
    """ "Stay signed in" of the warning before the idle sign-out: the session counts as active now. The page's
    script asks for JSON; without script the form comes back to the page it was on. A session already idle-expired
    is not brought back: the user is signed out (401, or the sign-in page)."""
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    if not request.user.is_authenticated or session_is_idle_expired(request):
        if request.user.is_authenticated:
            logout(request)
        if wants_json:
            return JsonResponse({"signedIn": False}, status=401)
        return redirect_to_login(_safe_next(request), login_url=reverse("login"))
    session_keep_alive(request)
    if wants_json:
        return JsonResponse({"signedIn": True, "idleSeconds": idle_warning_seconds()})
    return HttpResponseRedirect(_safe_next(request))


def _safe_next(request) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=False):
        return target
    return reverse("home")


@never_cache
@require_http_methods(["GET", "POST"])
def staff_invitation(request, token: str):
    """The link of a staff user's invitation to enrol a second factor. It asks them to sign in first (``next``
    brings them back); GET shows a button (a mail scanner that fetches the link uses nothing up), POST uses the
    invitation up and lets this session enrol. A used, expired, revoked or another user's link: one answer."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), login_url=reverse("login"))
    if request.method == "POST":
        try:
            staff_invitation_accept(user=request.user, token=token)
        except InvitationInvalid:
            return render(request, "users/staff_invitation_invalid.html", status=404)
        session_grant_enrolment(request)
        return HttpResponseRedirect(reverse("mfa_index"))
    if staff_invitation_usable(user=request.user, token=token) is None:
        return render(request, "users/staff_invitation_invalid.html", status=404)
    return render(request, "users/staff_invitation.html", {"has_second_factor": has_second_factor(request.user)})


@never_cache
def second_factor_needed(request):
    """Where a staff user without a second factor is sent: how to get one (an administrator's invitation)."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), login_url=reverse("login"))
    if not needs_second_factor(request.user) or has_second_factor(request.user):
        return HttpResponseRedirect(reverse("home"))
    return render(request, "users/second_factor_needed.html")
