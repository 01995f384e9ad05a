"""Writes of the portal's own tables: pruning the audit log of bank calls."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from core.models import BankCall

logger = logging.getLogger(__name__)


def bank_calls_prune(
    *, now: datetime | None = None, days: int | None = None, batch_size: int | None = None
) -> int:
    """Delete the BankCall rows started more than ``days`` (BANK_CALL_RETENTION_DAYS) ago; returns how many.

    Deletes by primary key in batches of ``batch_size`` (BANK_CALL_PRUNE_BATCH), each its own short statement,
    so a large backlog never holds one long transaction or lock; rows written meanwhile are never touched.
    """
    days = settings.BANK_CALL_RETENTION_DAYS if days is None else days
    batch_size = settings.BANK_CALL_PRUNE_BATCH if batch_size is None else batch_size
    if days < 1 or batch_size < 1:
        raise ValueError("the retention and the batch size must be at least 1")
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = BankCall.objects.filter(started_at__lt=cutoff).order_by("started_at", "id")
    deleted = 0
    while True:
        ids = list(old.values_list("id", flat=True)[:batch_size])
        if not ids:
            break
        count, _ = BankCall.objects.filter(id__in=ids).delete()
        deleted += count
        if len(ids) < batch_size:
            break
    logger.info("bank calls pruned", extra={"deleted": deleted, "older_than_days": days})
    return deleted
