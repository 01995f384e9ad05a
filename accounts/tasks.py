"""Background work of bank accounts: the unattended refresh. Tasks stay thin: they call a service."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task

from accounts.ledger import prune
from accounts.planner import refresh_plan
from accounts.refresh import refresh_due
from core.certificates import CertificateExpiredError, refuse_expired

logger = logging.getLogger(__name__)


@shared_task(name="accounts.plan_refreshes", ignore_result=True)
def plan_refreshes() -> int:
    """Enqueue the unattended refreshes that are due (beat, every 5 minutes). Two planners at once claim
    disjoint accounts; the ledger (accounts.ledger.reserve) decides in any case. Nothing is planned while a
    certificate of the bank connection has expired: each refresh would spend its reserved call on nothing."""
    try:
        refuse_expired()
    except CertificateExpiredError as exc:
        logger.error("no background refresh planned: %s", exc)
        return 0
    return refresh_plan()


@shared_task(
    name="accounts.refresh_accounts",
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
)
def refresh_accounts(account_ids: list[int], planned_at: str) -> int:
    """One planned unattended refresh of a few accounts (ids only in the message). Safe to deliver twice: the
    second delivery finds each planned refresh done in the ledger and calls nothing. Returns how many were
    refreshed."""
    outcomes = refresh_due(account_ids=account_ids, planned_at=datetime.fromisoformat(planned_at))
    return sum(outcome.ok for outcome in outcomes.values())


@shared_task(name="accounts.prune_refresh_calls", ignore_result=True)
def prune_refresh_calls() -> int:
    """Hourly (beat): the ledger of unattended calls keeps its 24-hour window only (accounts.ledger.prune).
    Returns how many rows were deleted."""
    return prune()
