from django.conf import settings

from users.security import idle_warning_seconds


def portal(request):
    return {
        "BANK_IS_SANDBOX": settings.BANK_IS_SANDBOX,
        "DJANGO_ENV": settings.DJANGO_ENV,
        "IDLE_WARNING_SECONDS": idle_warning_seconds(),  # the idle sign-out's warning (static/js/idle_warning.js)
    }
