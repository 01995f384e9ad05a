"""When the bank's batches run: the times of BANK_SIM_BATCH_TIMES each day on the business clock (UTC, every day of
the week; five a day by default, spec section 8)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings


def batch_times() -> tuple[dt.time, ...]:
    return settings.BANK_SIM_BATCH_TIMES


def next_slot_after(moment: dt.datetime) -> dt.datetime:
    """The first batch slot strictly after ``moment``."""
    day = moment.astimezone(dt.UTC).date()
    slots = batch_times()
    while True:
        for slot in slots:
            candidate = dt.datetime.combine(day, slot, tzinfo=dt.UTC)
            if candidate > moment:
                return candidate
        day += dt.timedelta(days=1)


def first_slot_on(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, batch_times()[0], tzinfo=dt.UTC)
