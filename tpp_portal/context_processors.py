from django.conf import settings


def portal(request):
    return {"BANK_IS_SANDBOX": settings.BANK_IS_SANDBOX, "DJANGO_ENV": settings.DJANGO_ENV}
