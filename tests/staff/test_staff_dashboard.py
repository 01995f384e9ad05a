"""The staff dashboard: figures of the last 24 hours checked against known rows (counts, error rate, 429s,
nearest-rank median and 95th percentile, per hour), payments waiting, the chart data, and who may open it."""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from payments.models import PaymentState
from staff import selectors
from staff.views import operation_labels
from tests.payments.payment_factories import PaymentFactory
from tests.staff.fixtures import bank_call

pytestmark = pytest.mark.django_db

URL = reverse("staff-dashboard")


def nearest_rank(values: list[int], p: int) -> int:
    """The reference definition: the value at position ceil(p/100 * n) of the sorted values (1-based)."""
    ordered = sorted(values)
    return ordered[math.ceil(p * len(ordered) / 100) - 1]


@pytest.fixture
def known_calls(alice):
    now = timezone.now()
    accounts = [10 * i for i in range(20, 0, -1)]  # 200, 190, ... 10 ms, inserted out of order
    statuses = {200: 429, 150: 500}  # two of them failed
    for i, duration in enumerate(accounts):
        bank_call(
            started_at=now - timedelta(minutes=5 + i),
            duration_ms=duration,
            status=statuses.get(duration, 200),
            user=alice,
        )
    bank_call(started_at=now - timedelta(hours=2), method="POST", path="/v1/consents", duration_ms=300, status=201)
    bank_call(started_at=now - timedelta(hours=2), method="POST", path="/v1/consents", duration_ms=5, status=400)
    bank_call(
        started_at=now - timedelta(hours=3),
        method="POST",
        path="/v1/consents",
        duration_ms=7,
        status=None,
        error="TransportError",
    )
    # Older than 24 hours: counted nowhere.
    bank_call(started_at=now - timedelta(hours=25), duration_ms=99_999, status=503)
    return {"accounts": accounts, "consents": [300, 5, 7]}


def test_an_answer_the_client_did_not_accept_counts_as_an_error(alice):
    """A 200 whose signature did not verify (or a malformed answer) is an error for staff, not a success."""
    now = timezone.now()
    bank_call(started_at=now - timedelta(minutes=5), status=200)
    bank_call(started_at=now - timedelta(minutes=4), status=200, error="ResponseSignatureError")
    (accounts,), overall = selectors.bank_call_figures(since=now - timedelta(hours=1), until=now)
    assert (accounts.calls, accounts.errors) == (2, 1) and (overall.calls, overall.errors) == (2, 1)


def test_figures_per_operation_and_overall_match_the_rows(known_calls):
    until = timezone.now()
    operations, overall = selectors.bank_call_figures(since=until - timedelta(hours=24), until=until)

    accounts, consents = operations  # busiest first
    assert accounts.operation == "GET /v1/accounts"
    assert (accounts.calls, accounts.errors, accounts.too_many) == (20, 2, 1)
    assert accounts.error_rate == Decimal("10.0")
    assert (accounts.median_ms, accounts.p95_ms) == (100, 190)  # positions 10 and 19 of 10..200

    assert consents.operation == "POST /v1/consents"
    assert (consents.calls, consents.errors, consents.too_many) == (3, 2, 0)  # a 400 and a transport error
    assert consents.error_rate == Decimal("66.7")
    assert (consents.median_ms, consents.p95_ms) == (7, 300)  # positions 2 and 3 of 5, 7, 300

    every = known_calls["accounts"] + known_calls["consents"]
    assert (overall.calls, overall.errors, overall.too_many) == (23, 4, 1)
    assert overall.error_rate == (Decimal(4) * 100 / 23).quantize(Decimal("0.1"))
    assert overall.median_ms == nearest_rank(every, 50)
    assert overall.p95_ms == nearest_rank(every, 95)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 20, 21, 100])
def test_percentiles_follow_the_nearest_rank_definition_for_any_count(count):
    durations = [(i * 37) % 101 + i for i in range(count)]  # distinct-ish, unordered
    for duration in durations:
        bank_call(duration_ms=duration)
    until = timezone.now() + timedelta(seconds=1)
    (only,), overall = selectors.bank_call_figures(since=until - timedelta(hours=1), until=until)
    assert (only.median_ms, only.p95_ms) == (nearest_rank(durations, 50), nearest_rank(durations, 95))
    assert (overall.median_ms, overall.p95_ms) == (only.median_ms, only.p95_ms)


def test_no_calls_gives_empty_figures():
    until = timezone.now()
    operations, overall = selectors.bank_call_figures(since=until - timedelta(hours=24), until=until)
    assert operations == [] and overall.calls == 0
    assert overall.error_rate is None and overall.median_ms is None and overall.p95_ms is None


def test_calls_per_hour_cover_every_hour_with_the_right_counts(known_calls):
    until = timezone.now()
    hours = selectors.bank_calls_per_hour(since=until - timedelta(hours=24), until=until)
    assert len(hours) in (24, 25)  # the first hour is partial unless the period starts on the hour
    assert sum(h.calls for h in hours) == 23 and sum(h.errors for h in hours) == 4
    assert [h.hour for h in hours] == sorted(h.hour for h in hours)
    two_hours_ago = (until - timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)
    bucket = next(h for h in hours if h.hour == two_hours_ago)
    assert (bucket.calls, bucket.errors) == (2, 1)


