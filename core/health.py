"""Readiness checks behind /healthz: the database and the Celery broker.

Each check returns None when healthy, else a short error description that is logged, never sent: /healthz
answers before host validation, to anyone, so it says only which check failed.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.db import connection

logger = logging.getLogger(__name__)


def _describe(check: str, exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    logger.warning("health check %s failed: %s", check, text)
    return text


def check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "not ready"
        return _describe("database", exc)
    return None


def check_broker(timeout: float = 3.0) -> str | None:
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
    except Exception as exc:  # kombu raises transport-specific errors
        return _describe("broker", exc)
    return None
