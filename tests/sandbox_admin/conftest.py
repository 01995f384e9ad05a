"""The sandbox admin area runs against the real sandbox bank (``live_bank``); tests that change its mock data
put it back to its known state afterwards (``restore_known_state``), so that later tests find it as they expect."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace

import pytest
from stdnum.no import fodselsnummer, orgnr

# The sandbox bank as a real process (session), and `live_bank` pointing the portal's client at it.
from tests.live_bank import live_bank, live_bank_server  # noqa: F401


@pytest.fixture
def bank_direct(live_bank):  # noqa: F811 - the fixture imported above
    """A bank client of the test itself (not audited), to read what the bank holds."""
    from core.bank import client_config
    from xs2a.client import Xs2aClient

    with Xs2aClient(replace(client_config(), base_url=live_bank)) as client:
        yield client


@pytest.fixture
def restore_known_state(bank_direct) -> Iterator[None]:
    yield
    bank_direct.sandbox.initialize()


def new_identity_number() -> str:
    """A valid Norwegian national identity number the known state does not hold (random birth date, 1940-1999)."""
    rng = random.SystemRandom()
    while True:
        day, month, year = rng.randint(1, 28), rng.randint(1, 12), rng.randint(40, 99)
        base = f"{day:02d}{month:02d}{year:02d}{rng.randint(0, 499):03d}"
        first = fodselsnummer.calc_check_digit1(base)
        number = base + first + fodselsnummer.calc_check_digit2(base + first)
        if fodselsnummer.is_valid(number):  # a check digit of 10 makes the number invalid: draw again
            return number


def new_organisation_number() -> str:
    """A valid Norwegian organisation number (9 digits, starting with 8 or 9, mod-11 check digit)."""
    rng = random.SystemRandom()
    while True:
        number = f"{rng.randint(80000000, 99999999)}{rng.randint(0, 9)}"
        if orgnr.is_valid(number):
            return number
