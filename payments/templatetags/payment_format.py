"""Template filters of the payment pages: a recipient's postal address, an account number grouped for reading,
and the signed body made readable."""

from __future__ import annotations

import json
import re
from typing import Any

from babel import Locale, UnknownLocaleError
from django import template
from django.utils.translation import get_language, to_locale

register = template.Library()


def _country_name(code: str) -> str:
    try:
        locale = Locale.parse(to_locale(get_language() or "en"))
    except (UnknownLocaleError, ValueError):
        locale = Locale("en")
    return locale.territories.get(code, code)


@register.filter
def postal_address(address: Any) -> str:
    """A creditorAddress (spec 2.4, keys as sent) on one line, empty parts left out: "Street 12, 10115 Berlin,
    Germany"; no street: "Berlin, Germany"; the country by its name in the active language."""
    if not isinstance(address, dict):
        return ""
    street = " ".join(part for part in (address.get("street"), address.get("buildingNumber")) if part)
    town = " ".join(part for part in (address.get("postalCode"), address.get("city")) if part)
    country = _country_name(address["country"]) if address.get("country") else ""
    return ", ".join(part for part in (street, town, country) if part)


_IBAN = re.compile(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}")
_NORWEGIAN_BBAN = re.compile(r"[0-9]{11}")


@register.filter
def account_number(number: Any) -> str:
    """An account number grouped for reading, for display only (the stored and sent value stays compact): an IBAN
    in groups of four ("NO93 8601 1117 947"), a Norwegian 11-digit account number as 4-2-5 ("8601 11 17947"),
    anything else as it is."""
    text = str(number or "")
    compact = "".join(text.split())
    if _IBAN.fullmatch(compact):
        return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    if _NORWEGIAN_BBAN.fullmatch(compact):
        return f"{compact[:4]} {compact[4:6]} {compact[6:]}"
    return text


@register.filter
def readable_json(body: str) -> str:
    """The body exactly as sent, with line breaks and indentation for reading: the same fields in the same order
    with the same values (characters as themselves, not escaped)."""
    try:
        return json.dumps(json.loads(body), ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return body
