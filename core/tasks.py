"""Operational tasks of the portal itself (the features' tasks live in their apps)."""

import logging

from celery import shared_task
from django.core.cache import cache
from django.utils import timezone

from core.certificates import certificates_check
from core.services import bank_calls_prune

logger = logging.getLogger(__name__)


@shared_task(name="tpp_portal.ping", ignore_result=True)
def ping(token: str) -> None:
    """Writes ``token`` to the cache: proves a worker consumes from the broker (smoke test, operators)."""
    # The token is logged under a secret name on purpose: the smoke test checks that the worker redacts it.
    logger.info("ping received token=%s", token)
    cache.set(f"ping:{token}", timezone.now().isoformat(), timeout=300)


@shared_task(name="tpp_portal.prune_bank_calls", ignore_result=True)
def prune_bank_calls() -> int:
    """Nightly (beat): the audit log keeps BANK_CALL_RETENTION_DAYS days of bank calls."""
    return bank_calls_prune()


@shared_task(name="tpp_portal.check_certificates", ignore_result=True)
def check_certificates() -> int:
    """Daily (beat) and when a worker starts: the bank's TLS certificate read by a handshake and recorded, every
    certificate of the bank connection logged when it is within CERTIFICATE_WARNING_DAYS or expired. Returns how
    many were checked."""
    return len(certificates_check())
