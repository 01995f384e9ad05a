"""System checks: the session rules of users.security cannot be silently switched off by a settings slip."""

from django.conf import settings
from django.core.checks import Error, register

ACTIVITY_MIDDLEWARE = "users.security.SessionActivityMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"


@register()
def check_session_security(app_configs=None, **kwargs):
    errors = []
    middleware = list(settings.MIDDLEWARE)
    if ACTIVITY_MIDDLEWARE not in middleware:
        errors.append(
            Error(f"{ACTIVITY_MIDDLEWARE} is not in MIDDLEWARE; sensitive pages need it", id="users.E001")
        )
    elif AUTH_MIDDLEWARE not in middleware or middleware.index(ACTIVITY_MIDDLEWARE) < middleware.index(
        AUTH_MIDDLEWARE
    ):
        errors.append(Error(f"{ACTIVITY_MIDDLEWARE} must come after {AUTH_MIDDLEWARE}", id="users.E002"))
    return errors
