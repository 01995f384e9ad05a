"""Session hardening for pages that show account data or start payments, and the ownership helper.

Three rules live here, so that every later page applies them the same way:

- **Idle timeout on sensitive pages.** ``SessionActivityMiddleware`` stamps the time of every request of a
  signed-in user in the session. When a request arrives more than ``SENSITIVE_IDLE_TIMEOUT`` seconds after the
  previous one, the session is marked idle-expired, and the mark stays until the next sign-in: a page wrapped
  in :func:`sensitive_page` (or :class:`SensitivePageMixin`) then signs the user out and sends them to sign in,
  ``next`` kept. Other pages keep the normal session lifetime, and visiting one of them does not make the
  session fresh again for the sensitive pages.
- **Recent authentication before a payment.** :func:`require_recent_authentication` asks for the password again
  unless the user typed it within ``REAUTH_MAX_AGE`` seconds (signing in counts, and so does an SCA completed at
  the bank: :func:`session_authenticated_at_bank`); the payments code can also
  call :func:`ensure_recent_authentication` where a decorator does not fit.
- **The admin is a sensitive page as a whole.** Every request under the admin's address (``admin:index``) of a
  signed-in user whose session is idle-expired signs them out and sends them to the admin's sign-in page, so
  staff sessions get the same idle timeout as customers' account pages, whatever the session lifetime.
- **Ownership.** :func:`get_owned_or_404` fetches an object only when it belongs to the user; anyone else's
  object is a 404, so ids cannot be probed.

Times are timezone-aware UTC, stored in the session as ISO 8601 text. :func:`now` is the one clock of this
module (tests move it). Several web hosts never share one clock exactly, so a stamp up to ``CLOCK_SKEW`` in the
future is taken as "just now", not as unreadable.

The activity stamp is rewritten only when it is more than ``ACTIVITY_STAMP_INTERVAL`` old. A session is saved
whole by every request that modifies it, so a request that stamped activity on every call would write back the
session as it read it: a payment request running alongside the one that cleared the re-authentication
(:func:`session_forget_reauthentication`) would restore it. Unmodified sessions are not saved, which closes that
window for requests within the interval; the price is that the idle timeout may be reached up to that many
seconds early.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, resolve_url
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

LAST_ACTIVITY_KEY = "accounts.last_activity_at"
IDLE_EXPIRED_KEY = "accounts.idle_expired"
REAUTHENTICATED_KEY = "accounts.reauthenticated_at"
# How far in the future a stamp may be (another web host's clock, an NTP step back) and still count as now.
CLOCK_SKEW = timedelta(seconds=5)
# The activity stamp is left as it is when younger than this (see the module docstring).
ACTIVITY_STAMP_INTERVAL = timedelta(seconds=10)

ModelT = TypeVar("ModelT", bound=models.Model)
View = Callable[..., HttpResponse]


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return timezone.now()


def _read_time(request: HttpRequest, key: str) -> datetime | None:
    """A timestamp this module wrote, or None when absent or unreadable (treated as "too old")."""
    value = request.session.get(key)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if timezone.is_aware(moment) else None


def _write_time(request: HttpRequest, key: str, moment: datetime) -> None:
    request.session[key] = moment.astimezone(UTC).isoformat()


def _elapsed_since(request: HttpRequest, key: str, max_age: timedelta) -> bool:
    """True when the timestamp under ``key`` is missing, more than CLOCK_SKEW in the future, or older than
    ``max_age``."""
    moment = _read_time(request, key)
    if moment is None:
        return True
    age = now() - moment
    return age < -CLOCK_SKEW or age > max_age


def idle_timeout() -> timedelta:
    return timedelta(seconds=settings.SENSITIVE_IDLE_TIMEOUT)


def reauthentication_max_age() -> timedelta:
    return timedelta(seconds=settings.REAUTH_MAX_AGE)


# --- session bookkeeping ----------------------------------------------------------------------------------


def session_signed_in(request: HttpRequest) -> None:
    """Start the clocks of a fresh sign-in: active now, password typed now, not idle-expired."""
    moment = now()
    _write_time(request, LAST_ACTIVITY_KEY, moment)
    _write_time(request, REAUTHENTICATED_KEY, moment)
    request.session.pop(IDLE_EXPIRED_KEY, None)


def session_record_activity(request: HttpRequest) -> None:
    """Note a request of a signed-in user; mark the session idle-expired when the previous one is too old."""
    if _elapsed_since(request, LAST_ACTIVITY_KEY, idle_timeout()):
        request.session[IDLE_EXPIRED_KEY] = True
    elif not _elapsed_since(request, LAST_ACTIVITY_KEY, ACTIVITY_STAMP_INTERVAL):
        return  # stamped moments ago: leave the session unmodified, so this request does not save it
    _write_time(request, LAST_ACTIVITY_KEY, now())


def session_keep_alive(request: HttpRequest) -> None:
    """The user asked to stay signed in (the warning before the idle sign-out): active as of now, whatever
    ``ACTIVITY_STAMP_INTERVAL`` would leave as it is."""
    _write_time(request, LAST_ACTIVITY_KEY, now())


def idle_warning_seconds() -> int:
    """Seconds after a page's load at which the session may be idle-expired at the earliest (the activity stamp
    may be up to ``ACTIVITY_STAMP_INTERVAL`` older than the page): what the page's warning counts down to."""
    return max(int((idle_timeout() - ACTIVITY_STAMP_INTERVAL).total_seconds()), 1)


