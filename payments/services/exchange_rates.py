"""Writes about exchange rates: storing Norges Bank's daily rates, and a staff member's correction of a rate."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from payments import rates as rate_source
from payments.models import ExchangeRate, ExchangeRateSource

logger = logging.getLogger(__name__)


@dataclass
class RatesStored:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    # (currency, date) of rates staff edited: the fetcher leaves them as staff set them.
    kept_staff_edits: list[tuple[str, str]] = field(default_factory=list)


def exchange_rates_store(
    *,
    rates: Iterable[rate_source.FetchedRate],
    source: str = ExchangeRateSource.NORGES_BANK,
    fetched_at: datetime | None = None,
) -> RatesStored:
    """Upsert ``rates`` on (currency, date, source) in one transaction; never overwrite a staff-edited row."""
    fetched_at = fetched_at or timezone.now()
    summary = RatesStored()
    with transaction.atomic():
        for fetched in rates:
            row, created = ExchangeRate.objects.select_for_update().get_or_create(
                currency=fetched.currency,
                rate_date=fetched.rate_date,
                source=source,
                defaults={"rate": fetched.rate, "unit": fetched.unit, "fetched_at": fetched_at},
            )
            if created:
                summary.created += 1
            elif row.updated_by_id is not None:
                summary.kept_staff_edits.append((row.currency, row.rate_date.isoformat()))
            elif row.rate != fetched.rate or row.unit != fetched.unit:
                row.rate, row.unit, row.fetched_at = fetched.rate, fetched.unit, fetched_at
                row.save(update_fields=["rate", "unit", "fetched_at"])
                summary.updated += 1
            else:
                summary.unchanged += 1
    if summary.kept_staff_edits:
        logger.info("exchange rates edited by staff were kept: %s", summary.kept_staff_edits)
    return summary


def exchange_rates_refresh(*, base_url: str | None = None, timeout: float | None = None) -> RatesStored:
    """Fetch Norges Bank's latest rates and store them. The fetch runs before, not inside, the transaction.

    Raises payments.rates.RateSourceError when the source fails; the stored rates are then untouched.
    """
    fetched = rate_source.fetch_norges_bank_rates(base_url=base_url, timeout=timeout)
    summary = exchange_rates_store(rates=fetched, source=ExchangeRateSource.NORGES_BANK)
    logger.info(
        "exchange rates refreshed from Norges Bank: %d new, %d changed, %d unchanged",
        summary.created,
        summary.updated,
        summary.unchanged,
    )
    return summary


def exchange_rate_save_by_staff(*, exchange_rate: ExchangeRate, user) -> ExchangeRate:
    """Save a rate a staff member created or edited, recording who and when (the admin calls this)."""
    exchange_rate.updated_by = user
    exchange_rate.updated_at = timezone.now()
    if exchange_rate.pk is None and not exchange_rate.source:
        exchange_rate.source = ExchangeRateSource.MANUAL
    exchange_rate.full_clean()
    exchange_rate.save()
    logger.info(
        "exchange rate %s %s (%s) saved by staff user %s",
        exchange_rate.currency,
        exchange_rate.rate_date,
        exchange_rate.source,
        user.pk,
    )
    return exchange_rate
