"""Every validator with good and bad values; property-based tests for the amount and IBAN rules."""

from __future__ import annotations

import string
from datetime import date
from decimal import Decimal, localcontext

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from schwifty import IBAN

import bank_spec
from core.money import minor_units
from payments import validators as v
from payments.spec import COUNTRIES, CURRENCIES, Limits


def codes(exc: pytest.ExceptionInfo) -> list[str]:
    return [error.code for error in exc.value.error_list]


def message(exc: pytest.ExceptionInfo) -> str:
    return " ".join(str(m) for m in exc.value.messages)


# --- characters -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["Müller & Søn AS", "Ærlig Øl Åsen", "José Núñez", "Zoë O'Brien-Smith", "北京公司", "Ελληνικά", "Café 100 %"],
)
def test_text_the_bank_can_process_is_accepted(text):
    v.validate_processable_text(text)


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        ("Payment 😀", "U+1F600"),  # emoji outside the BMP
        ("Thanks 👍🏽", "U+1F44D"),  # emoji with a skin-tone modifier
        ("Love ❤", "U+2764"),  # BMP dingbat emoji
        ("Sun ☀️", "U+FE0F"),  # variation selector making an emoji
        ("Line\nbreak", "U+000A"),  # control character
        ("Tab\there", "U+0009"),
        ("Line\u2028separator", "U+2028"),  # Zl: a line break by another name
        ("Paragraph\u2029separator", "U+2029"),  # Zp
        ("evil\u202etxt.exe", "U+202E"),  # bidi override
        ("zero\u200bwidth", "U+200B"),
        ("private \ue000", "U+E000"),
        ("Gothic 𐌰", "U+10330"),  # non-BMP letter
    ],
)
def test_unprocessable_characters_are_refused_and_named(text, culprit):
    with pytest.raises(ValidationError) as exc:
        v.validate_processable_text(text)
    assert codes(exc) == ["unprocessable_characters"]
    assert culprit in message(exc)


@given(st.text(alphabet=st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF), min_size=1))
def test_any_character_outside_the_bmp_is_refused(text):
    with pytest.raises(ValidationError):
        v.validate_processable_text("ok " + text)


# --- lengths ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("validator", "limit"),
    [
        # The spec's section 8 figures, written out: a change in spec.py must show up here.
        (v.validate_creditor_name, 70),
        (v.validate_street, 70),
        (v.validate_remittance_information, 140),
        (v.validate_regulatory_reporting_information, 140),
    ],
)
def test_limited_fields_accept_the_limit_and_refuse_one_more(validator, limit):
    validator("æ" * limit)  # characters, not bytes
    with pytest.raises(ValidationError) as exc:
        validator("æ" * (limit + 1))
    assert codes(exc) == ["max_length"]
    assert f"at most {limit} characters (this has {limit + 1})" in message(exc)


def test_remittance_information_is_one_to_140_characters():
    v.validate_remittance_information("x")
    with pytest.raises(ValidationError) as exc:
        v.validate_remittance_information("")
    assert codes(exc) == ["min_length"]


def test_creditor_name_cannot_be_blank():
    with pytest.raises(ValidationError) as exc:
        v.validate_creditor_name("   ")
    assert codes(exc) == ["required"]


# --- IBAN, BBAN, BIC -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("typed", "compact"),
    [
        ("DE89 3704 0044 0532 0130 00", "DE89370400440532013000"),
        ("de89370400440532013000", "DE89370400440532013000"),
        ("NO93 8601 1117 947", "NO9386011117947"),
        ("GB33BUKB20201555555555", "GB33BUKB20201555555555"),
        ("MT84MALT011000012345MTLCAST001S", "MT84MALT011000012345MTLCAST001S"),  # 31 characters
    ],
)
def test_valid_ibans_are_normalised(typed, compact):
    assert v.normalise_iban(typed) == compact


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("DE89370400440532013001", "iban_checksum"),  # last digit changed
        ("DE98370400440532013000", "iban_checksum"),  # check digits swapped
        ("DE8937040044053201300", "iban_length"),  # one digit missing
        ("XX89370400440532013000", "iban_country"),
        ("GB33BUKB2020155555555X", "iban_structure"),  # letter where the UK format has a digit
        ("DE89" + "1" * 31, "iban_length"),  # 35 characters: over the spec's 34
    ],
)
def test_invalid_ibans_are_refused_with_a_reason(value, code):
    with pytest.raises(ValidationError) as exc:
        v.normalise_iban(value)
    assert codes(exc) == [code]


