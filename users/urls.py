"""The addresses of signing up and in: django-allauth's own URL patterns (account and mfa), under ``auth/``.

The pages that existed before allauth keep their addresses (``/auth/sign-in/``, ``/auth/confirm-password/`` ...)
and, as extra names, the names the portal's templates and tests use (``login``, ``reauthenticate`` ...). A few
views are the portal's subclasses (users.views).
"""

from __future__ import annotations

from allauth.account import urls as account_urls
from django.urls import URLPattern, include, path, re_path
from django.urls.resolvers import RoutePattern

from users import views

# allauth's name -> the portal's address (under auth/) and, where the portal had one, its older name.
ADDRESSES = {
    "account_login": ("sign-in/", "login"),
    "account_logout": ("sign-out/", "logout"),
    "account_signup": ("sign-up/", "signup"),
    "account_email_verification_sent": ("sign-up/confirm/", None),
    "account_reauthenticate": ("confirm-password/", "reauthenticate"),
    "account_change_password": ("password/change/", "password_change"),
    "account_reset_password": ("password/reset/", "password_reset"),
    "account_reset_password_done": ("password/reset/sent/", None),
    "account_reset_password_from_key_done": ("password/reset/done/", None),
}
VIEWS = {
    "account_login": views.SignInView.as_view(),
    "account_logout": views.SignOutView.as_view(),
    "account_signup": views.SignUpView.as_view(),
    "account_email_verification_sent": views.ConfirmEmailCodeView.as_view(),
    "account_reauthenticate": views.ReauthenticateView.as_view(),
    "account_change_password": views.PasswordChangeView.as_view(),
}


def _account_patterns() -> list[URLPattern]:
    patterns = []
    for pattern in account_urls.urlpatterns:
        view = VIEWS.get(pattern.name, pattern.callback)
        if pattern.name in ADDRESSES:
            route, older = ADDRESSES[pattern.name]
            patterns.append(path(route, view, name=pattern.name))
            if older:
                patterns.append(path(route, view, name=older))
        elif isinstance(pattern.pattern, RoutePattern):
            patterns.append(path(str(pattern.pattern), view, name=pattern.name))
        else:
            patterns.append(re_path(pattern.pattern.regex.pattern, view, name=pattern.name))
    return patterns


urlpatterns = [
    path("auth/", include(_account_patterns())),
    path("auth/2fa/invitation/", views.second_factor_needed, name="second_factor_needed"),
    path("auth/2fa/invitation/<str:token>/", views.staff_invitation, name="staff_invitation"),
    path("auth/2fa/", include("allauth.mfa.urls")),
    path("account/", views.account, name="account"),
    path("auth/stay-signed-in/", views.keep_alive, name="session-keep-alive"),
    # Before Django's own (tpp_portal/urls.py includes users first): the same address, and the choice is also
    # the language of the portal's mails to a signed-in user.
    path("i18n/setlang/", views.set_language, name="set_language"),
]
