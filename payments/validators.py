"""Validation of a cross-border payment before it reaches the bank (docs/bank-interface.md, spec 2.1-2.6, 8).

Each function takes one value, raises ``django.core.exceptions.ValidationError`` with a plain-words,
translatable message and a stable ``code``, and (where the value has a canonical form) returns that form.
They work as Django field validators (the return value is then ignored) and from services alike; the form
and ``payments.instructions.validate_instruction`` use the same functions, so the rules exist once.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy
from schwifty import BIC, IBAN
from schwifty.exceptions import (
    InvalidAccountCode,
    InvalidBankCode,
    InvalidBranchCode,
    InvalidChecksumDigits,
    InvalidCountryCode,
    InvalidLength,
    InvalidStructure,
    SchwiftyException,
)
from stdnum import luhn

from core.money import minor_units
from payments.spec import COUNTRY_SET, CURRENCY_SET, Limits, PurposeCode, RegulatoryReportingCode

# --- characters the bank cannot process ----------------------------------------------------------------
# The bank says a request may be rejected with 400 when its downstream systems cannot process a character,
# "for example an emoji" (spec section 1). Downstream payment systems commonly store text in 3-byte UTF-8
# (the Basic Multilingual Plane only), so we refuse:
#   - anything outside the BMP (code points above U+FFFF: nearly all emoji, historic scripts);
#   - control characters (Cc: tab, newline, NUL ...), the line and paragraph separators U+2028 and U+2029
#     (Zl, Zp: line breaks by another name, which would break a name or message over lines), format
#     characters (Cf: zero-width joiners, bidi overrides that make a name read differently than it is stored),
#     surrogates (Cs), private-use (Co) and unassigned (Cn) code points;
#   - the emoji that do live in the BMP: variation selectors (which turn a character into an emoji), the
#     Miscellaneous Symbols and Dingbats blocks, and the Miscellaneous Symbols and Arrows block.
_REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cf", "Cs", "Co", "Cn"})
_REFUSED_BMP_RANGES = (
    (0x2600, 0x27BF),  # Miscellaneous Symbols, Dingbats
    (0x2B00, 0x2BFF),  # Miscellaneous Symbols and Arrows
    (0xFE00, 0xFE0F),  # Variation selectors
)


def unprocessable_characters(value: str) -> list[str]:
    """The distinct characters of ``value`` the bank cannot process, in order of appearance."""
    found: list[str] = []
    for char in value:
        point = ord(char)
        refused = (
            point > 0xFFFF
            or unicodedata.category(char) in _REFUSED_CATEGORIES
            or any(low <= point <= high for low, high in _REFUSED_BMP_RANGES)
        )
        if refused and char not in found:
            found.append(char)
    return found


def _describe(char: str) -> str:
    name = unicodedata.name(char, "")
    code = f"U+{ord(char):04X}"
    return f"{code} {name}".strip() if name else code


def validate_processable_text(value: str) -> None:
    """Refuse emoji, control characters and other characters the bank's systems cannot process."""
    found = unprocessable_characters(value)
    if found:
        raise ValidationError(
            _(
                "The bank cannot process some characters in this text (such as emoji or control characters). "
                "Please remove: %(characters)s."
            ),
            code="unprocessable_characters",
            params={"characters": ", ".join(_describe(char) for char in found)},
        )


def _validate_length(value: str, *, max_length: int, min_length: int = 0) -> None:
    length = len(value)
    if length > max_length:
        raise ValidationError(
            ngettext_lazy(
                "Use at most %(limit)d character (this has %(length)d).",
                "Use at most %(limit)d characters (this has %(length)d).",
                "limit",
            ),
            code="max_length",
            params={"limit": max_length, "length": length},
        )
    if length < min_length:
        raise ValidationError(
            ngettext_lazy(
                "Use at least %(limit)d character.",
                "Use at least %(limit)d characters.",
                "limit",
            ),
            code="min_length",
            params={"limit": min_length, "length": length},
        )


def validate_text(value: str, *, max_length: int, min_length: int = 0) -> None:
    """Length (in characters, as the bank counts them) and characters of a free-text field."""
    _validate_length(value, max_length=max_length, min_length=min_length)
    validate_processable_text(value)