def session_is_idle_expired(request: HttpRequest) -> bool:
    return bool(request.session.get(IDLE_EXPIRED_KEY)) or _read_time(request, LAST_ACTIVITY_KEY) is None


def session_mark_reauthenticated(request: HttpRequest) -> None:
    _write_time(request, REAUTHENTICATED_KEY, now())


def session_authenticated_at_bank(request: HttpRequest) -> None:
    """The user has just completed an SCA at the bank and come back with the identity the portal expected (the
    SCA callback): that counts as a re-authentication for ``REAUTH_MAX_AGE`` seconds, so the next payment does
    not ask for the password again. Recorded in allauth's log of this session's authentications too (method
    ``bank_sca``), without allauth's own "reauthenticated" mark: a change of second factor still needs the
    password."""
    from allauth.account.internal.flows.login import record_authentication

    record_authentication(request, request.user, "bank_sca")
    session_mark_reauthenticated(request)


def session_forget_reauthentication(request: HttpRequest) -> None:
    """Make the next payment ask for the password again (e.g. once a payment has been submitted)."""
    request.session.pop(REAUTHENTICATED_KEY, None)


def is_recently_authenticated(request: HttpRequest, *, max_age: int | None = None) -> bool:
    """True when the signed-in user typed their password within ``max_age`` seconds (default REAUTH_MAX_AGE)."""
    if not request.user.is_authenticated:
        return False
    limit = reauthentication_max_age() if max_age is None else timedelta(seconds=max_age)
    return not _elapsed_since(request, REAUTHENTICATED_KEY, limit)


#: Header of a page's automatic background request (not counted as the user's activity).
BACKGROUND_HEADER = "X-Background-Refresh"


class SessionActivityMiddleware:
    """Tracks the last request of a signed-in user (install right after AuthenticationMiddleware).

    Anonymous visitors are left alone, so no session is created for them.
    """

    def __init__(self, get_response: View) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not hasattr(request, "user"):
            raise ImproperlyConfigured(
                "users.security.SessionActivityMiddleware must come after AuthenticationMiddleware"
            )
        request.sensitive_activity_tracked = True
        # A page's own background refresh (static/js/payment_live.js sends this header) is not the user's
        # activity: it must not keep an unattended session alive past the idle timeout.
        if request.user.is_authenticated:
            if request.headers.get(BACKGROUND_HEADER) != "1":
                session_record_activity(request)
            elif _elapsed_since(request, LAST_ACTIVITY_KEY, idle_timeout()):
                request.session[IDLE_EXPIRED_KEY] = True  # noticed, but the moment of activity is left as it was
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: View, view_args: Any, view_kwargs: Any):
        """The admin as a whole is a sensitive page (here, so that the later middleware has run: messages)."""
        if (
            request.user.is_authenticated
            and _is_admin_path(request.path_info)
            and session_is_idle_expired(request)
        ):
            return _idle_sign_out(request, login_url=reverse("admin:login"))
        return None


def _is_admin_path(path: str) -> bool:
    """True for the admin's pages (the prefix is wherever the URLconf mounts ``admin.site``)."""
    try:
        prefix = reverse("admin:index")
    except NoReverseMatch:  # a URLconf without the admin
        return False
    return path.startswith(prefix)


# --- sensitive pages --------------------------------------------------------------------------------------


