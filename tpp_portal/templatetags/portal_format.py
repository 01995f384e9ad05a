"""Template filters that format money for the active language: ``150 000,00 NOK`` in nb."""

from decimal import Decimal

from django import template
from django.utils.formats import number_format

from tpp_portal.money import minor_units, to_decimal

register = template.Library()


@register.filter
def money(amount, currency: str = "") -> str:
    """``{{ amount|money:"NOK" }}``: grouped, localised, with the currency's minor units."""
    if amount is None or amount == "":
        return ""
    value = to_decimal(amount)
    try:
        places = minor_units(currency) if currency else 2
    except KeyError:
        places = max(0, -value.as_tuple().exponent) if isinstance(value, Decimal) else 2
    text = number_format(value, decimal_pos=places, use_l10n=True, force_grouping=True)
    return f"{text} {currency}".strip()