def validate_creditor_name(value: str) -> None:
    if not value.strip():
        raise ValidationError(_("Enter the name of the person or company you are paying."), code="required")
    validate_text(value, max_length=Limits.CREDITOR_NAME_MAX)


def validate_street(value: str) -> None:
    validate_text(value, max_length=Limits.STREET_MAX)


def validate_remittance_information(value: str) -> None:
    validate_text(value, max_length=Limits.REMITTANCE_MAX, min_length=Limits.REMITTANCE_MIN)


def validate_message(value: str) -> None:
    """The message the user types: the portal's reference goes in front of it (payments.instructions)."""
    validate_text(value, max_length=Limits.MESSAGE_MAX, min_length=Limits.REMITTANCE_MIN)


def validate_regulatory_reporting_information(value: str) -> None:
    validate_text(value, max_length=Limits.REGULATORY_INFORMATION_MAX)


# --- accounts and banks --------------------------------------------------------------------------------------
_SEPARATORS = re.compile(r"[\s.\-]+")
_LOOKS_LIKE_IBAN = re.compile(r"^[A-Za-z]{2}[0-9]{2}")
_BBAN_CHARACTERS = re.compile(r"^[A-Za-z0-9]+$")


def compact_account_number(value: str) -> str:
    """Without the spaces, dots and hyphens people type for readability (``1234 56 78903``, ``1234.56.78903``)."""
    return _SEPARATORS.sub("", value)


def looks_like_iban(value: str) -> bool:
    """True when the compacted value starts like an IBAN: two letters (country) and two check digits."""
    return bool(_LOOKS_LIKE_IBAN.match(compact_account_number(value)))


def normalise_iban(value: str) -> str:
    """The IBAN in its compact upper-case form, after checking its structure, length and check digits.

    schwifty checks the country's IBAN length and BBAN format (ISO 13616 registry) and the mod-97 check
    digits. The national check digits inside the BBAN are deliberately not checked: schwifty cannot check
    every country, and a stale per-bank algorithm would refuse a real account; mod-97 already catches every
    single-character error and transposition of neighbours.
    """
    compact = compact_account_number(value).upper()
    if len(compact) > Limits.IBAN_MAX:
        raise ValidationError(
            _("An IBAN has at most %(limit)d characters (this has %(length)d)."),
            code="iban_length",
            params={"limit": Limits.IBAN_MAX, "length": len(compact)},
        )
    try:
        iban = IBAN(compact)
    except InvalidCountryCode:
        raise ValidationError(
            _("This IBAN does not start with the code of a country that uses IBANs."), code="iban_country"
        ) from None
    except InvalidLength:
        raise ValidationError(
            _("This IBAN has the wrong number of characters for its country. Check for a missing or extra one."),
            code="iban_length",
        ) from None
    except InvalidChecksumDigits:
        raise ValidationError(
            _("This IBAN is not valid: its check digits do not match. Check it for a typing error."),
            code="iban_checksum",
        ) from None
    except (InvalidStructure, InvalidBankCode, InvalidBranchCode, InvalidAccountCode):
        raise ValidationError(
            _("This IBAN does not have the format its country uses. Check it for a typing error."),
            code="iban_structure",
        ) from None
    except SchwiftyException:
        raise ValidationError(_("This is not a valid IBAN."), code="iban_invalid") from None
    return iban.compact


def validate_iban(value: str) -> None:
    normalise_iban(value)


def normalise_bban(value: str) -> str:
    """A domestic account number (BBAN): letters and digits only, at least one digit, at most 30 characters."""
    compact = compact_account_number(value).upper()
    if not compact:
        raise ValidationError(_("Enter an account number."), code="required")
    if not _BBAN_CHARACTERS.match(compact):
        raise ValidationError(
            _("An account number has only letters and digits (spaces, dots and hyphens are ignored)."),
            code="bban_characters",
        )
    if not any(char.isdigit() for char in compact):  # "hello": not an account number, whatever the BIC
        raise ValidationError(
            _("This is not a valid account number: an account number has digits. Check it, or enter the IBAN."),
            code="bban_invalid",
        )
    if len(compact) > Limits.BBAN_MAX:
        raise ValidationError(
            _("A domestic account number has at most %(limit)d characters (this has %(length)d)."),
            code="bban_length",
            params={"limit": Limits.BBAN_MAX, "length": len(compact)},
        )
    return compact


