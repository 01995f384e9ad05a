from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

# The sandbox bank as a real process (session), and `live_bank` pointing the portal's client at it.
from tests.live_bank import live_bank, live_bank_server  # noqa: F401


class Clock:
    """The clock of accounts.security, moved by hand."""

    def __init__(self) -> None:
        self.current = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr("accounts.security.now", clock)
    return clock
