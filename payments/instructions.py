"""A cross-border payment instruction, its validation as a whole, and the exact JSON body of spec 2.1.

``PaymentInstruction`` is what the user asked for, already normalised (compact IBAN, upper-case BIC, stripped
texts). ``payment_initiation`` turns it into the bank client's typed body (``xs2a.models.PaymentInitiation``;
``initiation_body`` is that body as a JSON object) and ``initiation_body_json`` into its exact bytes, written
by the client's own serialiser: the payment stores those bytes, the review page shows them, and the bank client
sends them as they are, the first time and after a lost answer. ``validate_instruction``
checks every rule of spec 2.1-2.6 and 8 for callers that do not go through the form (services, imports);
the form uses the same per-field validators and ``cross_field_errors``.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from core.money import minor_units
from payments import validators as v
from payments.reporting_text import reporting_error_text
from payments.selectors import ReportingRequirement, regulatory_reporting_requirement
from xs2a import models as bank_models
from xs2a.services.payments import initiation_bytes


@dataclass(frozen=True)
class AccountReference:
    """spec 2.3: either an IBAN or a BBAN, and the account's currency."""

    currency: str
    iban: str = ""
    bban: str = ""

    def __post_init__(self) -> None:
        if bool(self.iban) == bool(self.bban):
            raise ValueError("an account reference has exactly one of iban and bban")

    def for_bank(self) -> bank_models.AccountReference:
        return bank_models.AccountReference(currency=self.currency, iban=self.iban or None, bban=self.bban or None)


@dataclass(frozen=True)
class CreditorAddress:
    """spec 2.4: country is required inside the object; empty parts are left out of the body."""

    country: str
    street: str = ""
    building_number: str = ""
    postal_code: str = ""
    city: str = ""

    def for_bank(self) -> bank_models.Address:
        return bank_models.Address(
            country=self.country,
            street=self.street or None,
            building_number=self.building_number or None,
            postal_code=self.postal_code or None,
            city=self.city or None,
        )


@dataclass(frozen=True)
class PaymentInstruction:
    debtor_account: AccountReference
    amount: Decimal
    currency: str
    creditor_name: str
    creditor_account: AccountReference
    creditor_agent: str = ""
    creditor_address: CreditorAddress | None = None
    remittance_information: str = ""
    purpose_code: str = ""
    requested_execution_date: date | None = None
    regulatory_reporting_code: str = ""
    regulatory_reporting_information: str = ""
    kid: str = ""  # the customer reference of a Norwegian invoice (domestic payments), compact


# The portal's payment reference: "FP" and 8 characters of Crockford's base32 (no I, L, O or U to misread).
REFERENCE_PREFIX = "FP"
_REFERENCE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_reference() -> str:
    size = v.Limits.REFERENCE_LENGTH - len(REFERENCE_PREFIX)
    return REFERENCE_PREFIX + "".join(secrets.choice(_REFERENCE_ALPHABET) for _ in range(size))


def with_reference(instruction: PaymentInstruction, reference: str) -> PaymentInstruction:
    """The instruction with ``reference`` first in its message to the recipient (the spec warns the message may
    be truncated in processing: the end goes first)."""
    message = f"{reference} {instruction.remittance_information}".rstrip()
    return dataclasses.replace(instruction, remittance_information=message)


def bank_amount(amount: Decimal, currency: str) -> Decimal:
    """``amount`` with exactly the currency's ISO 4217 minor-unit digits: never rounds.

    100 EUR -> 100.00, 100.5 EUR -> 100.50, 1500 JPY -> 1500, 1.5 KWD -> 1.500.
    Raises ValueError when the amount has more fraction digits than the currency (validate first).
    """
    if not isinstance(amount, Decimal):
        raise TypeError("amounts are Decimal")
    quantum = Decimal(1).scaleb(-minor_units(currency))
    quantised = amount.quantize(quantum)
    if quantised != amount:
        raise ValueError(f"{amount} has more fraction digits than {currency} allows")
    return quantised


def format_amount(amount: Decimal, currency: str) -> str:
    """``bank_amount`` as the bank's decimal string: "100.00" EUR, "1500" JPY, "1.500" KWD."""
    return f"{bank_amount(amount, currency):f}"