IBAN_COUNTRIES = ["DE", "NO", "GB", "FR", "ES", "IT", "NL", "SE", "DK", "PL", "CH", "AT", "BE"]


@st.composite
def valid_ibans(draw):
    country = draw(st.sampled_from(IBAN_COUNTRIES))
    seed = draw(st.integers(min_value=0, max_value=2**32))
    import random

    return str(IBAN.random(country_code=country, random=random.Random(seed), use_registry=False))


@settings(max_examples=150, deadline=None)
@given(valid_ibans())
def test_property_every_generated_iban_is_valid_and_round_trips(iban):
    assert v.normalise_iban(iban) == iban
    spaced = " ".join(iban[i : i + 4] for i in range(0, len(iban), 4)).lower()
    assert v.normalise_iban(spaced) == iban


@settings(max_examples=150, deadline=None)
@given(valid_ibans(), st.data())
def test_property_any_single_character_change_is_caught(iban, data):
    position = data.draw(st.integers(min_value=2, max_value=len(iban) - 1))
    alphabet = string.digits if iban[position].isdigit() else string.ascii_uppercase
    replacement = data.draw(st.sampled_from([c for c in alphabet if c != iban[position]]))
    changed = iban[:position] + replacement + iban[position + 1 :]
    with pytest.raises(ValidationError):
        v.normalise_iban(changed)


@settings(max_examples=100, deadline=None)
@given(valid_ibans(), st.data())
def test_property_swapping_two_different_neighbouring_digits_is_caught(iban, data):
    # ISO 7064 MOD 97-10 catches every transposition of two different adjacent digits (the difference is
    # 9 * (a - b) * 10^k, never a multiple of the prime 97). A letter swapped with a digit changes the length of
    # the numeric expansion and is not always caught, so only digit pairs are drawn.
    candidates = [
        i
        for i in range(4, len(iban) - 1)
        if iban[i] != iban[i + 1] and iban[i].isdigit() and iban[i + 1].isdigit()
    ]
    assume(candidates)
    position = data.draw(st.sampled_from(candidates))
    swapped = iban[:position] + iban[position + 1] + iban[position] + iban[position + 2 :]
    with pytest.raises(ValidationError):
        v.normalise_iban(swapped)


@pytest.mark.parametrize(
    ("typed", "compact"),
    [
        ("1234.56.78903", "12345678903"),
        ("1234 56 78903", "12345678903"),
        ("abc-123", "ABC123"),
        ("9" * 30, "9" * 30),
    ],
)
def test_bbans_are_normalised(typed, compact):
    assert v.normalise_bban(typed) == compact


@pytest.mark.parametrize(
    ("value", "code"),
    [("9" * 31, "bban_length"), ("1234/5678", "bban_characters"), ("", "required"), ("12é4", "bban_characters")],
)
def test_invalid_bbans_are_refused(value, code):
    with pytest.raises(ValidationError) as exc:
        v.normalise_bban(value)
    assert codes(exc) == [code]


def test_account_number_is_read_as_iban_when_it_starts_like_one():
    assert v.normalise_account_number("DE89 3704 0044 0532 0130 00") == ("iban", "DE89370400440532013000")
    assert v.normalise_account_number("8601.11.17947") == ("bban", "86011117947")
    with pytest.raises(ValidationError) as exc:  # a mistyped IBAN is not taken for a BBAN
        v.normalise_account_number("DE89370400440532013001")
    assert codes(exc) == ["iban_checksum"]


@pytest.mark.parametrize(
    ("typed", "compact"),
    [("DEUTDEFF", "DEUTDEFF"), ("deutdeff500", "DEUTDEFF500"), ("DNBA NOKK XXX", "DNBANOKKXXX")],
)
def test_valid_bics(typed, compact):
    assert v.normalise_bic(typed) == compact


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("DEUTDEF", "bic_length"),
        ("DEUTDEFF5", "bic_length"),
        ("DEUTXXFF", "bic_country"),
        ("DE-TDEFF", "bic_invalid"),
        ("DEUTDEFFÆ12", "bic_invalid"),
    ],
)
def test_invalid_bics(value, code):
    with pytest.raises(ValidationError) as exc:
        v.normalise_bic(value)
    assert codes(exc) == [code]


