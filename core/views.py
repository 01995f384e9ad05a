from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core import health


@require_GET
@never_cache
def healthz(request):
    """200 when the database and the broker answer, else 503 naming (only) what failed; details are logged."""
    checks = {"database": health.check_database(), "broker": health.check_broker()}
    failing = any(checks.values())
    body = {
        "status": "unavailable" if failing else "ok",
        "checks": {name: "unavailable" if error else "ok" for name, error in checks.items()},
    }
    return JsonResponse(body, status=503 if failing else 200)
