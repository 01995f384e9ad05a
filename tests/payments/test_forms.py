"""CrossBorderPaymentForm: each error beside its field, and the exact JSON body the bank will receive."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest
from django.utils import translation
from hypothesis import given
from hypothesis import strategies as st

from core.money import minor_units
from payments.forms import CrossBorderPaymentForm, DebtorAccountOption
from payments.instructions import (
    AccountReference,
    CreditorAddress,
    PaymentInstruction,
    format_amount,
    initiation_body,
    initiation_body_json,
    payment_initiation,
    validate_instruction,
)
from payments.spec import CURRENCIES
from tests.payments.conftest import TODAY
from xs2a.services.payments import initiation_bytes

pytestmark = pytest.mark.django_db

GERMAN_IBAN = "DE89370400440532013000"
ALICE_ACCOUNTS = [
    DebtorAccountOption(key="acc-1", label="Brukskonto 1234.56.78903", currency="NOK", iban="NO9386011117947"),
    DebtorAccountOption(key="acc-2", label="Valutakonto EUR", currency="EUR", bban="12345678903"),
]


def typed(**overrides):
    """A complete payment-only journey: 150 000 NOK to a German IBAN with code 29."""
    data = {
        "debtor_account": "NO93 8601 1117 947",
        "debtor_account_currency": "NOK",
        "amount": "150000",
        "currency": "NOK",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": "DE89 3704 0044 0532 0130 00",
        "creditor_account_currency": "EUR",
        "creditor_agent": "cobadeffxxx",
        "creditor_street": "Hauptstraße",
        "creditor_building_number": "12a",
        "creditor_postal_code": "10115",
        "creditor_city": "Berlin",
        "creditor_country": "DE",
        "remittance_information": "Rechnung 2026-1187",
        "purpose_code": "SUPP",
        "requested_execution_date": "2026-11-24",
        "regulatory_reporting_code": "29",
        "regulatory_reporting_information": "Consulting services, November 2026",
    }
    data.update(overrides)
    return CrossBorderPaymentForm(data={k: v for k, v in data.items() if v is not None}, today=TODAY)


def errors(form) -> dict[str, list[str]]:
    assert not form.is_valid()
    return {field: [str(e) for e in errs] for field, errs in form.errors.items()}


def codes(form, field) -> list[str]:
    return [e.code for e in form.errors.as_data()[field]]


def test_a_complete_payment_gives_the_exact_body():
    form = typed()
    assert form.is_valid(), form.errors
    assert form.bank_body() == {
        "instructedAmount": {"amount": "150000.00", "currency": "NOK"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAgent": "COBADEFFXXX",
        "creditorAccount": {"iban": GERMAN_IBAN, "currency": "EUR"},
        "creditorAddress": {
            "street": "Hauptstraße",
            "buildingNumber": "12a",
            "postalCode": "10115",
            "city": "Berlin",
            "country": "DE",
        },
        "debtorAccount": {"iban": "NO9386011117947", "currency": "NOK"},
        "remittanceInformationUnstructured": "Rechnung 2026-1187",
        "purposeCode": "SUPP",
        "requestedExecutionDate": "2026-11-24",
        "regulatoryReportingCode": "29",
        "regulatoryReportingInformation": "Consulting services, November 2026",
    }
    # The exact bytes: the spec's key order, compact, UTF-8 as is.
    assert (
        form.bank_body_json()
        == (
            '{"instructedAmount":{"amount":"150000.00","currency":"NOK"},'
            '"creditorName":"Müller Maschinenbau GmbH",'
            '"creditorAgent":"COBADEFFXXX","creditorAccount":{"iban":"DE89370400440532013000","currency":"EUR"},'
            '"creditorAddress":{"street":"Hauptstraße","buildingNumber":"12a","postalCode":"10115","city":"Berlin",'
            '"country":"DE"},"debtorAccount":{"iban":"NO9386011117947","currency":"NOK"},'
            '"remittanceInformationUnstructured":"Rechnung 2026-1187","purposeCode":"SUPP",'
            '"requestedExecutionDate":"2026-11-24","regulatoryReportingCode":"29",'
            '"regulatoryReportingInformation":"Consulting services, November 2026"}'
        ).encode()
    )
    assert form.reporting_requirement.required


def test_optional_fields_are_left_out_when_empty(eur_rate):  # a published rate: 2 500 EUR needs no code
    form = typed(
        amount="2500.5",
        currency="EUR",
        creditor_account_currency="",
        creditor_agent="",
        creditor_street="",
        creditor_building_number="",
        creditor_postal_code="",
        creditor_city="",
        creditor_country="",
        remittance_information="   ",
        purpose_code="",
        requested_execution_date="",
        regulatory_reporting_code="",
        regulatory_reporting_information="",
    )
    assert form.is_valid(), form.errors
    assert form.bank_body() == {
        "instructedAmount": {"amount": "2500.50", "currency": "EUR"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAccount": {"iban": GERMAN_IBAN, "currency": "EUR"},  # the payment's currency by default
        "debtorAccount": {"iban": "NO9386011117947", "currency": "NOK"},
    }


def test_address_with_only_a_country():
    form = typed(creditor_street="", creditor_building_number="", creditor_postal_code="", creditor_city="")
    assert form.is_valid(), form.errors
    assert form.bank_body()["creditorAddress"] == {"country": "DE"}


def test_amounts_carry_exactly_the_currencys_minor_units():
    jpy = typed(amount="1 500 000", currency="JPY", creditor_account_currency="JPY")
    assert jpy.is_valid(), jpy.errors
    assert jpy.bank_body()["instructedAmount"] == {"amount": "1500000", "currency": "JPY"}
    kwd = typed(
        amount="12500.5", currency="KWD", regulatory_reporting_code="", regulatory_reporting_information=""
    )
    # KWD is not quoted by Norges Bank: no rate, so reporting is required.
    assert codes(kwd, "regulatory_reporting_code") == ["regulatory_code_required"]
    kwd = typed(amount="12500.5", currency="KWD")
    assert kwd.is_valid(), kwd.errors
    assert kwd.bank_body()["instructedAmount"] == {"amount": "12500.500", "currency": "KWD"}


def test_norwegian_number_format_is_understood():
    with translation.override("nb"):
        form = typed(amount="150 000,5")
        assert form.is_valid(), form.errors
    assert form.bank_body()["instructedAmount"]["amount"] == "150000.50"


@pytest.mark.parametrize("typed_amount", ["150.000", "1.250,50", "150.5", "100.000000"])
def test_in_norwegian_a_point_is_refused_not_read_as_decimals(typed_amount):
    """ "150.000" is 150 000 to a Norwegian reader; it must not become a payment of 150.00."""
    with translation.override("nb"):
        form = typed(amount=typed_amount)
        assert not form.is_valid()
        assert codes(form, "amount") == ["point_in_comma_locale"]
        assert set(form.errors) == {"amount"}
    with translation.override("en"):
        message = str(form.fields["amount"].error_messages["point_in_comma_locale"])
    assert "use a comma for decimals" in message


@pytest.mark.parametrize("typed_amount", ["150,000", "1,250.50", "150,5"])
def test_in_english_a_comma_is_refused_not_guessed(typed_amount):
    with translation.override("en"):
        form = typed(amount=typed_amount)
        assert not form.is_valid()
        assert codes(form, "amount") == ["comma_in_point_locale"]
        assert "Write the amount without commas" in form.errors["amount"][0]


@pytest.mark.parametrize(
    ("language", "typed_amount", "amount"),
    [("nb", "150 000", "150000.00"), ("nb", "150000,00", "150000.00"), ("en", "150 000.5", "150000.50")],
)
def test_the_active_decimal_separator_and_spaces_are_accepted(language, typed_amount, amount):
    with translation.override(language):
        form = typed(amount=typed_amount)
        assert form.is_valid(), form.errors
    assert form.bank_body()["instructedAmount"]["amount"] == amount


def test_zeros_beyond_five_decimal_places_are_only_typing():
    """validate_amount checks the value, not the typing: 100.000000 is 100, a valid amount."""
    form = typed(amount="150000.000000", currency="NOK")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["amount"] == Decimal("150000")
    assert form.bank_body()["instructedAmount"]["amount"] == "150000.00"
    refused = typed(amount="150000.000001")
    assert codes(refused, "amount") == ["max_decimal_places"]


def test_consented_accounts_are_a_choice():
    data = {
        "debtor_account": "acc-2",
        "amount": "150000",
        "currency": "NOK",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": GERMAN_IBAN,
        "regulatory_reporting_code": "29",
        "regulatory_reporting_information": "Services",
    }
    form = CrossBorderPaymentForm(data=data, debtor_accounts=ALICE_ACCOUNTS, today=TODAY)
    assert "debtor_account_currency" not in form.fields
    assert next(iter(form.fields)) == "debtor_account"
    assert form.is_valid(), form.errors
    assert form.bank_body()["debtorAccount"] == {"bban": "12345678903", "currency": "EUR"}

    stranger = CrossBorderPaymentForm(
        data={**data, "debtor_account": "someone-elses"}, debtor_accounts=ALICE_ACCOUNTS, today=TODAY
    )
    assert errors(stranger)["debtor_account"] == ["Choose one of your accounts."]


@pytest.mark.parametrize(
    ("overrides", "field", "code"),
    [
        ({"creditor_account": "DE89370400440532013001"}, "creditor_account", "iban_checksum"),
        ({"creditor_account": "DE8937040044053201300"}, "creditor_account", "iban_length"),
        ({"creditor_account": "1234/5678"}, "creditor_account", "bban_characters"),
        ({"creditor_account": "9" * 31}, "creditor_account", "bban_length"),
        ({"creditor_account": "12345678", "creditor_agent": ""}, "creditor_agent", "bban_requires_agent"),
        ({"creditor_agent": "COBADEF"}, "creditor_agent", "bic_length"),
        ({"creditor_agent": "COBAXXFF"}, "creditor_agent", "bic_country"),
        ({"creditor_name": "A" * 71}, "creditor_name", "max_length"),
        ({"creditor_name": ""}, "creditor_name", "required"),
        ({"creditor_name": "Happy Company 😀"}, "creditor_name", "unprocessable_characters"),
        ({"creditor_street": "S" * 71}, "creditor_street", "max_length"),
        ({"creditor_city": "Berlin\u202e"}, "creditor_city", "unprocessable_characters"),
        ({"creditor_country": "XK"}, "creditor_country", "invalid_choice"),
        ({"creditor_country": ""}, "creditor_country", "address_country_required"),
        # 129: the portal's reference and a space go in front of the message (140 in all).
        ({"remittance_information": "R" * 130}, "remittance_information", "max_length"),
        ({"remittance_information": "Takk 🎉"}, "remittance_information", "unprocessable_characters"),
        ({"regulatory_reporting_information": "I" * 141}, "regulatory_reporting_information", "max_length"),
        ({"regulatory_reporting_code": "30"}, "regulatory_reporting_code", "invalid_choice"),
        ({"regulatory_reporting_code": ""}, "regulatory_reporting_code", "regulatory_code_required"),
        (
            {"regulatory_reporting_information": ""},
            "regulatory_reporting_information",
            "regulatory_information_required",
        ),
        ({"purpose_code": "GDDS"}, "purpose_code", "invalid_choice"),
        ({"requested_execution_date": "2026-11-19"}, "requested_execution_date", "execution_date_past"),
        ({"requested_execution_date": "24.13.2026"}, "requested_execution_date", "invalid"),
        ({"currency": "BYN"}, "currency", "invalid_choice"),
        ({"amount": "150000.505"}, "amount", "amount_minor_units"),
        ({"amount": "1500.5", "currency": "JPY"}, "amount", "amount_minor_units"),
        ({"amount": "0"}, "amount", "amount_not_positive"),
        ({"amount": "-100"}, "amount", "amount_not_positive"),
        ({"amount": "0.000001"}, "amount", "max_decimal_places"),
        ({"amount": "12345678901234"}, "amount", "max_whole_digits"),
        ({"amount": "abc"}, "amount", "invalid"),
        ({"amount": ""}, "amount", "required"),
        ({"debtor_account": "DE89370400440532013000"}, "debtor_account", "debtor_not_norwegian"),
        ({"debtor_account": "86011117948"}, "debtor_account", "debtor_bban_invalid"),
        ({"debtor_account": "NO9386011117948"}, "debtor_account", "iban_checksum"),
    ],
)
def test_each_error_is_beside_its_field(overrides, field, code):
    form = typed(**overrides)
    assert not form.is_valid()
    assert field in form.errors, form.errors
    assert code in codes(form, field), form.errors.as_data()[field]
    # Only the field at fault (and no other) carries an error.
    assert set(form.errors) == {field}, form.errors


def test_messages_are_plain_words():
    form = typed(creditor_name="Ωmega 😀", amount="1500.5", currency="JPY", creditor_account_currency="JPY")
    assert errors(form) == {
        "creditor_name": [
            "The bank cannot process some characters in this text (such as emoji or control characters). "
            "Please remove: U+1F600 GRINNING FACE."
        ],
        "amount": ["JPY amounts have no decimal places: enter a whole number."],
    }


def test_an_address_part_with_an_error_still_asks_for_the_country():
    form = typed(
        creditor_city="Berlin 🐻",
        creditor_country="",
        creditor_street="",
        creditor_building_number="",
        creditor_postal_code="",
    )
    assert codes(form, "creditor_city") == ["unprocessable_characters"]
    assert codes(form, "creditor_country") == ["address_country_required"]


def test_an_error_on_a_field_is_not_doubled_by_a_cross_field_rule():
    # An invalid BIC with a BBAN: one message (the BIC's), not also "BBAN requires a BIC".
    form = typed(creditor_account="12345678", creditor_agent="XX")
    assert codes(form, "creditor_agent") == ["bic_length"]


# --- the threshold in the form -------------------------------------------------------------------------------
def test_reporting_fields_are_optional_below_the_threshold():
    form = typed(amount="99999.99", regulatory_reporting_code="", regulatory_reporting_information="")
    assert form.is_valid(), form.errors
    assert "regulatoryReportingCode" not in form.bank_body()
    assert not form.reporting_requirement.required


def test_reporting_below_the_threshold_needs_both_or_neither():
    form = typed(amount="500", regulatory_reporting_information="")
    assert codes(form, "regulatory_reporting_information") == ["regulatory_information_missing"]
    form = typed(amount="500", regulatory_reporting_code="")
    assert codes(form, "regulatory_reporting_code") == ["regulatory_code_missing"]


def test_foreign_amount_within_the_margin_requires_reporting(eur_rate):
    # 8 500 EUR at 11.50 = 97 750 NOK: under 100 000 but within the 5 % margin.
    form = typed(amount="8500", currency="EUR", regulatory_reporting_code="", regulatory_reporting_information="")
    assert set(errors(form)) == {"regulatory_reporting_code", "regulatory_reporting_information"}
    assert "about 97 750 NOK" in str(form.errors["regulatory_reporting_code"][0])
    below = typed(amount="8000", currency="EUR", regulatory_reporting_code="", regulatory_reporting_information="")
    assert below.is_valid(), below.errors  # 92 000 NOK


def test_the_form_without_a_valid_amount_cannot_give_a_body():
    form = typed(amount="abc")
    with pytest.raises(ValueError, match="errors"):
        form.bank_body()


def test_choices_show_meanings_and_names():
    form = CrossBorderPaymentForm(today=TODAY)
    flat = {
        code: label
        for _group, options in form.fields["regulatory_reporting_code"].choices[1:]
        for code, label in options
    }
    assert flat["29"] == "29 - Other purchase or sale of services (Annet kjøp/salg av tjenester)"
    assert len(flat) == 16
    currencies = {code: label for _group, options in form.fields["currency"].choices for code, label in options}
    assert currencies["EUR"] == "EUR - Euro" and next(iter(currencies)) == "NOK"
    assert set(currencies) < set(CURRENCIES) and "HRK" not in currencies  # the current ISO 4217 codes only
    countries = dict(form.fields["creditor_country"].choices)
    assert countries["DE"] == "Germany" and len(countries) == 250  # 249 and the empty choice
    with translation.override("nb"):
        assert dict(CrossBorderPaymentForm(today=TODAY).fields["creditor_country"].choices)["DE"] == "Tyskland"


# --- the same rules for services --------------------------------------------------------------------------------
def instruction(**overrides) -> PaymentInstruction:
    values = {
        "debtor_account": AccountReference(currency="NOK", iban="NO9386011117947"),
        "amount": Decimal("150000"),
        "currency": "NOK",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": AccountReference(currency="EUR", iban=GERMAN_IBAN),
        "regulatory_reporting_code": "29",
        "regulatory_reporting_information": "Services",
    }
    values.update(overrides)
    return PaymentInstruction(**values)


def test_validate_instruction_accepts_a_good_one_and_returns_the_decision():
    assert validate_instruction(instruction(), today=TODAY).required


def test_validate_instruction_names_every_failing_field():
    bad = instruction(
        amount=Decimal("10.5"),
        currency="JPY",
        creditor_name="x" * 71,
        creditor_account=AccountReference(currency="EUR", bban="1234"),
        creditor_address=CreditorAddress(country="XK", street="s" * 71),
        remittance_information="🎉",
        requested_execution_date=date(2026, 11, 1),
        regulatory_reporting_code="99",
    )
    with pytest.raises(Exception) as exc:
        validate_instruction(bad, today=TODAY)
    assert set(exc.value.message_dict) == {
        "amount",
        "creditor_name",
        "creditor_agent",
        "creditor_country",
        "creditor_street",
        "remittance_information",
        "requested_execution_date",
        "regulatory_reporting_code",
    }


def test_validate_instruction_wants_canonical_account_numbers():
    with pytest.raises(Exception) as exc:
        validate_instruction(
            instruction(creditor_account=AccountReference(currency="EUR", iban="de89 3704 0044 0532 0130 00")),
            today=TODAY,
        )
    assert "DE89370400440532013000" in exc.value.message_dict["creditor_account"][0]


def test_an_account_reference_has_exactly_one_identifier():
    with pytest.raises(ValueError):
        AccountReference(currency="NOK")
    with pytest.raises(ValueError):
        AccountReference(currency="NOK", iban=GERMAN_IBAN, bban="123")


def test_body_bytes_are_utf8_json_of_the_body():
    payment = instruction(creditor_name="Ærlig Økonomi AS")
    raw = initiation_body_json(payment)
    assert json.loads(raw.decode("utf-8")) == initiation_body(payment) == payment_initiation(payment).to_json()
    assert "Ærlig Økonomi AS".encode() in raw


def test_body_bytes_are_the_bank_clients_and_keep_their_form():
    """Every field, in the spec's order, compact: the bytes the portal has always sent (and stored)."""
    payment = instruction(
        amount=Decimal("150000.5"),
        currency="EUR",
        creditor_agent="DEUTDEFF",
        creditor_address=CreditorAddress(country="DE", street="Hauptstraße", city="Köln"),
        remittance_information="FP12345678 Rechnung 7",
        purpose_code="SUPP",
        requested_execution_date=date(2026, 3, 5),
        regulatory_reporting_code="29",
        regulatory_reporting_information="Ingeniørtjenester",
        kid="12345678903",
    )
    raw = initiation_body_json(payment)
    expected = (
        '{"instructedAmount":{"amount":"150000.50","currency":"EUR"},'
        '"creditorName":"Müller Maschinenbau GmbH","creditorAgent":"DEUTDEFF",'
        '"creditorAccount":{"iban":"DE89370400440532013000","currency":"EUR"},'
        '"creditorAddress":{"street":"Hauptstraße","city":"Köln","country":"DE"},'
        '"debtorAccount":{"iban":"NO9386011117947","currency":"NOK"},'
        '"remittanceInformationUnstructured":"FP12345678 Rechnung 7",'
        '"remittanceInformationStructuredArray":[{"reference":"12345678903","referenceType":"KID"}],'
        '"purposeCode":"SUPP","requestedExecutionDate":"2026-03-05","regulatoryReportingCode":"29",'
        '"regulatoryReportingInformation":"Ingeniørtjenester"}'
    )
    assert raw == expected.encode()
    assert initiation_bytes(payment_initiation(payment)) == raw  # one serialiser: the client's