# --- codes from the bank's lists ------------------------------------------------------------------------------
@pytest.mark.parametrize("currency", ["NOK", "EUR", "JPY", "SPL", "XDR", "ZWD"])
def test_currencies_of_the_list_are_accepted(currency):
    v.validate_currency(currency)


@pytest.mark.parametrize("currency", ["BYN", "eur", "EURO", "", "XAU", "VES"])
def test_currencies_outside_the_list_are_refused(currency):
    with pytest.raises(ValidationError) as exc:
        v.validate_currency(currency)
    assert codes(exc) == ["currency"]


@pytest.mark.parametrize("country", ["NO", "DE", "AX", "SS", "EH"])
def test_countries_of_the_list_are_accepted(country):
    v.validate_country(country)


@pytest.mark.parametrize("country", ["XK", "no", "NOR", "", "EU", "UK"])
def test_countries_outside_the_list_are_refused(country):
    with pytest.raises(ValidationError) as exc:
        v.validate_country(country)
    assert codes(exc) == ["country"]


def test_purpose_and_regulatory_codes():
    v.validate_purpose_code("SUPP")
    v.validate_regulatory_reporting_code("29")
    with pytest.raises(ValidationError):
        v.validate_purpose_code("GDDS")
    with pytest.raises(ValidationError):
        v.validate_regulatory_reporting_code("30")


# --- amount ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("amount", "currency"),
    [
        ("150000", "NOK"),
        ("150000.5", "NOK"),
        ("150000.50", "NOK"),
        ("1500", "JPY"),
        ("1500.00", "JPY"),  # trailing zeros do not add precision
        ("1.234", "KWD"),
        ("0.01", "EUR"),
        ("9999999999999.99", "EUR"),  # 13 digits before the point: precision 18, scale 5
        ("12", "CLP"),
        ("3.5", "XDR"),  # our documented choice: 2
        ("10.25", "SPL"),
    ],
)
def test_valid_amounts(amount, currency):
    v.validate_amount(Decimal(amount), currency)


@pytest.mark.parametrize(
    ("amount", "currency", "code"),
    [
        ("100.505", "EUR", "amount_minor_units"),
        ("100.5", "JPY", "amount_minor_units"),
        ("1.2345", "KWD", "amount_minor_units"),
        ("0", "NOK", "amount_not_positive"),
        ("-5", "NOK", "amount_not_positive"),
        ("0.000001", "NOK", "amount_scale"),
        ("10000000000000", "NOK", "amount_precision"),  # 14 digits before the point
        ("NaN", "NOK", "amount_invalid"),
        ("Infinity", "NOK", "amount_invalid"),
    ],
)
def test_invalid_amounts(amount, currency, code):
    with pytest.raises(ValidationError) as exc:
        v.validate_amount(Decimal(amount), currency)
    assert codes(exc) == [code]


def test_minor_unit_messages_are_plain_words():
    with pytest.raises(ValidationError) as exc:
        v.validate_amount(Decimal("100.5"), "JPY")
    assert message(exc) == "JPY amounts have no decimal places: enter a whole number."
    with pytest.raises(ValidationError) as exc:
        v.validate_amount(Decimal("100.505"), "EUR")
    assert message(exc) == "EUR amounts have at most 2 decimal places."


def test_every_listed_currency_has_minor_units():
    for currency in CURRENCIES:
        assert minor_units(currency) in (0, 2, 3, 4), currency


@settings(max_examples=300, deadline=None)
@given(
    currency=st.sampled_from(CURRENCIES),
    units=st.integers(min_value=1, max_value=10**13 - 1),
    extra_places=st.integers(min_value=0, max_value=5),
)
def test_property_amounts_within_the_minor_units_are_valid_and_beyond_are_not(currency, units, extra_places):
    places = minor_units(currency)
    # `units` in the smallest unit of the currency, limited to 13 integer digits.
    amount = Decimal(units).scaleb(-places)
    v.validate_amount(amount, currency)
    # One more significant fraction digit (ending in 1, so it is not a trailing zero) is refused.
    finer = amount + Decimal(1).scaleb(-(places + 1 + extra_places))
    if places + 1 + extra_places <= Limits.AMOUNT_DECIMAL_PLACES:
        with pytest.raises(ValidationError) as exc:
            v.validate_amount(finer, currency)
        assert codes(exc) == ["amount_minor_units"]
    else:
        with pytest.raises(ValidationError) as exc:
            v.validate_amount(finer, currency)
        assert codes(exc) == ["amount_scale"]


