"""The payments' gauges, read at each metrics scrape: a state source of core.metrics, registered in
PaymentsConfig.ready() (docs/operations.md, Metrics)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from core.metrics import minutes
from payments.models import Payment

#: Payments whose status check is this late (the dispatcher runs every minute) count as overdue.
POLL_OVERDUE_AFTER = timedelta(minutes=5)


def status_gauges() -> Iterator[GaugeMetricFamily]:
    now = timezone.now()
    late = now - POLL_OVERDUE_AFTER
    figures = Payment.objects.order_by().aggregate(
        poll=Count("id", filter=Q(next_poll_at__lt=late)),
        reconcile=Count("id", filter=Q(reconcile_at__lt=late)),
    )
    overdue = GaugeMetricFamily(
        "tpp_payments_status_overdue",
        f"Payments whose status check is more than {minutes(POLL_OVERDUE_AFTER)} minutes late "
        "(check: a status poll; reconcile: finding out a lost initiation answer)",
        labels=["check"],
    )
    overdue.add_metric(["poll"], figures["poll"])
    overdue.add_metric(["reconcile"], figures["reconcile"])
    yield overdue
