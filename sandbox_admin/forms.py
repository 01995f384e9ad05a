"""Forms of the sandbox admin area. Each checks what it can before the bank is called; ``add_bank_error`` puts the
bank's refusal beside the field its tppMessage path names (or above the form). Its labels are translated like
the pages."""

from __future__ import annotations

import re
from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _
from stdnum.no import fodselsnummer, orgnr

from core.money import minor_units
from payments.instructions import format_amount
from payments.validators import normalise_iban, validate_amount, validate_processable_text
from sandbox_admin.errors import SandboxError
from xs2a.models import SandboxCustomer

PRIVATE, CORPORATE = "PRIVATE", "CORPORATE"
CUSTOMER_TYPES = [(PRIVATE, _("Private")), (CORPORATE, _("Corporate"))]
ACCOUNT_TYPES = [("ACCOUNT", _("Account")), ("CARD", _("Card account"))]
BOOKING_STATUSES = [("booked", _("Booked")), ("pending", _("Pending"))]
_CURRENCY = re.compile(r"^[A-Z]{3}$")
# Free text goes to the bank as JSON; what it cannot process (emoji, control characters) is refused here, as for a
# payment, instead of failing in the bank client.
TEXT = [validate_processable_text]


class BankErrorsMixin:
    """Maps the bank's tppMessage ``path`` (``balance.amount``) onto this form's field names."""

    bank_paths: dict[str, str] = {}

    def add_bank_error(self, error: SandboxError) -> None:
        path = error.path or ""
        field = self.bank_paths.get(path) or self.bank_paths.get(path.split(".")[0])
        self.add_error(field if field in self.fields else None, error.message)  # type: ignore[attr-defined]


def _currency(value: str) -> str:
    code = value.strip().upper()
    if not _CURRENCY.match(code):
        raise ValidationError(_("Three letters of ISO 4217, such as NOK."))
    try:
        minor_units(code)
    except KeyError:
        raise ValidationError(_("%(code)s is not a currency code."), params={"code": code}) from None
    return code


def _clean_amount(form: forms.Form, field: str, currency: str | None, *, signed: bool = False) -> None:
    """Check ``field`` as an amount of ``currency`` (the payment rules: precision 18, scale 5, the currency's
    minor units, by value: "10.000" NOK is 10.00) and store it with exactly the currency's fraction digits, as
    the bank wants it. ``signed``: zero and negative values are allowed (an opening balance)."""
    amount = form.cleaned_data.get(field)
    if amount is None or not currency:
        return
    if signed and amount == 0:
        form.cleaned_data[field] = Decimal(format_amount(Decimal(0), currency))
        return
    try:
        validate_amount(abs(amount) if signed else amount, currency)
    except ValidationError as error:
        form.add_error(field, error)
        return
    form.cleaned_data[field] = Decimal(format_amount(amount, currency))


def _iban(value: str) -> str:
    return normalise_iban(value) if value else ""


def customer_type_label(customer_type: str) -> str:
    """The bank's customerType in the reader's language ("Private", "Corporate"); an unknown one as it came."""
    return str(dict(CUSTOMER_TYPES).get(customer_type, customer_type))


def customer_label(customer: SandboxCustomer) -> str:
    kind = customer_type_label(customer.customer_type).lower()
    return f"{customer.customer_name} ({kind}, {customer.customer_number})"


class ListingForm(forms.Form):
    """The toggles of GET /v1/sandbox/customers."""

    with_accounts = forms.BooleanField(
        required=False, label=_("With accounts"), help_text=_("Include each customer's mock accounts (slower).")
    )
    with_agreements = forms.BooleanField(
        required=False, label=_("With agreements"), help_text=_("Include each customer's agreements (slower).")
    )


