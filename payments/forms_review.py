"""The review page's forms: the one submission of a payment, and a signer's approval at the bank."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _
from stdnum.exceptions import ValidationError as StdnumValidationError
from stdnum.no import fodselsnummer


def in_app_field() -> forms.BooleanField:
    """TPP-Redirect-Preferred: false, asked for by the payer."""
    return forms.BooleanField(
        label=_("Approve in my bank's app instead of the browser"),
        required=False,
        help_text=_("Where your bank offers it, you confirm in its app on your phone."),
    )


class ApproveForm(forms.Form):
    """The button that sends a signer to the bank to approve a payment (again)."""

    in_app = in_app_field()


class PaymentSubmitForm(forms.Form):
    """The review page's form: the idempotency key it was shown with, and for single SCA (no bank connection)
    the payer's national identity number (fødselsnummer), sent once as X-PSU-IDENTITY and never stored in
    clear."""

    idempotency_key = forms.UUIDField(widget=forms.HiddenInput)
    national_identity_number = forms.CharField(
        label=_("Your national identity number (fødselsnummer)"),
        help_text=_("11 digits. The bank uses it to find you; you approve the payment at the bank."),
        widget=forms.TextInput(
            attrs={"inputmode": "numeric", "autocomplete": "off", "maxlength": 13, "spellcheck": "false"}
        ),
        error_messages={"required": _("Enter your national identity number (11 digits).")},
    )
    in_app = in_app_field()

    def __init__(self, *args, needs_identity: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not needs_identity:
            del self.fields["national_identity_number"]

    def clean_national_identity_number(self) -> str:
        value = "".join(self.cleaned_data["national_identity_number"].split())
        try:
            return fodselsnummer.validate(value)
        except StdnumValidationError:
            raise ValidationError(
                _("This is not a valid national identity number: 11 digits with two check digits."),
                code="fodselsnummer_invalid",
            ) from None
