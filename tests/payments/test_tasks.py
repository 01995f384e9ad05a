"""refresh_exchange_rates: stores what Norges Bank gives; keeps the old rates when it cannot."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from payments import tasks
from payments.models import ExchangeRate, ExchangeRateSource
from tests.payments.conftest import TODAY, make_rate

pytestmark = pytest.mark.django_db
REAL_BACKOFF = tasks._backoff  # before the autouse fixture below replaces it


@pytest.fixture(autouse=True)
def _no_backoff_wait(monkeypatch):
    # An eagerly applied task runs its retries at once; the countdown is not what these tests check.
    monkeypatch.setattr(tasks, "_backoff", lambda retries: 0)


def snapshot():
    return sorted(ExchangeRate.objects.values_list("currency", "rate_date", "source", "rate", "unit"))


def test_refresh_stores_the_fetched_rates(rate_server):
    result = tasks.refresh_exchange_rates.apply()

    assert result.successful()
    assert result.result == {"created": 9, "updated": 0, "unchanged": 0}
    jpy = ExchangeRate.objects.get(currency="JPY", rate_date=TODAY, source=ExchangeRateSource.NORGES_BANK)
    assert (jpy.rate, jpy.unit) == (Decimal("6.5287"), 100)
    # Running again changes nothing: the upsert key makes a repeated fetch harmless.
    assert tasks.refresh_exchange_rates.apply().result == {"created": 0, "updated": 0, "unchanged": 9}


def test_unreachable_source_retries_a_bounded_number_of_times_then_keeps_the_old_rates(
    unreachable_url, monkeypatch, caplog
):
    make_rate("USD", "10.05")
    before = snapshot()
    calls = []
    real = tasks.exchange_rates_refresh
    monkeypatch.setattr(tasks, "exchange_rates_refresh", lambda: calls.append(1) or real())

    with caplog.at_level(logging.WARNING, logger="payments.tasks"):
        result = tasks.refresh_exchange_rates.apply()

    assert result.successful()  # nothing raised into the worker or beat
    assert result.result is None
    assert len(calls) == 1 + tasks.RATE_REFRESH_MAX_RETRIES
    assert snapshot() == before
    assert "keeping the stored rates" in caplog.text


def test_server_errors_are_retried_then_old_rates_kept(rate_server, caplog):
    make_rate("EUR", "11.60")
    before = snapshot()
    rate_server.status = 503
    rate_server.body = b"maintenance"

    result = tasks.refresh_exchange_rates.apply()

    assert result.successful()
    assert len(rate_server.requests) == 1 + tasks.RATE_REFRESH_MAX_RETRIES
    assert snapshot() == before


def test_a_malformed_answer_is_not_retried_and_changes_nothing(rate_server, caplog):
    before = snapshot()
    rate_server.body = b"<html>oops</html>"

    with caplog.at_level(logging.ERROR, logger="payments.tasks"):
        result = tasks.refresh_exchange_rates.apply()

    assert result.successful()
    assert len(rate_server.requests) == 1
    assert snapshot() == before
    assert "not understood" in caplog.text


def test_backoff_grows_and_stays_bounded():
    waits = [REAL_BACKOFF(retry) for retry in range(tasks.RATE_REFRESH_MAX_RETRIES)]
    assert 60 <= waits[0] <= 90 and 120 <= waits[1] <= 180 and 240 <= waits[2] <= 360
    assert max(waits) < 3600  # far below the broker's visibility timeout