def _idle_sign_out(request: HttpRequest, *, login_url: str | None = None) -> HttpResponse:
    path = request.get_full_path()
    logout(request)
    minutes = max(1, settings.SENSITIVE_IDLE_TIMEOUT // 60)
    messages.warning(
        request,
        ngettext(
            "For your security you were signed out after %(minutes)d minute without activity. "
            "Please sign in again.",
            "For your security you were signed out after %(minutes)d minutes without activity. "
            "Please sign in again.",
            minutes,
        )
        % {"minutes": minutes},
    )
    response = redirect_to_login(path, login_url)
    add_never_cache_headers(response)
    return response


def sensitive_page(view: View) -> View:
    """For pages that show account data or start payments: sign-in required, idle timeout, never cached."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not getattr(request, "sensitive_activity_tracked", False):
            raise ImproperlyConfigured("sensitive_page needs users.security.SessionActivityMiddleware")
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if session_is_idle_expired(request):
            return _idle_sign_out(request)
        response = view(request, *args, **kwargs)
        add_never_cache_headers(response)
        return response

    return wrapper


class SensitivePageMixin:
    """Class-based-view form of :func:`sensitive_page`; put it first among the bases."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return sensitive_page(super().dispatch)(request, *args, **kwargs)


# --- re-authentication before a payment -------------------------------------------------------------------


def reauthentication_redirect(request: HttpRequest, next_url: str | None = None) -> HttpResponse:
    """Send the user to the password page, coming back to ``next_url`` (default: this page)."""
    target = resolve_url("reauthenticate")
    return redirect(f"{target}?{urlencode({'next': next_url or request.get_full_path()})}")


def ensure_recent_authentication(
    request: HttpRequest, *, max_age: int | None = None, next_url: str | None = None
) -> HttpResponse | None:
    """None when the password was typed within ``max_age`` seconds, else the redirect to ask for it.

    For the payments code where a decorator does not fit::

        if (response := ensure_recent_authentication(request, next_url=confirm_url)) is not None:
            return response
    """
    if is_recently_authenticated(request, max_age=max_age):
        return None
    return reauthentication_redirect(request, next_url)


def require_recent_authentication(view: View | None = None, *, max_age: int | None = None):
    """Decorator: a sensitive page that also needs the password typed within ``max_age`` seconds.

    Use it on the page that confirms a payment *and* on the view that submits it. A submission that arrives
    too late is sent to the password page and from there back to the same address (as a GET), so the payment
    draft must already be stored server-side. ``@require_recent_authentication`` and
    ``@require_recent_authentication(max_age=120)`` both work.
    """

    def decorate(inner: View) -> View:
        @functools.wraps(inner)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if (response := ensure_recent_authentication(request, max_age=max_age)) is not None:
                return response
            return inner(request, *args, **kwargs)

        return sensitive_page(wrapper)

    return decorate(view) if view is not None else decorate


# --- ownership --------------------------------------------------------------------------------------------


def get_owned_or_404(
    queryset_or_model: type[ModelT] | models.QuerySet[ModelT] | models.Manager[ModelT],
    *,
    user: Any,
    owner_field: str = "user",
    **lookup: Any,
) -> ModelT:
    """The object matching ``lookup`` that belongs to ``user``, else Http404.

    Another user's object, a missing one and a malformed id look the same (404), so ids cannot be probed;
    staff get no exception here (they use the admin). ``owner_field`` names the path to the owning user
    (e.g. ``"connection__user"``).
    """
    if owner_field in lookup:
        raise TypeError(f"get_owned_or_404: {owner_field!r} is set by the user argument, not a lookup")
    if user is None or not user.is_authenticated:
        raise Http404("not signed in")
    if isinstance(queryset_or_model, models.Manager):
        queryset = queryset_or_model.all()
    elif isinstance(queryset_or_model, models.QuerySet):
        queryset = queryset_or_model
    else:
        queryset = queryset_or_model._default_manager.all()
    try:
        return get_object_or_404(queryset, **{owner_field: user}, **lookup)
    except (ValueError, ValidationError) as exc:  # a malformed id is simply not found
        raise Http404("malformed lookup") from exc


# --- the second factor of staff ---------------------------------------------------------------------------

#: Set in the session when the user proved a second factor: at sign-in (allauth.mfa's code or key) or by
#: enrolling one just now.
SECOND_FACTOR_KEY = "users.second_factor_at"
#: Set in the session when its staff user opened their invitation link (users.services): who and when.
ENROLMENT_GRANT_KEY = "users.second_factor_invitation"
#: What a staff user who opened an invitation link may open before they have a second factor: enrolling one
#: (and allauth's password-again page, which enrolling may ask for).
ENROLMENT_VIEWS = frozenset(
    {
        "mfa_index",
        "mfa_activate_totp",
        "mfa_add_webauthn",
        "mfa_view_recovery_codes",
        "mfa_generate_recovery_codes",
        "mfa_download_recovery_codes",
        "account_reauthenticate",
    }
)
#: What a staff user without a second factor may open at any time: the invitation link, the page saying they
#: need one, signing out, the language.
WITHOUT_FACTOR_VIEWS = frozenset(
    {"staff_invitation", "second_factor_needed", "account_logout", "logout", "set_language"}
)


def has_second_factor(user: Any) -> bool:
    """True when ``user`` has an authenticator app (TOTP) or a security key (WebAuthn); recovery codes alone are
    no factor."""
    from allauth.mfa.models import Authenticator

    return Authenticator.objects.filter(
        user=user, type__in=[Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN]
    ).exists()


def session_mark_second_factor(request: HttpRequest) -> None:
    _write_time(request, SECOND_FACTOR_KEY, now())


def session_grant_enrolment(request: HttpRequest) -> None:
    """The signed-in user has just used their invitation: this session may enrol a second factor for
    STAFF_ENROLMENT_WINDOW."""
    request.session[ENROLMENT_GRANT_KEY] = {"user": str(request.user.pk), "at": now().astimezone(UTC).isoformat()}


def session_may_enrol(request: HttpRequest) -> bool:
    """True while this session's invitation (opened by the signed-in user) is younger than
    STAFF_ENROLMENT_WINDOW."""
    grant = request.session.get(ENROLMENT_GRANT_KEY)
    if not isinstance(grant, dict) or grant.get("user") != str(request.user.pk):
        return False
    try:
        moment = datetime.fromisoformat(grant.get("at", ""))
    except (TypeError, ValueError):
        return False
    if not timezone.is_aware(moment):
        return False
    age = now() - moment
    return -CLOCK_SKEW <= age <= settings.STAFF_ENROLMENT_WINDOW


def session_used_second_factor(request: HttpRequest) -> bool:
    """True when this session proved a second factor: allauth.mfa's record of the sign-in, or an enrolment."""
    from allauth.account.authentication import get_authentication_records

    if _read_time(request, SECOND_FACTOR_KEY) is not None:
        return True
    return any(record.get("method") == "mfa" for record in get_authentication_records(request, request.user))


def needs_second_factor(user: Any) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


class StaffSecondFactorMiddleware:
    """Staff (``is_staff`` or superuser) use the portal only with a second factor (install after
    MessageMiddleware).

    - Without an authenticator app or a security key, every page sends them to the page saying so
      (``second_factor_needed``): a password alone never enrols one. The link of a superuser's invitation,
      mailed to their confirmed address and opened while signed in, lets this session enrol one (allauth.mfa's
      pages) for a while; recovery codes are made with the first factor.
    - With one, the session must have been signed in with it (allauth.mfa asks for it at sign-in) or have
      enrolled it: a session that skipped it (signed in elsewhere before enrolling, or by any path that did not
      ask) is signed out and sent to sign in again.
    """

    def __init__(self, get_response: View) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if getattr(request, "second_factor_enrolling", False) and has_second_factor(request.user):
            session_mark_second_factor(request)  # proved the new factor to enrol it (allauth checks the code)
            request.session.pop(ENROLMENT_GRANT_KEY, None)  # the invitation has done its work
        return response

    def process_view(self, request: HttpRequest, view_func: View, view_args: Any, view_kwargs: Any):
        user = request.user
        if not needs_second_factor(user):
            return None
        match = getattr(request, "resolver_match", None)
        name = match.view_name if match is not None else ""
        if not has_second_factor(user):
            if name in WITHOUT_FACTOR_VIEWS:
                return None
            if not session_may_enrol(request):
                response = redirect("second_factor_needed")
                add_never_cache_headers(response)
                return response
            if name in ENROLMENT_VIEWS:
                request.second_factor_enrolling = True
                return None
            messages.warning(
                request,
                _(
                    "Staff accounts need a second factor. Set up an authenticator app or a security key before "
                    "you continue."
                ),
            )
            response = redirect("mfa_index")
            add_never_cache_headers(response)
            return response
        if session_used_second_factor(request) or name in {"account_logout", "logout", "set_language"}:
            return None
        path = request.get_full_path()
        logout(request)
        messages.warning(request, _("Please sign in again with your second factor."))
        response = redirect_to_login(path)
        add_never_cache_headers(response)
        return response
