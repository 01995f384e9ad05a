"""The sandbox's generated year of history: balances a customer would believe."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from bank_simulator import history

OPENING = Decimal("85000.00")  # the EUR account's balance a year back (bank_simulator/services.py)


@pytest.mark.parametrize("month", range(1, 13))
def test_the_eur_accounts_sweep_keeps_its_balance_above_zero(month):
    """An exporter's EUR account: what comes in above its opening balance is swept to NOK each month, so its
    balance stays near the opening (it went down to -150 000 with a fixed sweep of 150 000 a month)."""
    today = dt.date(2026, month, 11)
    items = history.generate(
        seed="sandbox",
        resource_id="eur-account",
        currency="EUR",
        profile="corporate_currency",
        today=today,
        opening=OPENING,
        operating_iban="NO9386011117947",
    )
    balance, lowest, sweeps = OPENING, OPENING, []
    for item in items:
        balance += item.amount
        lowest = min(lowest, balance)
        if item.remittance_lines == ["Veksling til NOK"]:
            sweeps.append(item.amount)
    assert lowest > 0, lowest
    assert OPENING - Decimal("30000") < balance < OPENING + Decimal("400000"), balance
    assert sweeps and all(s < 0 and s % history.SWEEP_STEP == 0 for s in sweeps), sweeps