class CustomerCreateForm(BankErrorsMixin, forms.Form):
    bank_paths = {
        "customerType": "customer_type",
        "customerNumber": "customer_number",
        "customerName": "customer_name",
    }

    customer_type = forms.ChoiceField(
        label=_("Type"), choices=CUSTOMER_TYPES, widget=forms.RadioSelect, initial=PRIVATE
    )
    customer_number = forms.CharField(
        label=_("Customer number"),
        max_length=20,
        help_text=_(
            "A valid Norwegian national identity number (11 digits); a corporate customer may instead have an "
            "organisation number (9 digits). Testers type it at the bank's SCA screen."
        ),
    )
    customer_name = forms.CharField(label=_("Name"), max_length=140, validators=TEXT)

    def clean_customer_number(self) -> str:
        number = re.sub(r"[\s.-]", "", self.cleaned_data["customer_number"])
        if not re.fullmatch(r"[0-9]{9}|[0-9]{11}", number):
            raise ValidationError(_("11 digits (national identity number), or 9 for an organisation number."))
        return number

    def clean(self):
        data = super().clean()
        number, kind = data.get("customer_number"), data.get("customer_type")
        if number and kind:
            if len(number) == 11 and not fodselsnummer.is_valid(number):
                self.add_error("customer_number", _("Not a valid national identity number (check digits)."))
            elif len(number) == 9 and kind != CORPORATE:
                self.add_error(
                    "customer_number", _("A private customer needs an 11-digit national identity number.")
                )
            elif len(number) == 9 and not orgnr.is_valid(number):
                self.add_error("customer_number", _("Not a valid organisation number (check digit)."))
        return data