def payment_initiation(instruction: PaymentInstruction) -> bank_models.PaymentInitiation:
    """The body of spec 2.1 as the bank client's typed record; optional fields are left out when empty."""
    return bank_models.PaymentInitiation(
        instructed_amount=bank_models.Amount(
            bank_amount(instruction.amount, instruction.currency), instruction.currency
        ),
        creditor_name=instruction.creditor_name,
        creditor_account=instruction.creditor_account.for_bank(),
        debtor_account=instruction.debtor_account.for_bank(),
        creditor_agent=instruction.creditor_agent or None,
        creditor_address=(
            instruction.creditor_address.for_bank() if instruction.creditor_address is not None else None
        ),
        remittance_information_unstructured=instruction.remittance_information or None,
        # The KID as the bank's own transactions carry it (spec 2.x remarks; docs/bank-interface.md).
        remittance_information_structured_array=(
            [bank_models.StructuredRemittance(reference=instruction.kid, reference_type="KID")]
            if instruction.kid
            else []
        ),
        purpose_code=instruction.purpose_code or None,
        requested_execution_date=instruction.requested_execution_date,
        regulatory_reporting_code=instruction.regulatory_reporting_code or None,
        regulatory_reporting_information=instruction.regulatory_reporting_information or None,
    )


def initiation_body(instruction: PaymentInstruction) -> dict:
    """That body as a JSON object (what the form's review reads)."""
    return payment_initiation(instruction).to_json()


def initiation_body_json(instruction: PaymentInstruction) -> bytes:
    """The exact bytes to store, show and send (and to digest), written by the bank client's serialiser."""
    return initiation_bytes(payment_initiation(instruction))


# The bank's field paths (tppMessages[].path) and the form fields they belong to, so the bank's messages can
# be shown beside the field they name.
BANK_PATH_TO_FIELD: dict[str, str] = {
    "instructedAmount": "amount",
    "instructedAmount.amount": "amount",
    "instructedAmount.currency": "currency",
    "creditorName": "creditor_name",
    "creditorAgent": "creditor_agent",
    "creditorAccount": "creditor_account",
    "creditorAccount.iban": "creditor_account",
    "creditorAccount.bban": "creditor_account",
    "creditorAccount.currency": "creditor_account_currency",
    "creditorAddress.street": "creditor_street",
    "creditorAddress.buildingNumber": "creditor_building_number",
    "creditorAddress.postalCode": "creditor_postal_code",
    "creditorAddress.city": "creditor_city",
    "creditorAddress.country": "creditor_country",
    "debtorAccount": "debtor_account",
    "debtorAccount.iban": "debtor_account",
    "debtorAccount.bban": "debtor_account",
    "debtorAccount.currency": "debtor_account",
    "remittanceInformationUnstructured": "remittance_information",
    "remittanceInformationStructuredArray": "kid",
    "remittanceInformationStructuredArray[0].reference": "kid",
    "purposeCode": "purpose_code",
    "requestedExecutionDate": "requested_execution_date",
    "regulatoryReportingCode": "regulatory_reporting_code",
    "regulatoryReportingInformation": "regulatory_reporting_information",
}

ADDRESS_FIELDS = ("creditor_street", "creditor_building_number", "creditor_postal_code", "creditor_city")


def cross_field_errors(
    *,
    amount: Decimal | None,
    currency: str | None,
    creditor_account_kind: str | None,
    creditor_agent: str,
    address_parts_given: bool,
    creditor_country: str,
    regulatory_reporting_code: str,
    regulatory_reporting_information: str,
    on_date: date,
    requirement: Callable[..., ReportingRequirement] = regulatory_reporting_requirement,
) -> tuple[dict[str, list[ValidationError]], ReportingRequirement | None]:
    """Rules that involve more than one field, as {field: [errors]}, and the reporting decision when known.

    - A BBAN names an account only within its country's system: the bank needs the creditor's BIC with it.
    - An address needs its country (spec 2.4: required inside the object).
    - Regulatory code and information: both are required from the threshold (with the margin for other
      currencies, see payments.selectors.regulatory_reporting_requirement); below it, give both or neither.
    """
    errors: dict[str, list[ValidationError]] = {}
    if creditor_account_kind == "bban" and not creditor_agent:
        errors.setdefault("creditor_agent", []).append(
            ValidationError(
                _(
                    "For a domestic account number (not an IBAN), enter the BIC (SWIFT code) of the "
                    "recipient's bank."
                ),
                code="bban_requires_agent",
            )
        )
    if address_parts_given and not creditor_country:
        errors.setdefault("creditor_country", []).append(
            ValidationError(_("Choose the country of the recipient's address."), code="address_country_required")
        )
    decision = None
    if amount is not None and currency:
        decision = requirement(amount=amount, currency=currency, on_date=on_date)
        if decision.required:
            if not regulatory_reporting_code:
                errors.setdefault("regulatory_reporting_code", []).append(
                    _reporting_error(decision, "regulatory_code_required")
                )
            if not regulatory_reporting_information:
                # The why is said once: under the code when both are missing, here only the what.
                errors.setdefault("regulatory_reporting_information", []).append(
                    ValidationError(
                        _("Describe the purpose of the payment for the tax authority."),
                        code="regulatory_information_required",
                    )
                    if not regulatory_reporting_code
                    else _reporting_error(decision, "regulatory_information_required")
                )
    if decision is None or not decision.required:
        if regulatory_reporting_code and not regulatory_reporting_information:
            errors.setdefault("regulatory_reporting_information", []).append(
                ValidationError(
                    _("Describe the purpose of the payment, or leave the payment type code empty."),
                    code="regulatory_information_missing",
                )
            )
        if regulatory_reporting_information and not regulatory_reporting_code:
            errors.setdefault("regulatory_reporting_code", []).append(
                ValidationError(
                    _("Choose the payment type code, or leave the description empty."),
                    code="regulatory_code_missing",
                )
            )
    return errors, decision