def test_payments_waiting_on_a_final_status(alice):
    PaymentFactory.create_batch(2, user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="PDNG")
    PaymentFactory(user=alice, state=PaymentState.OUTCOME_UNKNOWN, payment_id="", transaction_status="")
    PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="ACSC")
    PaymentFactory(user=alice, state=PaymentState.DRAFT, payment_id="", transaction_status="")
    PaymentFactory(user=alice, state=PaymentState.REFUSED, payment_id="", transaction_status="")
    PaymentFactory(user=alice, state=PaymentState.UNCONFIRMED, payment_id="", transaction_status="")

    waiting = {w.state: w.count for w in selectors.payments_waiting()}

    assert waiting == {
        PaymentState.SUBMITTING: 0,
        PaymentState.OUTCOME_UNKNOWN: 1,
        PaymentState.UNCONFIRMED: 1,  # the bank refused the replay: staff check with the bank
        PaymentState.INITIATED: 0,
        PaymentState.AUTHORISING: 0,
        PaymentState.AWAITING_STATUS: 2,
    }


def test_the_page_shows_the_figures_and_the_chart_data(support_client, known_calls, alice):
    PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS)

    response = support_client.get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'id="figure-calls">\s*23<', html)
    assert re.search(r'id="figure-429">\s*1<', html)
    assert re.search(r'id="figure-waiting">\s*1<', html)
    assert "GET /v1/accounts" in html and "POST /v1/consents" in html
    for source in ("chart-calls", "chart-durations", "chart-hours", "chart-waiting"):
        assert f'data-chart-source="{source}"' in html
        match = re.search(rf'<script id="{source}" type="application/json">(.*?)</script>', html, re.S)
        assert match, source
        data = json.loads(match.group(1))
        assert {"labels", "series", "unit"} <= set(data) <= {"labels", "series", "unit", "titles"}
        assert all(len(series["values"]) == len(data["labels"]) for series in data["series"])
    calls = json.loads(
        re.search(r'<script id="chart-calls" type="application/json">(.*?)</script>', html, re.S)[1]
    )
    assert calls["labels"] == ["GET accounts", "POST consents"]
    assert calls["titles"] == ["GET /v1/accounts", "POST /v1/consents"]
    assert calls["series"][0] == {"name": "calls", "values": [20, 3]}
    assert 'src="/static/js/charts.js"' in html
    assert "<script>" not in html  # no inline script (CSP)


def test_only_staff_allowed_to_read_the_audit_log_open_it(client, alice, charlie, support):
    anonymous = client.get(URL)
    assert anonymous.status_code == 302 and reverse("admin:login") in anonymous["Location"]
    client.force_login(alice)
    customer = client.get(URL)
    assert customer.status_code == 302 and reverse("admin:login") in customer["Location"]
    client.force_login(charlie)  # staff without a role
    assert client.get(URL).status_code == 403
    client.force_login(support)
    assert client.get(URL).status_code == 200
    assert client.post(URL).status_code == 405


def _chart_data(html: str, source: str) -> dict:
    return json.loads(re.search(rf'<script id="{source}" type="application/json">(.*?)</script>', html, re.S)[1])


def test_bars_are_labelled_by_what_tells_the_operations_apart():
    operations = [
        "GET /v1/accounts",
        "GET /v1/accounts/{account_id}/balances",
        "GET /v1/card-accounts/{account_id}/balances",
        "GET /v1/payments/{product}/{payment_id}/status",
        "POST /v1/consents",
        "GET /v1/",
    ]

    assert operation_labels(operations) == [
        "GET accounts",
        "GET accounts/balances",
        "GET card-accounts/balances",
        "GET status",
        "POST consents",
        "GET /v1/",  # nothing shorter to say
    ]


def test_the_bar_charts_carry_short_labels_and_the_full_operation_for_the_tooltips(support_client, alice):
    now = timezone.now()
    bank_call(started_at=now - timedelta(minutes=5), path="/v1/accounts/{account_id}/transactions", user=alice)
    bank_call(started_at=now - timedelta(minutes=6), path="/v1/payments/{product}/{payment_id}/status")

    html = support_client.get(URL).content.decode()

    for source in ("chart-calls", "chart-durations"):
        chart = re.search(rf'<div class="chart"[^>]*data-chart-source="{source}"[^>]*>', html)[0]
        assert 'data-chart-labels-translate="no"' in chart  # operation names are code, not words to translate
        data = _chart_data(html, source)
        assert sorted(data["labels"]) == ["GET status", "GET transactions"]
        assert sorted(data["titles"]) == [
            "GET /v1/accounts/{account_id}/transactions",
            "GET /v1/payments/{product}/{payment_id}/status",
        ]
        assert data["labels"].index("GET status") == data["titles"].index(
            "GET /v1/payments/{product}/{payment_id}/status"
        )


@pytest.mark.parametrize(
    ("language", "no_calls", "no_payments"),
    [("en", "No calls yet", "No payments are waiting"), ("nb", "Ingen kall ennå", "Ingen betalinger venter")],
)
def test_empty_charts_say_so_instead_of_an_empty_axis(support_client, language, no_calls, no_payments):
    support_client.cookies["django_language"] = language

    html = support_client.get(URL, HTTP_ACCEPT_LANGUAGE=language).content.decode()

    assert f'<p class="help" id="hours-empty">{no_calls}</p>' in html
    assert f'<p class="help" id="waiting-empty">{no_payments}</p>' in html
    for source in ("chart-calls", "chart-durations", "chart-hours", "chart-waiting"):
        assert f'data-chart-source="{source}"' not in html and f'id="{source}"' not in html
