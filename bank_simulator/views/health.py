from django.db import connection
from django.http import JsonResponse


def healthz(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any driver error means "not ready"
        return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok"})


def not_found(request, exception=None):
    return JsonResponse(
        {"tppMessages": [{"category": "ERROR", "code": "NOT_FOUND", "text": "No such resource or operation."}]},
        status=404,
    )


def server_error(request):
    return JsonResponse(
        {
            "tppMessages": [
                {"category": "ERROR", "code": "SYSTEM_ERROR", "text": "The bank could not process the request."}
            ]
        },
        status=500,
    )
