"""The filters of the payments list (and of its CSV export)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from payments.selectors import ListFilters, StatusGroup
from payments.validators import validate_currency


class PaymentListFilterForm(forms.Form):
    character_count = False  # a filter, not text to send: no count under its fields (portal_forms)

    group = forms.ChoiceField(
        label=_("Status"),
        required=False,
        choices=[
            ("", _("All")),
            (StatusGroup.NEEDS_ACTION, _("Needs your action")),
            (StatusGroup.IN_PROGRESS, _("In progress")),
            (StatusGroup.COMPLETED, _("Completed")),
            (StatusGroup.NOT_COMPLETED, _("Rejected or cancelled")),
            (StatusGroup.DRAFT, _("Drafts, not sent")),
        ],
    )
    q = forms.CharField(label=_("Recipient"), required=False, max_length=70, strip=True)
    currency = forms.CharField(label=_("Currency"), required=False, max_length=3, strip=True)
    date_from = forms.DateField(label=_("From"), required=False, widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(label=_("To"), required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def clean_currency(self) -> str:
        value = self.cleaned_data["currency"].upper()
        if value:
            validate_currency(value)
        return value

    def clean(self):
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", _("The end date is before the start date."))
        return data

    def filters(self) -> ListFilters:
        """The valid filters (call after is_valid(); an invalid filter is left out)."""
        data = self.cleaned_data if self.is_bound else {}
        return ListFilters(
            group=data.get("group") or "",
            text=data.get("q") or "",
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            currency=data.get("currency") or "",
        )
