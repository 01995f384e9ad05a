"""The accounts' gauges, read at each metrics scrape: a state source of core.metrics, registered in
AccountsConfig.ready() (docs/operations.md, Metrics)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from django.db.models import Count, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from accounts.models import UNATTENDED_CALLS_PER_DAY, UNATTENDED_WINDOW, BankAccount, RefreshCall, RefreshKind
from connections.models import ConnectionAccess, ConnectionState
from core.metrics import minutes

#: Accounts whose planned refresh is this late (the planner runs every 5 minutes) count as overdue.
REFRESH_OVERDUE_AFTER = timedelta(minutes=15)


def refresh_gauges() -> Iterator[GaugeMetricFamily]:
    now = timezone.now()
    refreshable = BankAccount.objects.filter(
        consented=True, connection__state=ConnectionState.ACTIVE, connection__access=ConnectionAccess.ACCOUNTS
    )
    # The bank counts per bank account: portal accounts of two connections on one bank account share it.
    bank_accounts = refreshable.order_by().values("kind", "resource_id").distinct().count()
    window = RefreshCall.objects.filter(reserved_at__gt=now - UNATTENDED_WINDOW).order_by()
    used = {row["kind"]: row["n"] for row in window.values("kind").annotate(n=Count("id"))}
    exhausted: dict[str, int] = {}
    for kind in (
        window.values("resource_key", "kind")
        .annotate(n=Count("id"))
        .filter(n__gte=UNATTENDED_CALLS_PER_DAY)
        .values_list("kind", flat=True)
    ):
        exhausted[kind] = exhausted.get(kind, 0) + 1
    left = GaugeMetricFamily(
        "tpp_unattended_calls_left",
        "Unattended bank calls still allowed in the rolling 24 hours, summed over the refreshable bank accounts",
        labels=["kind"],
    )
    spent = GaugeMetricFamily(
        "tpp_unattended_budget_exhausted_accounts",
        "Bank accounts that have used all their unattended calls of the rolling 24 hours",
        labels=["kind"],
    )
    for kind in RefreshKind.values:
        left.add_metric([kind], max(0, UNATTENDED_CALLS_PER_DAY * bank_accounts - used.get(kind, 0)))
        spent.add_metric([kind], exhausted.get(kind, 0))
    yield left
    yield spent
    yield GaugeMetricFamily(
        "tpp_refreshable_bank_accounts", "Bank accounts refreshed in the background", value=bank_accounts
    )
    overdue = (
        refreshable.filter(next_refresh_at__lt=now - REFRESH_OVERDUE_AFTER)
        .filter(
            Q(connection__consent_valid_until__isnull=True) | Q(connection__consent_valid_until__gt=now),
            Q(refresh_blocked_until__isnull=True) | Q(refresh_blocked_until__lte=now),
        )
        .count()
    )
    yield GaugeMetricFamily(
        "tpp_accounts_refresh_overdue",
        f"Accounts whose planned background refresh is more than {minutes(REFRESH_OVERDUE_AFTER)} minutes late",
        value=overdue,
    )
