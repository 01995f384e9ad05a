"""When the bank's batches run: five slots a day on the business clock (UTC, every day of the week)."""

from __future__ import annotations

import datetime as dt

BATCH_SLOTS_UTC = (dt.time(5, 0), dt.time(8, 0), dt.time(11, 0), dt.time(13, 0), dt.time(15, 0))


def next_slot_after(moment: dt.datetime) -> dt.datetime:
    """The first batch slot strictly after ``moment``."""
    day = moment.astimezone(dt.UTC).date()
    while True:
        for slot in BATCH_SLOTS_UTC:
            candidate = dt.datetime.combine(day, slot, tzinfo=dt.UTC)
            if candidate > moment:
                return candidate
        day += dt.timedelta(days=1)


def first_slot_on(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, BATCH_SLOTS_UTC[0], tzinfo=dt.UTC)
