"""The cross-border payment form (docs/bank-interface.md, spec 2.1-2.6 and 8). Every rule is a validator in
payments.validators or payments.instructions.cross_field_errors; the form only wires them to fields.

Two journeys share the form:
- the user has consented accounts: the view passes ``debtor_accounts`` (a ``DebtorAccountOption`` per account)
  and ``debtor_account`` is a choice among them;
- a payment-only journey (no account consent): ``debtor_accounts=None`` and the user types the account to pay
  from (a Norwegian IBAN or 11-digit account number) and chooses its currency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _
from stdnum.exceptions import ValidationError as StdnumValidationError
from stdnum.no import kontonr

from payments import validators as v
from payments.forms_fields import (
    AmountField,
    country_choices,
    currency_choices,
    regulatory_code_choices,
    text_field,
)
from payments.instructions import (
    ADDRESS_FIELDS,
    AccountReference,
    CreditorAddress,
    PaymentInstruction,
    cross_field_errors,
    initiation_body,
    initiation_body_json,
)
from payments.reporting_text import basis_help
from payments.selectors import ReportingBasis, ReportingRequirement, regulatory_threshold_nok, reporting_bases
from payments.spec import CURRENCIES, NOK, Limits, PurposeCode

DEBTOR_COUNTRY = "NO"  # the bank is Norwegian: the account paid from is a Norwegian account


@dataclass(frozen=True)
class DebtorAccountOption:
    """One of the user's consented accounts, as the view offers it. ``key`` is what the form posts."""

    key: str
    label: str
    currency: str
    iban: str = ""
    bban: str = ""

    def reference(self) -> AccountReference:
        return AccountReference(currency=self.currency, iban=self.iban, bban="" if self.iban else self.bban)


