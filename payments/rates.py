"""Norges Bank's daily exchange rates, read from its open SDMX data API (no database access here).

Request: ``GET {NORGES_BANK_RATES_URL}/B..NOK.SP?format=sdmx-json&lastNObservations=N&locale=en``: the EXR
dataflow, key ``frequency.base.quote.tenor`` = business-day (B) series of every base currency (empty) quoted
in NOK, spot (SP). ``lastNObservations`` gives the last N business days of each series, so a missed day is
filled in by the next run. The default base URL is ``https://data.norges-bank.no/api/data/EXR``; it is the
setting ``NORGES_BANK_RATES_URL`` so tests point it at a local server.

Response (SDMX-JSON data message): ``data.structure.dimensions.series`` lists the series dimensions in key
order (FREQ, BASE_CUR, QUOTE_CUR, TENOR), each with its ``values``; a series key ``"0:5:0:0"`` holds the
index of its value in each. ``data.structure.dimensions.observation`` holds TIME_PERIOD, whose ``values``
the observation keys index. ``data.structure.attributes.series`` holds the series attributes (DECIMALS,
CALCULATED, UNIT_MULT, COLLECTION); a series' ``attributes`` list indexes their values. UNIT_MULT is the
power of ten the quote is for (2: NOK per 100 units). Each observation is ``[value, ...]`` with the value a
decimal string.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

import requests
from django.conf import settings

from payments.spec import CURRENCY_SET, NOK

logger = logging.getLogger(__name__)

DEFAULT_OBSERVATIONS = 5
# Guards against a response that is not the rates table (an error page, a truncated body, a changed API).
MAX_UNIT_MULT = 6


class RateSourceError(Exception):
    """The rate source could not give rates; the stored rates stay as they are."""


class RateSourceUnavailable(RateSourceError):
    """Could not reach the source, or it answered with an error status: worth retrying later."""


class RateSourceMalformed(RateSourceError):
    """The source answered, but not with a rates table we understand: retrying now will not help."""


@dataclass(frozen=True)
class FetchedRate:
    currency: str
    rate_date: date
    rate: Decimal  # NOK for `unit` units of the currency
    unit: int


def rates_url() -> str:
    return settings.NORGES_BANK_RATES_URL.rstrip("/")


def fetch_norges_bank_rates(
    *,
    base_url: str | None = None,
    observations: int = DEFAULT_OBSERVATIONS,
    timeout: float | None = None,
    session: requests.Session | None = None,
) -> list[FetchedRate]:
    """The last ``observations`` business days of Norges Bank's rates for the currencies the bank accepts.

    Raises RateSourceUnavailable (network error, timeout, HTTP error status) or RateSourceMalformed (the
    body is not an SDMX-JSON rates message). Never returns a partial result from a malformed message.
    """
    url = f"{(base_url or rates_url()).rstrip('/')}/B..{NOK}.SP"
    params: dict[str, str | int] = {"format": "sdmx-json", "lastNObservations": observations, "locale": "en"}
    timeout = timeout if timeout is not None else settings.NORGES_BANK_TIMEOUT
    http = session or requests
    try:
        response = http.get(url, params=params, timeout=timeout, headers={"Accept": "application/json"})
    except requests.RequestException as exc:
        raise RateSourceUnavailable(f"Norges Bank could not be reached: {type(exc).__name__}") from exc
    if response.status_code >= 500 or response.status_code == 429:
        raise RateSourceUnavailable(f"Norges Bank answered HTTP {response.status_code}")
    if response.status_code != 200:
        raise RateSourceMalformed(f"Norges Bank answered HTTP {response.status_code}")
    try:
        payload = response.json(parse_float=Decimal)
    except ValueError as exc:
        raise RateSourceMalformed("Norges Bank's answer is not JSON") from exc
    return parse_sdmx_json(payload)


def parse_sdmx_json(payload: Any) -> list[FetchedRate]:
    """The NOK rates in an SDMX-JSON data message of the EXR dataflow (see the module docstring)."""
    try:
        return _parse(payload)
    except (KeyError, IndexError, TypeError, ValueError, InvalidOperation, AttributeError) as exc:
        raise RateSourceMalformed(f"Norges Bank's answer is not an SDMX-JSON rates message: {exc!r}") from exc


def _parse(payload: Any) -> list[FetchedRate]:
    data = payload["data"] if "data" in payload else payload
    structure = data["structure"]
    series_dimensions = structure["dimensions"]["series"]
    dimension_ids = [dimension["id"] for dimension in series_dimensions]
    for required in ("BASE_CUR", "QUOTE_CUR"):
        if required not in dimension_ids:
            raise ValueError(f"no {required} dimension")
    time_dimension = next(
        dimension for dimension in structure["dimensions"]["observation"] if dimension["id"] == "TIME_PERIOD"
    )
    periods = [date.fromisoformat(value["id"]) for value in time_dimension["values"]]
    series_attributes = structure.get("attributes", {}).get("series", [])
    unit_mult_position = next(
        (position for position, attribute in enumerate(series_attributes) if attribute["id"] == "UNIT_MULT"), None
    )
    datasets = data["dataSets"]
    if not datasets:
        raise ValueError("no data set")

    rates: list[FetchedRate] = []
    for key, series in datasets[0]["series"].items():
        positions = [int(part) for part in key.split(":")]
        if len(positions) != len(series_dimensions):
            raise ValueError(f"series key {key!r} does not match the dimensions")
        values = {
            dimension["id"]: dimension["values"][position]["id"]
            for dimension, position in zip(series_dimensions, positions, strict=True)
        }
        currency = values["BASE_CUR"]
        if values["QUOTE_CUR"] != NOK or values.get("TENOR", "SP") != "SP" or values.get("FREQ", "B") != "B":
            continue
        if currency not in CURRENCY_SET or currency == NOK:
            continue  # indices (I44, TWI) and currencies the bank does not accept
        unit = 10 ** _unit_mult(series, series_attributes, unit_mult_position)
        for observation_key, observation in series["observations"].items():
            raw = observation[0]
            if raw is None or raw == "" or raw == "NaN":
                continue  # no quotation that day
            rate = Decimal(str(raw))
            if not rate.is_finite() or rate <= 0:
                raise ValueError(f"rate {raw!r} of {currency} is not a positive number")
            rates.append(
                FetchedRate(currency=currency, rate_date=periods[int(observation_key)], rate=rate, unit=unit)
            )
    if not rates:
        raise ValueError("no rate of an accepted currency in the message")
    return rates


def _unit_mult(series: dict, attributes: list[dict], position: int | None) -> int:
    if position is None:
        return 0
    indexes = series.get("attributes") or []
    if position >= len(indexes) or indexes[position] is None:
        return 0
    exponent = int(attributes[position]["values"][indexes[position]]["id"])
    if not 0 <= exponent <= MAX_UNIT_MULT:
        raise ValueError(f"unit multiplier {exponent} out of range")
    return exponent