def validate_bban(value: str) -> None:
    normalise_bban(value)


def normalise_account_number(value: str) -> tuple[str, str]:
    """``("iban", compact)`` or ``("bban", compact)`` for an account number typed as either.

    A value that starts like an IBAN (two letters, two digits) is checked as an IBAN, so a mistyped IBAN is
    reported as such rather than slipping through as a domestic number.
    """
    if looks_like_iban(value):
        return "iban", normalise_iban(value)
    return "bban", normalise_bban(value)


def normalise_bic(value: str) -> str:
    """The BIC (BICFI/SWIFT code) in compact upper case: 8 or 11 characters, a real country code."""
    compact = re.sub(r"\s+", "", value).upper()
    if len(compact) not in (8, 11):
        raise ValidationError(
            _("A BIC (SWIFT code) has 8 or 11 characters (this has %(length)d)."),
            code="bic_length",
            params={"length": len(compact)},
        )
    try:
        bic = BIC(compact)
    except InvalidCountryCode:
        raise ValidationError(
            _("Characters 5 and 6 of a BIC (SWIFT code) are a country code; %(country)s is not one."),
            code="bic_country",
            params={"country": compact[4:6]},
        ) from None
    except SchwiftyException:
        raise ValidationError(
            _(
                "This is not a valid BIC (SWIFT code): 4 letters or digits for the bank, 2 letters for the "
                "country, 2 letters or digits for the location and optionally 3 for the branch."
            ),
            code="bic_invalid",
        ) from None
    return bic.compact


def validate_bic(value: str) -> None:
    normalise_bic(value)


# --- codes from the bank's lists ---------------------------------------------------------------------------
def validate_currency(value: str) -> None:
    if value not in CURRENCY_SET:
        raise ValidationError(
            _("The bank does not accept the currency %(currency)s."),
            code="currency",
            params={"currency": value},
        )


def validate_country(value: str) -> None:
    if len(value) != Limits.COUNTRY_LENGTH or value not in COUNTRY_SET:
        raise ValidationError(
            _("Choose a country from the list (%(country)s is not one the bank accepts)."),
            code="country",
            params={"country": value},
        )


def validate_purpose_code(value: str) -> None:
    if value not in PurposeCode.values:
        raise ValidationError(
            _("Choose a purpose from the list."), code="purpose_code", params={"purpose_code": value}
        )


def validate_regulatory_reporting_code(value: str) -> None:
    if value not in RegulatoryReportingCode.values:
        raise ValidationError(
            _("Choose a payment type code from the list."), code="regulatory_code", params={"code": value}
        )


# --- amount ---------------------------------------------------------------------------------------------------
def validate_amount(amount: Decimal, currency: str) -> None:
    """Positive; contract precision 18 and scale 5; no more fraction digits than the currency's minor unit.

    The value, not the typing, is checked: "100", "100.5" and "100.50" are all valid EUR amounts and the
    request carries each as "100.50"-style text with exactly the currency's digits
    (``payments.instructions.format_amount``); "100.505" EUR or "100.5" JPY are refused.
    """
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValidationError(_("Enter an amount as a number."), code="amount_invalid")
    if amount <= 0:
        raise ValidationError(_("The amount must be more than zero."), code="amount_not_positive")
    digits, exponent = _significant_digits(amount)
    fraction_digits = max(0, -exponent)
    integer_digits = max(0, digits + exponent)
    if fraction_digits > Limits.AMOUNT_DECIMAL_PLACES:
        raise ValidationError(
            _("Use at most %(limit)d decimal places."),
            code="amount_scale",
            params={"limit": Limits.AMOUNT_DECIMAL_PLACES},
        )
    if integer_digits > Limits.AMOUNT_MAX_DIGITS - Limits.AMOUNT_DECIMAL_PLACES:
        raise ValidationError(
            _("This amount is too large: the bank accepts at most %(limit)d digits before the decimal point."),
            code="amount_precision",
            params={"limit": Limits.AMOUNT_MAX_DIGITS - Limits.AMOUNT_DECIMAL_PLACES},
        )
    try:
        places = minor_units(currency)
    except KeyError:
        raise ValidationError(
            _("The bank does not accept the currency %(currency)s."),
            code="currency",
            params={"currency": currency},
        ) from None
    if fraction_digits > places:
        if places == 0:
            message = _("%(currency)s amounts have no decimal places: enter a whole number.")
        else:
            message = ngettext_lazy(
                "%(currency)s amounts have at most %(places)d decimal place.",
                "%(currency)s amounts have at most %(places)d decimal places.",
                "places",
            )
        raise ValidationError(message, code="amount_minor_units", params={"currency": currency, "places": places})