@given(currency=st.sampled_from(CURRENCIES), minor=st.integers(min_value=1, max_value=10**15))
def test_property_format_amount_has_exactly_the_minor_units_and_keeps_the_value(currency, minor):
    places = minor_units(currency)
    amount = Decimal(minor).scaleb(-places)
    text = format_amount(amount, currency)
    assert Decimal(text) == amount
    fraction = text.split(".")[1] if "." in text else ""
    assert len(fraction) == places
    assert "E" not in text


def test_format_amount_never_rounds():
    with pytest.raises(ValueError):
        format_amount(Decimal("1.005"), "EUR")
    with pytest.raises(TypeError):
        format_amount(1.5, "EUR")


def test_the_message_leaves_room_for_the_portals_reference():
    assert typed(remittance_information="R" * 129).is_valid()
    assert not typed(remittance_information="R" * 130).is_valid()


def test_the_accounts_to_pay_from_name_the_company_of_a_corporate_account(alice):
    """Two companies' accounts both called "Driftskonto" are told apart by the company beside the name; a
    private account carries no agreement name ("Alice - privat" is the bank's name of her private agreement)."""
    from payments.selectors import debtor_choices
    from tests.bank_factories import BankAccountFactory, BankConnectionFactory

    for company in ("Fjellbygg Entreprenør AS", "Havbruk Nord AS"):
        connection = BankConnectionFactory(user=alice, context="CORPORATE", agreement_name=company)
        BankAccountFactory(connection=connection, name="Driftskonto", iban="", bban="1503" + str(len(company)))
    private = BankConnectionFactory(user=alice, agreement_name="Alice - privat")
    BankAccountFactory(connection=private, name="Brukskonto", iban="", bban="12345678903", currency="NOK")

    labels = sorted(choice.label for choice in debtor_choices(user=alice))

    assert labels[0].startswith("Brukskonto (12345678903") and "privat" not in labels[0]
    assert labels[1].startswith("Driftskonto · Fjellbygg Entreprenør AS (")
    assert labels[2].startswith("Driftskonto · Havbruk Nord AS (")
