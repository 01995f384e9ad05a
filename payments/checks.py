"""Start-up checks of the payments settings: a bad regulatory or rate setting stops the portal at once."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.checks import Error, register

from payments.selectors import DEFAULT_MARGIN, DEFAULT_RATE_MAX_AGE_DAYS, DEFAULT_THRESHOLD_NOK


def _decimal(name: str, default: Decimal) -> Decimal | None:
    try:
        value = Decimal(str(getattr(settings, name, default)))
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


@register()
def check_payment_settings(app_configs=None, **kwargs) -> list[Error]:
    errors = []
    threshold = _decimal("REGULATORY_THRESHOLD_NOK", DEFAULT_THRESHOLD_NOK)
    if threshold is None or threshold <= 0:
        errors.append(Error("REGULATORY_THRESHOLD_NOK must be a positive amount in NOK", id="payments.E001"))
    margin = _decimal("REGULATORY_MARGIN", DEFAULT_MARGIN)
    if margin is None or not Decimal(0) <= margin < Decimal(1):
        errors.append(
            Error(
                "REGULATORY_MARGIN must be a fraction from 0 up to (not including) 1, e.g. 0.05",
                id="payments.E002",
            )
        )
    max_age = getattr(settings, "EXCHANGE_RATE_MAX_AGE_DAYS", DEFAULT_RATE_MAX_AGE_DAYS)
    if not isinstance(max_age, int) or isinstance(max_age, bool) or max_age < 0:
        errors.append(
            Error("EXCHANGE_RATE_MAX_AGE_DAYS must be a whole number of days, 0 or more", id="payments.E003")
        )
    return errors
