"""Background work of payments. Tasks stay thin: they call a service and decide about retrying."""

from __future__ import annotations

import logging
import random

from celery import shared_task

from payments.rates import RateSourceMalformed, RateSourceUnavailable
from payments.services import exchange_rates_refresh

logger = logging.getLogger(__name__)

RATE_REFRESH_MAX_RETRIES = 3
RATE_REFRESH_BACKOFF_SECONDS = 60  # 1, 2, 4 minutes (plus jitter): far below the broker's visibility timeout


def _backoff(retries: int) -> int:
    base = RATE_REFRESH_BACKOFF_SECONDS * 2**retries
    return base + random.randint(0, base // 2)  # noqa: S311 - jitter, not cryptography


@shared_task(
    bind=True, name="payments.refresh_exchange_rates", ignore_result=True, max_retries=RATE_REFRESH_MAX_RETRIES
)
def refresh_exchange_rates(self) -> dict | None:
    """Fetch Norges Bank's daily rates and store them (beat runs it each business day).

    When Norges Bank cannot be reached it retries a bounded number of times, then logs and ends normally:
    the stored rates stay as they are, and a missing day is filled in by the next run (the fetch asks for
    the last few business days). A malformed answer is logged and not retried.
    """
    try:
        summary = exchange_rates_refresh()
    except RateSourceUnavailable as exc:
        if self.request.retries < RATE_REFRESH_MAX_RETRIES:
            logger.warning(
                "exchange rates: Norges Bank unavailable (%s); retry %d of %d",
                exc,
                self.request.retries + 1,
                RATE_REFRESH_MAX_RETRIES,
            )
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc
        logger.error(
            "exchange rates: Norges Bank unavailable after %d retries (%s); keeping the stored rates",
            RATE_REFRESH_MAX_RETRIES,
            exc,
        )
        return None
    except RateSourceMalformed as exc:
        logger.error("exchange rates: Norges Bank's answer was not understood (%s); keeping the stored rates", exc)
        return None
    return {"created": summary.created, "updated": summary.updated, "unchanged": summary.unchanged}