def _significant_digits(amount: Decimal) -> tuple[int, int]:
    """(number of digits, exponent) of ``amount`` without trailing fractional zeros: 100.50 -> (4, -1).

    Computed from the digit tuple rather than ``Decimal.normalize()``, which rounds to the context precision.
    """
    _sign, digit_tuple, exponent = amount.as_tuple()
    assert isinstance(exponent, int)  # finite, checked by the caller
    digits = list(digit_tuple)
    while exponent < 0 and len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exponent += 1
    return len(digits), exponent


# --- dates -------------------------------------------------------------------------------------------------
OSLO = ZoneInfo("Europe/Oslo")


# --- KID (kundeidentifikasjon): the customer reference of a Norwegian invoice ---------------------------------

KID_MIN, KID_MAX = 2, 25
_KID_FORM = re.compile(r"[0-9]{1,24}[0-9-]", re.ASCII)


def _kid_mod11(body: str) -> str:
    """The MOD11 check character: weights 2, 3, 4, 5, 6, 7 from the right, repeating; "-" when it would be 10."""
    total = sum(int(digit) * (2 + position % 6) for position, digit in enumerate(reversed(body)))
    remainder = (11 - total % 11) % 11
    return "-" if remainder == 10 else str(remainder)


def normalise_kid(value: str) -> str:
    """A KID as typed ("2026 1145") -> its compact form ("20261145"), or ValidationError.

    2 to 25 digits, the last a check digit by MOD10 (Luhn, stdnum.luhn) or MOD11 (a "-" when MOD11 gives 10):
    the invoice's issuer agreed one of them with its bank, and a bank accepts either.
    """
    compact = "".join(value.split())
    if not (KID_MIN <= len(compact) <= KID_MAX and _KID_FORM.fullmatch(compact)):
        raise ValidationError(
            _("A KID has 2 to 25 digits. Copy it from the invoice, without letters."), code="kid_format"
        )
    body, check = compact[:-1], compact[-1]
    if check != _kid_mod11(body) and (check == "-" or luhn.calc_check_digit(body) != check):
        raise ValidationError(
            _("This KID is not valid: its last digit does not match the others. Check it against the invoice."),
            code="kid_check_digit",
        )
    return compact


def oslo_today() -> date:
    """Today's calendar date in Norway: the bank's business calendar, whatever the server's or user's zone."""
    return timezone.localdate(timezone=OSLO)


def latest_execution_date(today: date) -> date:
    """The furthest execution date the bank accepts: the same day a year later (28 February for 29 February).
    The bank refuses a later one with EXECUTION_DATE_INVALID (docs/bank-interface.md)."""
    try:
        return today.replace(year=today.year + 1)
    except ValueError:
        return today.replace(year=today.year + 1, day=28)


def _date_in_language(value: date):
    """The date as the page's language writes it (tpp_portal/formats: 01.12.2026 in bokmål, 1 Dec 2026 in
    English), formatted when the message is shown, not in ISO's 2026-12-01."""
    return lazy(date_format, str)(value, "DATE_FORMAT")


def validate_execution_date(value: date, *, today: date | None = None) -> None:
    """Not before today's date in Norway (the bank executes by its own calendar, whatever the user's clock), and
    not further ahead than the bank accepts."""
    today = today or oslo_today()
    if value < today:
        raise ValidationError(
            _("The execution date cannot be in the past (today is %(today)s in Norway)."),
            code="execution_date_past",
            params={"today": _date_in_language(today)},
        )
    latest = latest_execution_date(today)
    if value > latest:
        raise ValidationError(
            _("The bank accepts an execution date at most one year ahead: %(latest)s at the latest."),
            code="execution_date_too_far",
            params={"latest": _date_in_language(latest)},
        )
