from django.conf import settings


def portal(request):
    """What every page shows of the deployment: the sandbox banner and the environment's name."""
    return {"BANK_IS_SANDBOX": settings.BANK_IS_SANDBOX, "DJANGO_ENV": settings.DJANGO_ENV}