@settings(max_examples=200, deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False, min_value=Decimal("0.00001"), max_value=Decimal("1e13")))
def test_property_validation_matches_the_rule_for_any_decimal(amount):
    # The oracle computes exactly (a wide context): Decimal.normalize() would round long values.
    with localcontext() as context:
        context.prec = 200
        whole_cents = amount == amount.quantize(Decimal("0.01"))
        integer_digits = len(str(int(amount)))
    if whole_cents and integer_digits <= 13:
        v.validate_amount(amount, "EUR")
    else:
        with pytest.raises(ValidationError):
            v.validate_amount(amount, "EUR")


@pytest.mark.parametrize(
    "amount",
    # 13 integer digits, then fraction digits far past the default 28-digit context precision.
    ["1234567890123.000000000000000000000001", "0." + "0" * 40 + "1", "1234567890123." + "0" * 40],
)
def test_long_values_are_judged_exactly_not_rounded(amount):
    value = Decimal(amount)
    if value == value.to_integral_value():
        v.validate_amount(value, "EUR")
    else:
        with pytest.raises(ValidationError):
            v.validate_amount(value, "EUR")


# --- dates -------------------------------------------------------------------------------------------------
def test_execution_date_today_or_later_is_accepted():
    v.validate_execution_date(date(2026, 11, 20), today=date(2026, 11, 20))
    v.validate_execution_date(date(2027, 1, 4), today=date(2026, 11, 20))


def test_execution_date_in_the_past_is_refused():
    with pytest.raises(ValidationError) as exc:
        v.validate_execution_date(date(2026, 11, 19), today=date(2026, 11, 20))
    assert codes(exc) == ["execution_date_past"]
    assert "20 Nov 2026" in message(exc)


def test_the_execution_date_messages_write_the_date_as_the_language_does():
    with pytest.raises(ValidationError) as past:
        v.validate_execution_date(date(2026, 11, 30), today=date(2026, 12, 1))
    with pytest.raises(ValidationError) as far:
        v.validate_execution_date(date(2027, 12, 2), today=date(2026, 12, 1))
    with translation.override("nb"):
        assert message(past) == "Betalingsdatoen kan ikke være tilbake i tid (i dag er det 01.12.2026 i Norge)."
        assert "01.12.2027" in message(far)
        assert "2026-12-01" not in message(past)
    with translation.override("en"):
        assert "1 Dec 2026" in message(past)
        assert "1 Dec 2027" in message(far)


def test_today_is_the_calendar_date_in_oslo(monkeypatch):
    from datetime import UTC, datetime

    from django.utils import timezone

    # 23:30 UTC on 31 December is already 1 January in Oslo (UTC+1).
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 12, 31, 23, 30, tzinfo=UTC))
    assert v.oslo_today() == date(2027, 1, 1)
    with pytest.raises(ValidationError):
        v.validate_execution_date(date(2026, 12, 31))
    # In summer Oslo is UTC+2: 22:30 UTC on 30 June is 1 July.
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 6, 30, 22, 30, tzinfo=UTC))
    assert v.oslo_today() == date(2026, 7, 1)


# --- the bank's lists, word for word ------------------------------------------------------------------------
# Spec sections 2.5 and 2.6 (the bank's interface specification, "Currency values" and "Country values") are
# written once, in bank_spec, whose test pins them word for word and in the spec's order
# (tests/bank_spec/test_bank_spec.py). The portal validates against those very lists.


def test_spec_lists_are_the_banks_word_for_word():
    currencies, countries = list(bank_spec.CURRENCIES), list(bank_spec.COUNTRIES)
    assert list(CURRENCIES) == currencies  # same codes, same order
    assert list(COUNTRIES) == countries
    assert len(currencies) == len(set(currencies)) == 162
    assert len(countries) == len(set(countries)) == 249
    assert (currencies[0], currencies[-1], countries[0], countries[-1]) == ("AED", "ZWD", "AF", "ZW")
