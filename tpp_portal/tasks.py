"""Operational tasks of the portal itself (the features' tasks live in their apps)."""

from celery import shared_task
from django.core.cache import cache
from django.utils import timezone


@shared_task(name="tpp_portal.ping", ignore_result=True)
def ping(token: str) -> None:
    """Writes ``token`` to the cache: proves a worker consumes from the broker (smoke test, operators)."""
    cache.set(f"ping:{token}", timezone.now().isoformat(), timeout=300)
