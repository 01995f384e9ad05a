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


def _chart(labels: list[str], series: dict[str, list], unit: str) -> dict:
    """The data of one chart as static/js/charts.js reads it (interfaces: labels, series, unit)."""
    return {
        "labels": labels,
        "series": [{"name": name, "values": values} for name, values in series.items()],
        "unit": unit,
    }


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
    charts = {
        "calls": _chart(
            names,
            {
                _("calls"): [f.calls for f in operations],
                _("errors"): [f.errors for f in operations],
                "429": [f.too_many for f in operations],
            },
            _("calls"),
        ),
        "durations": _chart(
            names,
            {_("median"): [f.median_ms for f in operations], _("95th percentile"): [f.p95_ms for f in operations]},
            "ms",
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
