"""English: 25 Nov 2026 and 25 Nov 2026, 09:27 (day first, month in letters: read the same everywhere)."""

DATE_FORMAT = "j M Y"
SHORT_DATE_FORMAT = DATE_FORMAT
DATETIME_FORMAT = "j M Y, H:i"
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
MONTH_DAY_FORMAT = "j M"
YEAR_MONTH_FORMAT = "M Y"
TIME_FORMAT = "H:i"
