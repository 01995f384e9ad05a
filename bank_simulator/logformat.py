"""The sandbox bank's log lines in UTC with the offset shown, as every other process of the product.

Django sets the process's local time zone to TIME_ZONE (Europe/Oslo), which logging's default clock would print.
The portal's formatter (core.logging.UtcFormatter) does the same; the bank imports nothing of the portal.
"""

from __future__ import annotations

import logging
import time


class UtcFormatter(logging.Formatter):
    """Times in UTC with the offset shown: 2026-12-07T05:10:00.123+0000 (or ``datefmt`` on UTC's clock)."""

    converter = time.gmtime

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        return f"{time.strftime('%Y-%m-%dT%H:%M:%S', self.converter(record.created))}.{int(record.msecs):03d}+0000"
