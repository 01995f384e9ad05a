"""Template filters that format money for the active language: ``150 000,00 NOK`` in nb."""

import logging

from django import template
from django.utils.formats import number_format

from core.money import minor_units, to_decimal

register = template.Library()
logger = logging.getLogger(__name__)


@register.filter
def money(amount, currency: str = "") -> str:
    """``{{ amount|money:"NOK" }}``: grouped, localised, with the currency's minor units.

    Never rounds: an amount with more fraction digits than the currency has (a bank's odd figure) is shown with
    all of them. A value that is not a decimal amount is shown as it is, and logged, rather than breaking the
    page.
    """
    if amount is None or amount == "":
        return ""
    try:
        value = to_decimal(amount)
    except (TypeError, ValueError):
        logger.warning("money filter: not a decimal amount: %r", amount)
        return f"{amount} {currency}".strip()
    # Trailing zeros are not digits the bank gave: a DecimalField(decimal_places=5) reads 150000.00000.
    exponent = value.normalize().as_tuple().exponent if value.is_finite() else 0
    digits = max(0, -exponent) if isinstance(exponent, int) else 0
    try:
        places = max(minor_units(currency), digits) if currency else max(2, digits)
    except KeyError:
        places = digits
    text = number_format(value, decimal_pos=places, use_l10n=True, force_grouping=True)
    return f"{text} {currency}".strip()
