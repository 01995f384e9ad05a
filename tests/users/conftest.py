from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest


class Clock:
    """The clock of users.security, moved by hand."""

    def __init__(self) -> None:
        self.current = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr("users.security.now", clock)
    return clock
