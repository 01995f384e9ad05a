"""Middleware of the sandbox bank."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class LatencyMiddleware:
    """BANK_SIM_LATENCY_MS: every answer (the API and the SCA screens, not /healthz) waits that long first."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        delay = settings.BANK_SIM_LATENCY_MS
        if delay and request.path != "/healthz":
            time.sleep(delay / 1000)
        return response