def _reporting_error(decision: ReportingRequirement, code: str) -> ValidationError:
    return ValidationError(reporting_error_text(decision), code=code)


# Whole on purpose: every rule of spec 2.1-2.6 and 8 in the form's field order, all failures collected into one
# ValidationError so the payer sees them together.
def validate_instruction(instruction: PaymentInstruction, *, today: date | None = None) -> ReportingRequirement:
    """Check every rule of spec 2.1-2.6 and 8; raise ValidationError({field: [...]}) naming each failure.

    Returns the regulatory reporting decision. For callers outside the form (the form applies the same
    validators field by field).
    """
    today = today or v.oslo_today()
    errors: dict[str, list[ValidationError]] = {}

    def check(field: str, func: Callable, *args, **kwargs) -> None:
        try:
            func(*args, **kwargs)
        except ValidationError as exc:
            errors.setdefault(field, []).extend(exc.error_list)

    check("currency", v.validate_currency, instruction.currency)
    if "currency" not in errors:
        check("amount", v.validate_amount, instruction.amount, instruction.currency)
    check("creditor_name", v.validate_creditor_name, instruction.creditor_name)
    for field, account in (
        ("debtor_account", instruction.debtor_account),
        ("creditor_account", instruction.creditor_account),
    ):
        if account.iban:
            check(field, _require_canonical, v.normalise_iban, account.iban)
        else:
            check(field, _require_canonical, v.normalise_bban, account.bban)
        check(field, v.validate_currency, account.currency)
    if instruction.creditor_agent:
        check("creditor_agent", _require_canonical, v.normalise_bic, instruction.creditor_agent)
    address = instruction.creditor_address
    if address is not None:
        check("creditor_country", v.validate_country, address.country)
        check("creditor_street", v.validate_street, address.street)
        check(
            "creditor_building_number",
            v.validate_text,
            address.building_number,
            max_length=v.Limits.BUILDING_NUMBER_MAX,
        )
        check("creditor_postal_code", v.validate_text, address.postal_code, max_length=v.Limits.POSTAL_CODE_MAX)
        check("creditor_city", v.validate_text, address.city, max_length=v.Limits.CITY_MAX)
    if instruction.remittance_information:
        check("remittance_information", v.validate_remittance_information, instruction.remittance_information)
    if instruction.kid:
        check("kid", _require_canonical, v.normalise_kid, instruction.kid)
    if instruction.purpose_code:
        check("purpose_code", v.validate_purpose_code, instruction.purpose_code)
    if instruction.requested_execution_date is not None:
        check(
            "requested_execution_date",
            v.validate_execution_date,
            instruction.requested_execution_date,
            today=today,
        )
    if instruction.regulatory_reporting_code:
        check(
            "regulatory_reporting_code",
            v.validate_regulatory_reporting_code,
            instruction.regulatory_reporting_code,
        )
    if instruction.regulatory_reporting_information:
        check(
            "regulatory_reporting_information",
            v.validate_regulatory_reporting_information,
            instruction.regulatory_reporting_information,
        )
    amount_ok = "amount" not in errors and "currency" not in errors
    more, decision = cross_field_errors(
        amount=instruction.amount if amount_ok else None,
        currency=instruction.currency if amount_ok else None,
        creditor_account_kind="iban" if instruction.creditor_account.iban else "bban",
        creditor_agent=instruction.creditor_agent,
        address_parts_given=address is not None,
        creditor_country=address.country if address is not None else "",
        regulatory_reporting_code=instruction.regulatory_reporting_code,
        regulatory_reporting_information=instruction.regulatory_reporting_information,
        on_date=today,
    )
    for field, field_errors in more.items():
        errors.setdefault(field, []).extend(field_errors)
    if errors:
        raise ValidationError(errors)
    assert decision is not None
    return decision


def _require_canonical(normalise: Callable[[str], str], value: str) -> None:
    """The value is valid and already in its canonical form (what the bank will receive)."""
    canonical = normalise(value)
    if canonical != value:
        raise ValidationError(
            _("Give this value in its compact form: %(canonical)s."),
            code="not_canonical",
            params={"canonical": canonical},
        )
