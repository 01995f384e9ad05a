"""The payment form's field helpers: the choices of its selects (currencies, countries, regulatory codes) in
the active language, its text fields, and the amount field that reads an amount as people type it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from babel import Locale, UnknownLocaleError
from babel.numbers import get_currency_name
from django import forms
from django.core.exceptions import ValidationError
from django.utils import formats
from django.utils.translation import get_language, to_locale
from django.utils.translation import gettext_lazy as _
from iso4217 import Currency

from payments import validators as v
from payments.spec import (
    COUNTRIES,
    CURRENCIES,
    CURRENCY_SET,
    NOK,
    REGULATORY_CODE_GROUPS,
    regulatory_code_name,
)


def _babel_locale() -> Locale:
    try:
        return Locale.parse(to_locale(get_language() or "en"))
    except (UnknownLocaleError, ValueError):
        return Locale("en")


#: The currencies people here pay in most, offered first in this order; the rest follow by code.
FIRST_CURRENCIES: tuple[str, ...] = (NOK, "EUR", "USD", "SEK", "DKK", "GBP")


def is_current_iso_currency(code: str) -> bool:
    """Whether ISO 4217 lists ``code`` today (the iso4217 package's table). The bank's list also holds withdrawn
    codes (HRK, BGN, VEF ...) and local issues that ISO never listed (GGP, JEP, IMP, TVD, SPL)."""
    try:
        Currency(code)
    except ValueError:
        return False
    return True


def offered_currencies() -> list[str]:
    """The currencies the form offers: the bank's list (bank_spec, shared with the sandbox bank) less the codes
    ISO 4217 no longer lists (HRK, VEF, BYR, ZWD ...) and the local issues it never listed (GGP, JEP, IMP, TVD,
    SPL, which have no name either); the most used first (FIRST_CURRENCIES), then the rest by code."""
    rest = sorted(code for code in CURRENCIES if code not in FIRST_CURRENCIES and is_current_iso_currency(code))
    return [*FIRST_CURRENCIES, *rest]


def currency_choices(keep: Iterable[str] = ()) -> list:
    """The offered currencies, "EUR - Euro" in the active language, grouped for a <select>: the most used, then
    the others. A withdrawn code of the bank's list named in ``keep`` (the currency of a draft saved before it was
    withdrawn) is offered last, in a group of its own, so that editing the draft neither loses nor changes it."""
    locale = _babel_locale()

    def choice(code: str) -> tuple[str, str]:
        name = get_currency_name(code, locale=locale)
        return code, code if name == code else f"{code} - {name}"

    offered = offered_currencies()
    groups = [
        (_("Most used"), [choice(code) for code in FIRST_CURRENCIES]),
        (_("Other currencies"), [choice(code) for code in offered[len(FIRST_CURRENCIES) :]]),
    ]
    kept = sorted({code for code in keep if code in CURRENCY_SET and code not in offered})
    if kept:
        groups.append((_("Withdrawn codes"), [choice(code) for code in kept]))
    return groups


def country_choices() -> list[tuple[str, str]]:
    """The bank's countries by name in the active language."""
    territories = _babel_locale().territories
    return sorted(((code, territories.get(code, code)) for code in COUNTRIES), key=lambda choice: choice[1])


def regulatory_code_choices() -> list:
    """Grouped as the tax authority groups them: "29 - Other purchase or sale of services (Annet kjøp/...)", the
    Norwegian name left out where it says the same (in bokmål)."""
    return [("", _("No code"))] + [
        (group, [(code, regulatory_code_name(code, with_norwegian=True)) for code in codes])
        for group, codes in REGULATORY_CODE_GROUPS
    ]


def text_field(
    label, *, max_length: int, required: bool = False, help_text="", validators=(), error_messages=None
) -> forms.CharField:
    # No CharField(max_length=...): its message would repeat ours. The maxlength attribute is not rendered as such
    # (it would cut silently): includes/field.html counts the characters as the user types (portal_forms).
    return forms.CharField(
        label=label,
        required=required,
        help_text=help_text,
        validators=[*validators] or [lambda value: v.validate_text(value, max_length=max_length)],
        widget=forms.TextInput(attrs={"maxlength": max_length}),
        error_messages=error_messages,
    )


#: An amount as people type it, once the spaces are gone: ASCII digits, one optional decimal separator, an optional
#: sign (a minus is then refused as "not more than zero", which says more than "not a number").
_PLAIN_AMOUNT = re.compile(r"[+-]?[0-9]+(?:[.,][0-9]+)?|[+-]?[.,][0-9]+", re.ASCII)


class AmountField(forms.DecimalField):
    """A DecimalField that also accepts the spaces people group digits with ("150 000", "1 250,50" in nb).

    Only the active language's decimal separator is accepted, and the other of "." and "," is refused with a
    message saying so: in Norwegian "150.000" means 150 000 (a point groups thousands), while Python would read
    150, and in English "150,000" could be either. Spaces are the one grouping accepted in both languages.

    Only ASCII digits: Python's Decimal would also read "1_000", Arabic-Indic and full-width digits, exponents
    ("1e5") and "NaN", none of which a person means as an amount here.

    Zeros typed beyond ``decimal_places`` are dropped ("100.000000" is 100.00000), so that, as
    payments.validators.validate_amount says, the value is checked and not the typing; a non-zero digit there
    is still refused (max_decimal_places).
    """

    default_error_messages = {
        "point_in_comma_locale": _(
            "Write the amount without points: use a comma for decimals and a space (or nothing) between "
            "thousands, for example 150 000 or 1 250,50."
        ),
        "comma_in_point_locale": _(
            "Write the amount without commas: use a point for decimals and a space (or nothing) between "
            "thousands, for example 150 000 or 1 250.50."
        ),
        "not_digits": _("Write the amount with the digits 0-9 only, for example 150 000 or 1 250.50."),
    }

    def to_python(self, value):
        if isinstance(value, str):
            value = "".join(value.split()).replace("\u202f", "")
            decimal_separator = formats.get_format("DECIMAL_SEPARATOR") if self.localize else "."
            if decimal_separator == "," and "." in value:
                raise ValidationError(self.error_messages["point_in_comma_locale"], code="point_in_comma_locale")
            if decimal_separator == "." and "," in value:
                raise ValidationError(self.error_messages["comma_in_point_locale"], code="comma_in_point_locale")
            if value and not _PLAIN_AMOUNT.fullmatch(value):
                if any(char == "_" or (char.isdigit() and not char.isascii()) for char in value):
                    raise ValidationError(self.error_messages["not_digits"], code="not_digits")
                raise ValidationError(self.error_messages["invalid"], code="invalid")
        number = super().to_python(value)
        if number is not None and self.decimal_places is not None and number.is_finite():
            step = Decimal(1).scaleb(-self.decimal_places)
            try:
                if -number.as_tuple().exponent > self.decimal_places and number == number.quantize(step):
                    number = number.quantize(step)
            except InvalidOperation:  # more digits than the context holds: max_digits refuses it
                pass
        return number
