from django.db import connection
from django.http import JsonResponse


def healthz(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any driver error means "not ready"
        return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok"})
