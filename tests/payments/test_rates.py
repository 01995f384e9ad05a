"""The Norges Bank fetcher against a local server serving a recorded-format SDMX-JSON answer."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest

from payments.rates import (
    FetchedRate,
    RateSourceMalformed,
    RateSourceUnavailable,
    fetch_norges_bank_rates,
)
from tests.payments.conftest import RECORDED_EXR


def by_key(rates):
    return {(rate.currency, rate.rate_date): rate for rate in rates}


def test_fetches_and_parses_the_recorded_answer(rate_server):
    rates = by_key(fetch_norges_bank_rates())

    assert rates[("USD", date(2026, 11, 20))] == FetchedRate("USD", date(2026, 11, 20), Decimal("10.1203"), 1)
    assert rates[("USD", date(2026, 11, 19))].rate == Decimal("10.1465")
    # UNIT_MULT 2: JPY and SEK are quoted per 100 units.
    assert rates[("JPY", date(2026, 11, 20))] == FetchedRate("JPY", date(2026, 11, 20), Decimal("6.5287"), 100)
    assert rates[("SEK", date(2026, 11, 19))] == FetchedRate("SEK", date(2026, 11, 19), Decimal("106.93"), 100)
    assert rates[("EUR", date(2026, 11, 20))].rate == Decimal("11.7298")
    # GBP has no observation on the 19th: nothing is made up for it.
    assert ("GBP", date(2026, 11, 19)) not in rates
    assert rates[("GBP", date(2026, 11, 20))].rate == Decimal("13.3127")
    # The import-weighted index and BYN (not in the bank's currency list) are left out.
    assert {currency for currency, _ in rates} == {"USD", "JPY", "SEK", "EUR", "GBP"}
    assert len(rates) == 9
    assert all(isinstance(rate.rate, Decimal) for rate in rates.values())


def test_asks_for_the_daily_spot_series_in_sdmx_json(rate_server):
    fetch_norges_bank_rates(observations=3)

    [request] = rate_server.requests
    url = urlsplit(request)
    assert url.path == "/api/data/EXR/B..NOK.SP"
    assert parse_qs(url.query) == {"format": ["sdmx-json"], "lastNObservations": ["3"], "locale": ["en"]}


def test_numbers_as_json_numbers_are_read_exactly(rate_server):
    payload = json.loads(RECORDED_EXR)
    payload["data"]["dataSets"][0]["series"]["0:0:0:0"]["observations"] = {"1": [10.1203]}
    rate_server.body = json.dumps(payload).encode()

    usd = by_key(fetch_norges_bank_rates())[("USD", date(2026, 11, 20))]
    assert usd.rate == Decimal("10.1203")  # not 10.120299999... from a float


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Service temporarily down for maintenance</body></html>",
        b'{"data": {"dataSets": []}}',
        b'{"errors": [{"code": 404, "message": "No results found"}]}',
        b"[]",
        RECORDED_EXR[: len(RECORDED_EXR) // 2],  # truncated
    ],
    ids=["html", "no-structure", "sdmx-error", "list", "truncated"],
)
def test_a_malformed_answer_is_reported_as_malformed(rate_server, body):
    rate_server.body = body
    with pytest.raises(RateSourceMalformed):
        fetch_norges_bank_rates()


@pytest.mark.parametrize("value", ["-10.12", "0", "ten", "Infinity"])
def test_a_bad_rate_value_rejects_the_whole_answer(rate_server, value):
    payload = json.loads(RECORDED_EXR)
    payload["data"]["dataSets"][0]["series"]["0:3:0:0"]["observations"]["1"] = [value]
    rate_server.body = json.dumps(payload).encode()
    with pytest.raises(RateSourceMalformed):
        fetch_norges_bank_rates()


def test_an_answer_without_any_accepted_currency_is_malformed(rate_server):
    payload = json.loads(RECORDED_EXR)
    series = payload["data"]["dataSets"][0]["series"]
    payload["data"]["dataSets"][0]["series"] = {"0:4:0:0": series["0:4:0:0"]}  # only the I44 index
    rate_server.body = json.dumps(payload).encode()
    with pytest.raises(RateSourceMalformed):
        fetch_norges_bank_rates()


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_a_server_error_is_unavailable(rate_server, status):
    rate_server.status = status
    rate_server.body = b"busy"
    with pytest.raises(RateSourceUnavailable, match=str(status)):
        fetch_norges_bank_rates()


def test_a_client_error_is_malformed_not_retried(rate_server):
    rate_server.status = 404
    rate_server.body = b"No Results Found"
    with pytest.raises(RateSourceMalformed, match="404"):
        fetch_norges_bank_rates()


def test_an_unreachable_source_is_unavailable(unreachable_url):
    with pytest.raises(RateSourceUnavailable, match="could not be reached"):
        fetch_norges_bank_rates()


def test_the_base_url_is_the_setting(settings, rate_server):
    settings.NORGES_BANK_RATES_URL = rate_server.url + "/"
    fetch_norges_bank_rates()
    assert rate_server.requests[0].startswith("/api/data/EXR/B..NOK.SP?")
