"""The staff dashboard in a real browser: its charts are drawn (SVG by static/js/charts.js) with no CSP
violation, beside their data tables; a screenshot is kept as a test artefact."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from payments.models import PaymentState
from tests.factories import UserFactory
from tests.payments.payment_factories import PaymentFactory
from tests.staff.fixtures import bank_call

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_the_dashboard_draws_its_charts(page, live_server, artifacts_dir):
    # A transactional test starts from an emptied database: the role is given as its permission here.
    staff = UserFactory(email="dashboard.staff@example.com", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_bankcall"))
    now = timezone.now()
    for minutes, (path, status, duration) in enumerate(
        [
            ("/v1/accounts", 200, 120),
            ("/v1/accounts", 200, 180),
            ("/v1/accounts", 429, 40),
            ("/v1/accounts/{account_id}/balances", 200, 220),
            ("/v1/accounts/{account_id}/balances", 503, 900),
            ("/v1/accounts/{account_id}/transactions", 200, 640),
        ]
    ):
        bank_call(
            started_at=now - timedelta(hours=minutes, minutes=3), path=path, status=status, duration_ms=duration
        )
    PaymentFactory(user=staff, state=PaymentState.AWAITING_STATUS, transaction_status="PDNG")

    client = Client()
    client.force_login(staff)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/staff/dashboard/")

    page.wait_for_selector(".chart svg")
    assert page.locator(".chart svg").count() == 4
    assert page.locator("#figure-calls").inner_text().strip() == "6"
    assert page.locator("#figure-429").inner_text().strip() == "1"
    assert page.locator("#operations tbody tr").count() == 3
    calls_chart = '[data-chart-source="chart-calls"]'
    ticks = page.eval_on_selector_all(f"{calls_chart} .chart-axis text", "ts => ts.map(t => t.firstChild.data)")
    full = page.locator(f"{calls_chart} .chart-axis text title").all_text_contents()
    assert "GET /v1/accounts/{account_id}/balances" in full, full  # the full operation in the label's tooltip
    assert "GET accounts" in ticks and not any(t.startswith("GET /v1/") or "\u2026" in t for t in ticks), ticks
    assert page.locator(f"{calls_chart} .chart-axis").get_attribute("translate") == "no"
    tooltips = page.locator(f"{calls_chart} .chart-bar title").all_text_contents()
    assert any(t.startswith("GET /v1/accounts/{account_id}/transactions: ") for t in tooltips), tooltips
    page.screenshot(path=artifacts_dir / "staff-dashboard.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_selector(".chart svg")
    narrow = page.eval_on_selector_all(f"{calls_chart} .chart-axis text", "ts => ts.map(t => t.firstChild.data)")
    labels = ("GET accounts", "GET balances", "GET transactions")  # a narrow bar keeps the end, which differs
    assert len(set(narrow)) == 3, narrow
    assert all(label.endswith(t.lstrip("\u2026")) for label, t in zip(labels, narrow, strict=True)), narrow
    page.screenshot(path=artifacts_dir / "staff-dashboard-390.png", full_page=True)
    page.locator(calls_chart).screenshot(path=artifacts_dir / "staff-dashboard-calls-390.png")
    assert page.problems == []


def test_an_empty_dashboard_says_no_calls_yet_in_bokmal(page, live_server, artifacts_dir):
    staff = UserFactory(email="dashboard.empty@example.com", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_bankcall"))
    client = Client()
    client.force_login(staff)
    page.context.add_cookies(
        [
            {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url},
            {"name": "django_language", "value": "nb", "url": live_server.url},
        ]
    )
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/staff/dashboard/")

    assert page.locator("#hours-empty").inner_text() == "Ingen kall ennå"
    assert page.locator("#waiting-empty").inner_text() == "Ingen betalinger venter"
    assert page.locator(".chart").count() == 0
    page.screenshot(path=artifacts_dir / "staff-dashboard-empty-nb-390.png", full_page=True)
    assert page.problems == []
