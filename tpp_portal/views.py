from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from tpp_portal import health


@require_GET
@never_cache
def healthz(request):
    """200 when the database and the broker answer, else 503 naming what failed."""
    checks = {"database": health.check_database(), "broker": health.check_broker()}
    failing = {name: error for name, error in checks.items() if error}
    body = {
        "status": "ok" if not failing else "unavailable",
        "checks": {name: (checks[name] or "ok") for name in checks},
    }
    return JsonResponse(body, status=503 if failing else 200)


def home(request):
    return render(request, "home.html")