class CrossBorderPaymentForm(forms.Form):
    # debtor_account (and debtor_account_currency) are added in __init__ for the journey in use.
    amount = AmountField(
        label=_("Amount"),
        max_digits=Limits.AMOUNT_MAX_DIGITS,
        decimal_places=Limits.AMOUNT_DECIMAL_PLACES,
        localize=True,
        error_messages={
            "required": _("Enter the amount to pay."),
            "invalid": _("Enter the amount as a number, for example 150000 or 1250.50."),
            "max_digits": _("This amount has too many digits (the bank accepts at most %(max)s)."),
            "max_decimal_places": _("Use at most %(max)s decimal places."),
            "max_whole_digits": _("This amount is too large: at most %(max)s digits before the decimal point."),
        },
        # A text field (not type=number, which refuses "1 250,50"), with the keyboard of digits and a separator.
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    currency = forms.ChoiceField(label=_("Currency"), initial=NOK)
    creditor_name = text_field(
        _("Recipient's name"),
        max_length=Limits.CREDITOR_NAME_MAX,
        required=True,
        help_text=_("The full name of the person or company you are paying."),
        validators=[v.validate_creditor_name],
        error_messages={"required": _("Enter the name of the person or company you are paying.")},
    )
    creditor_account = forms.CharField(
        label=_("Recipient's account (IBAN or account number)"),
        widget=forms.TextInput(attrs={"maxlength": 50, "autocomplete": "off", "spellcheck": "false"}),
        error_messages={"required": _("Enter the recipient's IBAN or account number.")},
    )
    creditor_account_currency = forms.ChoiceField(
        label=_("Currency of the recipient's account"),
        required=False,
        help_text=_("Leave empty if it is the currency of the payment."),
    )
    creditor_agent = forms.CharField(
        label=_("Recipient's bank (BIC/SWIFT code)"),
        required=False,
        help_text=_("Required when you give an account number instead of an IBAN."),
        widget=forms.TextInput(attrs={"maxlength": 14, "autocomplete": "off", "spellcheck": "false"}),
    )
    creditor_street = text_field(_("Street"), max_length=Limits.STREET_MAX, validators=[v.validate_street])
    creditor_building_number = text_field(_("Building number"), max_length=Limits.BUILDING_NUMBER_MAX)
    creditor_postal_code = text_field(_("Postal code"), max_length=Limits.POSTAL_CODE_MAX)
    creditor_city = text_field(_("City"), max_length=Limits.CITY_MAX)
    creditor_country = forms.ChoiceField(label=_("Country"), required=False)
    remittance_information = text_field(
        _("Message to the recipient"),
        max_length=Limits.MESSAGE_MAX,
        help_text=_(
            "Up to 129 characters. We put our payment reference in front of it, so that the payment can be found "
            "in your account."
        ),
        validators=[v.validate_message],
    )
    purpose_code = forms.ChoiceField(
        label=_("Purpose"),
        required=False,
        choices=[("", _("Not given")), *PurposeCode.choices],
    )
    requested_execution_date = forms.DateField(
        label=_("Execution date"),
        required=False,
        help_text=_("Leave empty to pay as soon as possible. At most one year ahead."),
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        error_messages={"invalid": _("Enter a date, for example 2026-12-24.")},
    )
    regulatory_reporting_code = forms.ChoiceField(
        label=_("Payment type code (for the tax authority)"),
        required=False,
        # Replaced in __init__ by the chosen currency's: from which amount, at which rate (_reporting_help).
        help_text=_("Required for payments of 100 000 NOK or more, or the equivalent in another currency."),
    )
    regulatory_reporting_information = text_field(
        _("Purpose of the payment (for the tax authority)"),
        max_length=Limits.REGULATORY_INFORMATION_MAX,
        validators=[v.validate_regulatory_reporting_information],
    )

    def __init__(
        self,
        *args,
        debtor_accounts: Sequence[DebtorAccountOption] | None = None,
        today: date | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.today = today or v.oslo_today()
        self.debtor_accounts = (
            {option.key: option for option in debtor_accounts} if debtor_accounts is not None else None
        )
        self.reporting_requirement: ReportingRequirement | None = None
        self._creditor_account_kind: str | None = None

        currencies = currency_choices(keep=self._currencies_given())
        self.fields["currency"].choices = currencies
        self.fields["creditor_account_currency"].choices = [("", _("Same as the payment")), *currencies]
        self.fields["creditor_country"].choices = [("", _("Choose a country")), *country_choices()]
        self.fields["regulatory_reporting_code"].choices = regulatory_code_choices()

        if self.debtor_accounts is not None:
            debtor: forms.Field = forms.ChoiceField(
                label=_("Pay from"),
                choices=[("", _("Choose an account"))]
                + [(key, o.label) for key, o in self.debtor_accounts.items()],
                error_messages={
                    "required": _("Choose the account to pay from."),
                    "invalid_choice": _("Choose one of your accounts."),
                },
            )
        else:
            debtor = forms.CharField(
                label=_("Pay from (IBAN or account number)"),
                help_text=_("Your Norwegian account: an IBAN starting with NO or an 11-digit account number."),
                widget=forms.TextInput(attrs={"maxlength": 40, "autocomplete": "off", "spellcheck": "false"}),
                error_messages={"required": _("Enter the account to pay from.")},
            )
            self.fields["debtor_account_currency"] = forms.ChoiceField(
                label=_("Currency of the account you pay from"), choices=currencies, initial=NOK
            )
        # The account to pay from comes first on the page.
        self.fields = {"debtor_account": debtor, **self.fields}
        self.order_fields(["debtor_account", "debtor_account_currency"])
        if self.shows_reporting:
            self.reporting_help = self._reporting_help()

    #: Whether the form asks for regulatory reporting, and so says from which amount (the domestic one does not).
    shows_reporting = True
    #: currency -> the payment type code's help text for a payment in it (the page's script switches them).
    reporting_help: dict[str, str] = {}

    def _reporting_help(self) -> dict[str, str]:
        """Per currency with a usable rate (and NOK): from which amount reporting is asked, at which rate (figure,
        date, source, age) and with which margin; under "*" the text of every currency without one, its code as
        ``{currency}``. The help text of the payment type code is the chosen currency's."""
        bases = reporting_bases(on_date=self.today, currencies=CURRENCIES)
        threshold = regulatory_threshold_nok()
        texts = {
            currency: basis_help(basis, threshold=threshold)
            for currency, basis in bases.items()
            if basis.from_amount is not None
        }
        texts["*"] = basis_help(ReportingBasis("{currency}", None, None, None, None), threshold=threshold)
        chosen = (self.data.get(self.add_prefix("currency")) if self.is_bound else None) or NOK
        if chosen in bases:
            self.fields["regulatory_reporting_code"].help_text = basis_help(bases[chosen], threshold=threshold)
        return texts

    # --- single fields ------------------------------------------------------------------------------------
    def clean_debtor_account(self) -> AccountReference | str:
        value = self.cleaned_data["debtor_account"]
        if self.debtor_accounts is not None:
            return value  # a valid key; turned into a reference in clean()
        kind, compact = v.normalise_account_number(value)
        if kind == "iban":
            if not compact.startswith(DEBTOR_COUNTRY):
                raise ValidationError(
                    _("The account you pay from must be a Norwegian account (an IBAN starting with NO)."),
                    code="debtor_not_norwegian",
                )
            return compact
        try:
            return kontonr.validate(compact)
        except StdnumValidationError:
            raise ValidationError(
                _("This is not a valid Norwegian account number: it has 11 digits and a check digit."),
                code="debtor_bban_invalid",
            ) from None

    def clean_creditor_account(self) -> str:
        self._creditor_account_kind, compact = v.normalise_account_number(self.cleaned_data["creditor_account"])
        return compact

    def clean_creditor_agent(self) -> str:
        value = self.cleaned_data["creditor_agent"]
        return v.normalise_bic(value) if value else ""

    def clean_amount(self):
        amount = self.cleaned_data["amount"]
        if amount is not None and amount <= 0:
            raise ValidationError(_("The amount must be more than zero."), code="amount_not_positive")
        return amount

    def clean_requested_execution_date(self) -> date | None:
        value = self.cleaned_data["requested_execution_date"]
        if value is not None:
            v.validate_execution_date(value, today=self.today)
        return value

    # --- the whole form ---------------------------------------------------------------------------------------
    def clean(self) -> dict:
        data = super().clean()
        amount, currency = data.get("amount"), data.get("currency")
        if amount is not None and currency:
            try:
                v.validate_amount(amount, currency)  # the currency's minor units
            except ValidationError as exc:
                self.add_error("amount", exc)
                amount = None
        # An address part that failed its own check was still given: its country is still needed.
        address_given = any(data.get(name) or name in self.errors for name in ADDRESS_FIELDS)

        def given(name: str) -> str:
            # A field that failed its own checks counts as given: one error per field is enough.
            return data.get(name) or "" if name not in self.errors else "invalid"

        errors, self.reporting_requirement = cross_field_errors(
            amount=amount,
            currency=currency,
            creditor_account_kind=self._creditor_account_kind if "creditor_account" not in self.errors else None,
            creditor_agent=given("creditor_agent"),
            address_parts_given=address_given,
            creditor_country=given("creditor_country"),
            regulatory_reporting_code=given("regulatory_reporting_code"),
            regulatory_reporting_information=given("regulatory_reporting_information"),
            on_date=self.today,
        )
        for field, field_errors in errors.items():
            for error in field_errors:
                self.add_error(field, error)
        return data

    def _currencies_given(self) -> set[str]:
        """The currencies the form holds (posted, or the initial values of a draft being edited)."""
        names = ("currency", "creditor_account_currency", "debtor_account_currency")
        given = {self.initial.get(name) for name in names}
        if self.is_bound:
            given |= {self.data.get(self.add_prefix(name)) for name in names}
        return {code for code in given if isinstance(code, str)}

    # --- what the bank receives ---------------------------------------------------------------------------------
    def instruction(self) -> PaymentInstruction:
        """The validated payment (call after ``is_valid()`` returned True)."""
        if not self.is_valid():
            raise ValueError("the form has errors: there is no instruction to send")
        data = self.cleaned_data
        if self.debtor_accounts is not None:
            debtor = self.debtor_accounts[data["debtor_account"]].reference()
        else:
            number = data["debtor_account"]
            currency = data["debtor_account_currency"]
            debtor = (
                AccountReference(currency=currency, iban=number)
                if v.looks_like_iban(number)
                else AccountReference(currency=currency, bban=number)
            )
        creditor_currency = data["creditor_account_currency"] or data["currency"]
        creditor = (
            AccountReference(currency=creditor_currency, iban=data["creditor_account"])
            if self._creditor_account_kind == "iban"
            else AccountReference(currency=creditor_currency, bban=data["creditor_account"])
        )
        address = None
        if data["creditor_country"]:
            address = CreditorAddress(
                country=data["creditor_country"],
                street=data["creditor_street"],
                building_number=data["creditor_building_number"],
                postal_code=data["creditor_postal_code"],
                city=data["creditor_city"],
            )
        return PaymentInstruction(
            debtor_account=debtor,
            amount=data["amount"],
            currency=data["currency"],
            creditor_name=data["creditor_name"],
            creditor_account=creditor,
            creditor_agent=data["creditor_agent"],
            creditor_address=address,
            remittance_information=data["remittance_information"],
            purpose_code=data["purpose_code"],
            requested_execution_date=data["requested_execution_date"],
            regulatory_reporting_code=data["regulatory_reporting_code"],
            regulatory_reporting_information=data["regulatory_reporting_information"],
        )

    def bank_body(self) -> dict:
        """The JSON body of spec 2.1 for what was typed (the payment puts its reference first in the message)."""
        return initiation_body(self.instruction())

    def bank_body_json(self) -> bytes:
        """That body as bytes, compact UTF-8 as sent."""
        return initiation_body_json(self.instruction())


# --- the domestic product (norwegian-domestic-credit-transfers) ---------------------------------------------

DOMESTIC_FIELDS = (
    "debtor_account",
    "amount",
    "creditor_name",
    "creditor_account",
    "kid",
    "remittance_information",
    "requested_execution_date",
)


class DomesticPaymentForm(CrossBorderPaymentForm):
    """A domestic credit transfer: NOK to a Norwegian account (an NO IBAN or an 11-digit account number).

    The bank needs neither a BIC nor regulatory reporting for it; the account paid from is a NOK account.
    """

    shows_reporting = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kid"] = forms.CharField(
            label=_("KID (customer reference)"),
            required=False,
            help_text=_(
                "The KID number on the invoice, if it has one: 2 to 25 digits. The recipient uses it to recognise "
                "your payment."
            ),
            widget=forms.TextInput(
                attrs={"inputmode": "numeric", "maxlength": 40, "autocomplete": "off", "spellcheck": "false"}
            ),
        )
        self.fields = {name: self.fields[name] for name in DOMESTIC_FIELDS}
        self.fields["amount"].label = _("Amount (NOK)")
        self.fields["creditor_account"].label = _("Recipient's account number")
        self.fields["creditor_account"].help_text = _(
            "A Norwegian account: 11 digits, or an IBAN starting with NO."
        )

    def clean_creditor_account(self) -> str:
        kind, compact = v.normalise_account_number(self.cleaned_data["creditor_account"])
        if kind == "iban" and not compact.startswith(DEBTOR_COUNTRY):
            raise ValidationError(
                _("A domestic payment goes to a Norwegian account: an IBAN starting with NO or 11 digits."),
                code="creditor_not_norwegian",
            )
        if kind == "bban":
            try:
                compact = kontonr.validate(compact)
            except StdnumValidationError:
                raise ValidationError(
                    _("This is not a valid Norwegian account number: it has 11 digits and a check digit."),
                    code="creditor_bban_invalid",
                ) from None
        self._creditor_account_kind = kind
        return compact

    def clean_kid(self) -> str:
        value = self.cleaned_data["kid"]
        return v.normalise_kid(value) if value.strip() else ""

    def clean(self) -> dict:
        data = forms.Form.clean(self)
        amount = data.get("amount")
        if amount is not None:
            try:
                v.validate_amount(amount, NOK)
            except ValidationError as exc:
                self.add_error("amount", exc)
        return data

    def instruction(self) -> PaymentInstruction:
        if not self.is_valid():
            raise ValueError("the form has errors: there is no instruction to send")
        data = self.cleaned_data
        if self.debtor_accounts is not None:
            debtor = self.debtor_accounts[data["debtor_account"]].reference()
        else:
            number = data["debtor_account"]
            debtor = (
                AccountReference(currency=NOK, iban=number)
                if v.looks_like_iban(number)
                else AccountReference(currency=NOK, bban=number)
            )
        creditor = (
            AccountReference(currency=NOK, iban=data["creditor_account"])
            if self._creditor_account_kind == "iban"
            else AccountReference(currency=NOK, bban=data["creditor_account"])
        )
        return PaymentInstruction(
            debtor_account=debtor,
            amount=data["amount"],
            currency=NOK,
            creditor_name=data["creditor_name"],
            creditor_account=creditor,
            remittance_information=data["remittance_information"],
            requested_execution_date=data["requested_execution_date"],
            kid=data["kid"],
        )
