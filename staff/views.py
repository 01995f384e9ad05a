"""The staff dashboard of the bank integration: calls of the last 24 hours and payments waiting on the bank.

Staff only (the admin's sign-in), and only those who may read the audit log of bank calls. Its words are
translated like the customers' pages.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from staff import selectors

PERIOD = timedelta(hours=24)


def _chart(labels: list[str], series: dict[str, list], unit: str, titles: list[str] | None = None) -> dict:
    """The data of one chart as static/js/charts.js reads it (interfaces: labels, series, unit, and titles: the
    full text of each label, for the tooltips, when the labels are short)."""
    chart = {
        "labels": labels,
        "series": [{"name": name, "values": values} for name, values in series.items()],
        "unit": unit,
    }
    if titles is not None:
        chart["titles"] = titles
    return chart


def _segments(operation: str) -> tuple[str, list[str]]:
    method, _space, path = operation.partition(" ")
    parts = [part for part in path.split("/") if part and part != "v1" and not part.startswith("{")]
    return method, parts


def operation_labels(operations: list[str]) -> list[str]:
    """Short bar labels for "GET /v1/accounts/{account_id}/balances" and the like: every bar read "GET /v1/...",
    cut to the bar's width. The method and the last segments of the path (no "/v1", no ids), as few as tell the
    operations shown apart: "GET balances", or "GET accounts/balances" beside "GET card-accounts/balances"."""
    split = [_segments(operation) for operation in operations]

    def label(index: int, count: int) -> str:
        method, parts = split[index]
        return f"{method} {'/'.join(parts[-count:])}" if parts else operations[index]

    labels = []
    for index, (_method, parts) in enumerate(split):
        count = 1
        while count < len(parts) and any(
            label(index, count) == label(other, count) for other in range(len(split)) if other != index
        ):
            count += 1
        labels.append(label(index, count))
    return labels


@require_GET
@never_cache
@staff_member_required
def dashboard(request):
    if not request.user.has_perm("tpp_portal.view_bankcall"):
        raise PermissionDenied
    until = timezone.now()
    since = until - PERIOD
    operations, overall = selectors.bank_call_figures(since=since, until=until)
    hours = selectors.bank_calls_per_hour(since=since, until=until)
    waiting = selectors.payments_waiting()
    certificates = selectors.certificate_figures(now=until)
    names = [figures.operation for figures in operations]
    short = operation_labels(names)
    charts = {
        "calls": _chart(
            short,
            {
                _("calls"): [f.calls for f in operations],
                _("errors"): [f.errors for f in operations],
                "429": [f.too_many for f in operations],
            },
            _("calls"),
            names,
        ),
        "durations": _chart(
            short,
            {_("median"): [f.median_ms for f in operations], _("95th percentile"): [f.p95_ms for f in operations]},
            "ms",
            names,
        ),
        "hours": _chart(
            [timezone.localtime(h.hour).strftime("%H:%M") for h in hours],
            {_("calls"): [h.calls for h in hours], _("errors"): [h.errors for h in hours]},
            _("calls"),
        ),
        "waiting": _chart([w.label for w in waiting], {_("payments"): [w.count for w in waiting]}, _("payments")),
    }
    context = {
        "since": since,
        "until": until,
        "operations": operations,
        "overall": overall,
        "hours": hours,
        "waiting": waiting,
        "waiting_total": sum(w.count for w in waiting),
        "charts": charts,
        "certificates": certificates,
        "certificate_alerts": [c for c in certificates if c.needs_attention],
    }
    return render(request, "staff/dashboard.html", context)
