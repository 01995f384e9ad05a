"""The filters of an account's transactions (the account page and its CSV export)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import TransactionStatus
from accounts.selectors import TransactionFilters

#: Larger than any amount the bank stores (Transaction.amount: 23 digits, 5 of them decimals).
_AMOUNT_LIMIT = Decimal("999999999999999999")


class AmountField(forms.DecimalField):
    """A decimal in the active language's format; spaces (the grouping in nb: "1 250,50") are ignored."""

    def to_python(self, value):
        if isinstance(value, str):
            value = "".join(value.split())  # also the no-break spaces that number formatting writes
        return super().to_python(value)


def _amount_field(label: str) -> AmountField:
    return AmountField(
        label=label,
        required=False,
        min_value=Decimal(0),
        max_value=_AMOUNT_LIMIT,
        max_digits=23,
        decimal_places=5,
        localize=True,  # "1 250,50" in nb, "1,250.50" in en
        widget=forms.TextInput(attrs={"inputmode": "decimal", "autocomplete": "off", "size": 12}),
    )


class TransactionFilterForm(forms.Form):
    character_count = False  # a filter, not text to send: no count under its fields (portal_forms)

    status = forms.ChoiceField(
        label=_("Show"),
        required=False,
        choices=[("", _("Booked and pending")), *TransactionStatus.choices],
    )
    date_from = forms.DateField(
        label=_("Booked from"), required=False, widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )
    date_to = forms.DateField(
        label=_("Booked to"), required=False, widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
    )
    q = forms.CharField(
        label=_("Text"),
        required=False,
        max_length=100,
        strip=True,
        help_text=_("Name, account, message, KID"),
        widget=forms.TextInput(attrs={"type": "search", "autocomplete": "off"}),
    )
    direction = forms.ChoiceField(
        label=_("Direction"),
        required=False,
        choices=[("", _("In and out")), ("in", _("Money in")), ("out", _("Money out"))],
    )
    amount_min = _amount_field(_("Amount from"))
    amount_max = _amount_field(_("Amount to"))

    def clean_q(self) -> str:
        value = self.cleaned_data["q"]
        if value and not value.isprintable():
            raise forms.ValidationError(_("Use letters, digits and punctuation only."))
        return value

    def clean(self):
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", _("The end date is before the start date."))
        low, high = data.get("amount_min"), data.get("amount_max")
        if low is not None and high is not None and low > high:
            self.add_error("amount_max", _("The largest amount is smaller than the smallest."))
        return data

    def filters(self) -> TransactionFilters:
        """The filters (call after is_valid() returned True; an unbound form filters nothing)."""
        if not self.is_bound:
            return TransactionFilters()
        data = self.cleaned_data
        return TransactionFilters(
            status=data.get("status") or "",
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            text=data.get("q") or "",
            amount_min=data.get("amount_min"),
            amount_max=data.get("amount_max"),
            direction=data.get("direction") or "",
        )
