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
    page.screenshot(path=artifacts_dir / "staff-dashboard.png", full_page=True)
    assert page.problems == []
