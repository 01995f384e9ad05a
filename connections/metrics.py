"""The connections' gauges, read at each metrics scrape: a state source of core.metrics, registered in
ConnectionsConfig.ready() (docs/operations.md, Metrics)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from connections.models import BankConnection, ConnectionAccess, ConnectionState

#: Consents expiring within these days are counted (the reminders go out at 14, 7 and 1).
CONSENT_EXPIRY_DAYS = (30, 14, 7)


def consent_gauges() -> Iterator[GaugeMetricFamily]:
    now = timezone.now()
    figures = (
        BankConnection.objects.filter(state=ConnectionState.ACTIVE, access=ConnectionAccess.ACCOUNTS)
        .order_by()
        .aggregate(
            **{
                f"d{days}": Count(
                    "id",
                    filter=Q(consent_valid_until__gt=now, consent_valid_until__lte=now + timedelta(days=days)),
                )
                for days in CONSENT_EXPIRY_DAYS
            },
            expired=Count("id", filter=Q(consent_valid_until__lte=now)),
        )
    )
    expiring = GaugeMetricFamily(
        "tpp_consents_expiring",
        "Active connections whose consent expires within the given number of days",
        labels=["within_days"],
    )
    for days in CONSENT_EXPIRY_DAYS:
        expiring.add_metric([str(days)], figures[f"d{days}"])
    yield expiring
    yield GaugeMetricFamily(
        "tpp_consents_expired_active",
        "Connections still active although their consent has expired (the hourly expiry has not run yet)",
        value=figures["expired"],
    )