class AgreementCreateForm(BankErrorsMixin, forms.Form):
    bank_paths = {"name": "name", "signersRequired": "signers_required", "userCustomerIds": "users"}

    name = forms.CharField(label=_("Agreement name"), max_length=140, validators=TEXT)
    signers_required = forms.IntegerField(
        label=_("Signers required"),
        min_value=1,
        max_value=5,
        initial=1,
        help_text=_("Signatures a payment needs (1-5)."),
    )
    users = forms.MultipleChoiceField(
        label=_("Users"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("People who may act for the company under this agreement (the company itself always may)."),
    )

    def __init__(self, *args, others: list[SandboxCustomer], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["users"].choices = [(c.customer_id, customer_label(c)) for c in others]


class AccountCreateForm(BankErrorsMixin, forms.Form):
    bank_paths = {
        "accountType": "account_type",
        "currency": "currency",
        "name": "name",
        "product": "product",
        "balance": "balance",
        "creditLimit": "credit_limit",
        "accountId": "agreement",
        "agreementId": "agreement",
    }

    account_type = forms.ChoiceField(label=_("Type"), choices=ACCOUNT_TYPES, initial="ACCOUNT")
    currency = forms.CharField(label=_("Currency"), max_length=3, initial="NOK")
    name = forms.CharField(label=_("Account name"), max_length=70, validators=TEXT)
    product = forms.CharField(
        label=_("Product"),
        max_length=70,
        required=False,
        validators=TEXT,
        help_text=_("Empty: Brukskonto, or Kredittkort for a card."),
    )
    balance = forms.DecimalField(label=_("Opening balance"), required=False, max_digits=23)
    credit_limit = forms.DecimalField(
        label=_("Credit limit"), required=False, max_digits=23, min_value=Decimal("0")
    )
    agreement = forms.ChoiceField(
        label=_("Add to agreement"),
        required=False,
        help_text=_("A company's account is in no agreement until added to one."),
    )

    def __init__(self, *args, customer: SandboxCustomer, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.customer = customer
        if customer.customer_type == CORPORATE:
            self.fields["agreement"].choices = [("", _("(none)"))] + [
                (a.id, a.name or a.id) for a in customer.agreements
            ]
        else:
            del self.fields["agreement"]  # the bank adds a private customer's accounts to its agreement

    def clean_currency(self) -> str:
        return _currency(self.cleaned_data["currency"])

    def clean(self):
        data = super().clean()
        _clean_amount(self, "balance", data.get("currency"), signed=True)
        _clean_amount(self, "credit_limit", data.get("currency"), signed=True)
        return data


class MockTransactionForm(BankErrorsMixin, forms.Form):
    bank_paths = {
        "transactionAmount": "amount",
        "transactionAmount.amount": "amount",
        "transactionAmount.currency": "currency",
        "bookingStatus": "booking_status",
        "bookingDate": "booking_date",
        "counterpartyName": "counterparty_name",
        "debtorAccount": "debtor_iban",
        "creditorAccount": "creditor_iban",
        "remittanceInformationUnstructured": "remittance",
        "kid": "kid",
        "endToEndIdentification": "end_to_end_id",
        "mockAccountId": "account",
    }

    account = forms.ChoiceField(label=_("Account"))
    amount = forms.DecimalField(
        label=_("Amount"),
        max_digits=23,
        help_text=_("Positive; the bank makes it money out when this account is the debtor."),
    )
    currency = forms.CharField(
        label=_("Currency"), max_length=3, initial="NOK", help_text=_("The account's currency.")
    )
    booking_status = forms.ChoiceField(label=_("Status"), choices=BOOKING_STATUSES, initial="booked")
    booking_date = forms.DateField(
        label=_("Booking date"), required=False, help_text=_("YYYY-MM-DD; empty: the bank's today.")
    )
    counterparty_name = forms.CharField(
        label=_("Counterparty name"), max_length=70, required=False, validators=TEXT
    )
    debtor_iban = forms.CharField(
        label=_("Debtor IBAN"),
        max_length=42,
        required=False,
        help_text=_("This account's IBAN for money out; someone else's (outside this bank) for money in."),
    )
    creditor_iban = forms.CharField(label=_("Creditor IBAN"), max_length=42, required=False)
    remittance = forms.CharField(label=_("Message"), max_length=140, required=False, validators=TEXT)
    kid = forms.CharField(label=_("KID"), max_length=25, required=False)
    end_to_end_id = forms.CharField(label=_("End-to-end id"), max_length=35, required=False, validators=TEXT)

    def __init__(self, *args, customer: SandboxCustomer, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.customer = customer
        self.fields["account"].choices = [(a, _("Account %(id)s") % {"id": a}) for a in customer.accounts] + [
            (a, _("Card account %(id)s") % {"id": a}) for a in customer.card_accounts
        ]

    def clean_currency(self) -> str:
        return _currency(self.cleaned_data["currency"])

    def clean_debtor_iban(self) -> str:
        return _iban(self.cleaned_data["debtor_iban"])

    def clean_creditor_iban(self) -> str:
        return _iban(self.cleaned_data["creditor_iban"])

    def clean_kid(self) -> str:
        kid = self.cleaned_data["kid"].strip()
        if kid and not re.fullmatch(r"[0-9]{2,25}", kid):
            raise ValidationError(_("A KID is 2 to 25 digits."))
        return kid

    def clean(self):
        data = super().clean()
        _clean_amount(self, "amount", data.get("currency"))
        debtor, creditor = data.get("debtor_iban"), data.get("creditor_iban")
        if debtor and creditor and debtor == creditor:
            self.add_error("creditor_iban", _("Debtor and creditor must be different accounts."))
        return data


class EngagementForm(BankErrorsMixin, forms.Form):
    """Add an account of a company to one of its agreements."""

    bank_paths = {"accountId": "account", "agreementId": "agreement"}

    agreement = forms.ChoiceField(label=_("Agreement"))
    account = forms.ChoiceField(label=_("Account"))

    def __init__(self, *args, customer: SandboxCustomer, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.agreements = {a.id: a for a in customer.agreements}
        self.fields["agreement"].choices = [(a.id, a.name or a.id) for a in customer.agreements]
        self.fields["account"].choices = [(a, a) for a in customer.accounts + customer.card_accounts]

    def clean(self):
        data = super().clean()
        agreement = self.agreements.get(data.get("agreement", ""))
        if agreement is not None and data.get("account") in agreement.engagements:
            self.add_error("account", _("This account is in the agreement already."))
        return data


class ResetForm(forms.Form):
    confirm = forms.BooleanField(
        label=_("I understand: every customer created here is removed and the four known customers come back."),
    )


class ClockForm(forms.Form):
    """One of the clock buttons (``name="move"``); nothing else to fill in."""

    move = forms.ChoiceField(
        choices=[
            ("now", _("Run a batch now")),
            ("hour", _("+1 hour")),
            ("next-batch", _("To the next batch")),
            ("day", _("+1 day")),
        ]
    )
