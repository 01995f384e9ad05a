"""Readiness checks behind /healthz: the database and the Celery broker."""

from __future__ import annotations

from django.db import connection

from tpp_portal.celery import app as celery_app


def check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "not ready"; the text goes into the health report
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def check_broker(timeout: float = 3.0) -> str | None:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
    except Exception as exc:  # kombu raises transport-specific errors
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None
