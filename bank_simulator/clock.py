"""The bank's business clock: real UTC time plus a settable offset kept in the database.

Every process reads the same offset, so advancing the clock through the sandbox control is seen by all
gunicorn workers at once. Transport checks (Date header, certificate validity) use real time instead.
"""

from __future__ import annotations

import datetime as dt

from bank_simulator.models import SimulatorClock


def real_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def offset() -> dt.timedelta:
    row = SimulatorClock.objects.filter(pk=1).values_list("offset_seconds", flat=True).first()
    return dt.timedelta(seconds=row or 0)


def now() -> dt.datetime:
    """Business time (timezone-aware UTC)."""
    return real_now() + offset()


def today(at: dt.datetime | None = None) -> dt.date:
    """The bank's business day (UTC) at ``at`` (default: now)."""
    return (at or now()).astimezone(dt.UTC).date()
