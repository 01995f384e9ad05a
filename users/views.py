"""Signing up, in and out, the password pages, "My account" and the password-again page before payments.

Django's own auth views do the work; these classes only choose forms, templates and messages.
"""

from __future__ import annotations

import math

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme, urlsafe_base64_decode
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters

from users import services
from users.forms import CountedPasswordChangeForm, ReauthenticateForm, SignInForm, SignUpForm
from users.security import (
    SensitivePageMixin,
    is_recently_authenticated,
    sensitive_page,
    session_mark_reauthenticated,
)

_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _safe_next(request, fallback: str) -> str:
    """The ``next`` address when it is a path inside the portal, else ``fallback``. Only a path ("/...") counts:
    redirect() would take any other text for a URL name and fail on it."""
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate.startswith("/") and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return resolve_url(fallback)


class SignInView(auth_views.LoginView):
    form_class = SignInForm
    template_name = "registration/login.html"
    redirect_authenticated_user = True


class SignOutView(auth_views.LogoutView):
    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        messages.info(request, _("You have signed out."))
        return response


@sensitive_post_parameters("password1", "password2")
@csrf_protect
@never_cache
def sign_up(request):
    """Always the same answer, "check your e-mail", whether or not the address has an account (see the service)."""
    if request.user.is_authenticated:
        return redirect(settings.LOGIN_REDIRECT_URL)
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.user_sign_up(
            email=form.cleaned_data["email"],
            password=form.cleaned_data["password1"],
            next_url=_safe_next(request, "account"),
        )
        return redirect("signup_sent")
    return render(request, "registration/signup.html", {"form": form, "next": request.GET.get("next", "")})


def sign_up_sent(request):
    return render(request, "registration/signup_sent.html")


@csrf_protect
@never_cache
def sign_up_confirm(request, uidb64, token):
    """The link of the confirmation mail: a page with one button (a GET changes nothing, for mail scanners)."""
    user = _user_from_uidb64(uidb64)
    valid = user is not None and services.sign_up_token_generator.check_token(user, token)
    if valid and request.method == "POST":
        services.user_activate(user=user)
        login(request, user, backend=_MODEL_BACKEND)
        messages.success(request, _("Welcome! Your account is ready."))
        return redirect(_safe_next(request, "account"))
    return render(
        request,
        "registration/signup_confirm.html",
        {"validlink": valid, "next": request.GET.get("next", "")},
        status=200 if valid else 400,
    )


def _user_from_uidb64(uidb64: str):
    User = get_user_model()
    try:
        return User.objects.get(pk=urlsafe_base64_decode(uidb64).decode())
    except (TypeError, ValueError, OverflowError, User.DoesNotExist, ValidationError):
        return None


@sensitive_page
def account(request):
    return render(request, "users/account.html", {"account_user": request.user})


class PasswordChangeView(SensitivePageMixin, auth_views.PasswordChangeView):
    form_class = CountedPasswordChangeForm  # a wrong old password counts as a failed sign-in (django-axes)
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("password_change_done")

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}

    def form_valid(self, form):
        response = super().form_valid(form)
        services.user_send_password_changed_notice(user=form.user)
        return response


class PasswordChangeDoneView(SensitivePageMixin, auth_views.PasswordChangeDoneView):
    template_name = "registration/password_change_done.html"


class PasswordResetView(auth_views.PasswordResetView):
    template_name = "registration/password_reset_form.html"
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"
    success_url = reverse_lazy("password_reset_done")

    @property
    def extra_email_context(self):
        # The link is built from the configured address, never from the request's Host header.
        return {"portal_base_url": settings.PORTAL_BASE_URL.rstrip("/")}


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "registration/password_reset_done.html"


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "registration/password_reset_confirm.html"
    success_url = reverse_lazy("password_reset_complete")

    def form_valid(self, form):
        response = super().form_valid(form)
        services.user_send_password_changed_notice(user=form.user)
        return response


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "registration/password_reset_complete.html"


@sensitive_post_parameters("password")
@csrf_protect
@sensitive_page
def reauthenticate(request):
    """The password again before a payment; records the time and returns to ``next``."""
    next_url = _safe_next(request, "account")
    if request.method == "GET" and "next" in request.GET and is_recently_authenticated(request):
        return redirect(next_url)
    form = ReauthenticateForm(request.POST or None, request=request)
    if request.method == "POST" and form.is_valid():
        session_mark_reauthenticated(request)
        return redirect(next_url)
    return render(request, "registration/reauthenticate.html", {"form": form, "next": next_url})


def lockout(request, original_response=None, credentials=None):
    """django-axes' answer to a locked-out sign-in (AXES_LOCKOUT_CALLABLE): a page saying why and how long."""
    cool_off = get_cool_off(request)
    minutes = math.ceil(cool_off.total_seconds() / 60) if cool_off else None
    return render(
        request,
        "registration/lockout.html",
        {"cooloff_minutes": minutes},
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
