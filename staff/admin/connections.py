"""Admin: users' bank connections with their timeline, SCA states, refused identities, PSU-ID bindings.

Staff read; the only write is the action, which goes through the service (a connection's state changes only
through ``connections.services.connection_transition``). PSU identifiers are shown masked and are never
searchable in clear: an exact PSU-ID typed in the search box is matched by its keyed hash.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.utils import display_for_value
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.models import BankAccount
from connections.errors import IllegalTransition
from connections.models import (
    BankConnection,
    ConnectionEvent,
    ConnectionState,
    ConsentReminder,
    IdentityRefusal,
    PsuBinding,
    ScaState,
    TppSession,
)
from connections.plugins import purpose_label
from connections.services import connection_transition
from staff.admin.bank_calls import bank_calls_link
from staff.admin.helpers import (
    IdentifierHashSearchMixin,
    ReadOnlyAdminMixin,
    ReadOnlyInline,
    csv_value,
    export_csv,
    fieldset_fields,
    masked,
)


class ReconnectReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=150,
        strip=True,
        widget=forms.TextInput(attrs={"size": 80}),
        error_messages={"required": _("Say why: it is kept in the connection's timeline.")},
    )


class ConsentValidityFilter(admin.SimpleListFilter):
    title = _("consent validity")
    parameter_name = "consent"

    def lookups(self, request, model_admin):
        return [
            ("valid", _("valid")),
            ("expiring", _("expires within 14 days")),
            ("expired", _("expired")),
            ("none", _("no consent")),
        ]

    def queryset(self, request, queryset):
        now = timezone.now()
        value = self.value()
        if value == "valid":
            return queryset.filter(consent_valid_until__gt=now)
        if value == "expiring":
            return queryset.filter(consent_valid_until__gt=now, consent_valid_until__lte=now + timedelta(days=14))
        if value == "expired":
            return queryset.filter(consent_valid_until__lte=now)
        if value == "none":
            return queryset.filter(consent_valid_until__isnull=True)
        return queryset


class PurposeFilter(admin.SimpleListFilter):
    """The SCA purposes, in words (the field's own filter lists the stored names)."""

    title = _("purpose")
    parameter_name = "purpose"

    def lookups(self, request, model_admin):
        seen = model_admin.get_queryset(request).order_by().values_list("purpose", flat=True).distinct()
        return sorted(((name, purpose_label(name)) for name in seen), key=lambda choice: choice[1])

    def queryset(self, request, queryset):
        return queryset.filter(purpose=self.value()) if self.value() else queryset


class ConnectionEventInline(ReadOnlyInline, admin.TabularInline):
    model = ConnectionEvent
    fields = ("at", "from_state", "to_state", "reason_shown", "actor")
    readonly_fields = fields
    ordering = ("at", "id")
    verbose_name_plural = _("timeline")

    @admin.display(description=_("why"))
    def reason_shown(self, event: ConnectionEvent) -> str:
        return event.reason_shown


class BankAccountInline(ReadOnlyInline, admin.TabularInline):
    model = BankAccount
    fields = ("account_link", "kind", "iban", "masked_pan", "currency", "consented", "balances_refreshed_at")
    readonly_fields = fields

    @admin.display(description=_("account"))
    def account_link(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_bankaccount_change", args=[account.pk])
        return format_html('<a href="{}">{}</a>', url, account)


class ConsentReminderInline(ReadOnlyInline, admin.TabularInline):
    model = ConsentReminder
    fields = ("consent_valid_until", "days_before", "claimed_at", "sent_at")
    readonly_fields = fields
    verbose_name_plural = _("consent expiry reminders")


@admin.register(BankConnection)
class BankConnectionAdmin(IdentifierHashSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "user",
        "context",
        "access",
        "state",
        "agreement_name",
        "psu_id_masked",
        "consent_valid_until",
        "consent_status",
        "sca_at",
        "created_at",
    )
    list_filter = ("state", "context", "access", ConsentValidityFilter, "created_at")
    search_fields = ("=user__email", "agreement_name")
    search_help_text = _(
        "A user's exact e-mail, part of an agreement name, or an exact PSU-ID or PSU-Corporate-ID "
        "(matched by its keyed hash; identifiers are never stored in clear)."
    )
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    fieldsets = (
        (None, {"fields": ("user", "context", "access", "state", "agreement_name")}),
        (_("Bank identity (masked)"), {"fields": ("psu_id_masked", "psu_corporate_id_masked")}),
        (_("Consent"), {"fields": ("sca_at", "consent_valid_until", "consent_status", "accounts_fetched_at")}),
        (_("Audit"), {"fields": ("bank_calls", "created_at", "updated_at")}),
    )
    readonly_fields = fieldset_fields(fieldsets)
    inlines = (ConnectionEventInline, BankAccountInline, ConsentReminderInline)
    actions = [export_csv, "mark_needs_reconnect"]

    identifier_hash_fields = ("psu_id_hash", "psu_corporate_id_hash")

    @admin.display(description=_("PSU-ID"))
    def psu_id_masked(self, connection: BankConnection) -> str:
        return masked(connection.psu_id) or "-"

    @admin.display(description=_("PSU-Corporate-ID"))
    def psu_corporate_id_masked(self, connection: BankConnection) -> str:
        return masked(connection.psu_corporate_id) or "-"

    @admin.display(description=_("consent"))
    def consent_status(self, connection: BankConnection) -> str:
        if connection.consent_valid_until is None:
            return _("none")
        remaining = connection.consent_valid_until - timezone.now()
        if remaining <= timedelta(0):
            return _("expired")
        return ngettext("valid, %(days)s day left", "valid, %(days)s days left", remaining.days) % {
            "days": remaining.days
        }

    @admin.display(description=_("bank calls"))
    def bank_calls(self, connection: BankConnection) -> str:
        return bank_calls_link(connection)

    @admin.action(description=_("Mark as needing reconnection"), permissions=["change"])
    def mark_needs_reconnect(self, request, queryset):
        """Asks for the reason first (a confirmation page), then moves each connection through the service."""
        form = ReconnectReasonForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            context = {
                **self.admin_site.each_context(request),
                "title": _("Mark as needing reconnection"),
                "opts": self.model._meta,
                "queryset": queryset.select_related("user"),
                "form": form,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/connections/bankconnection/mark_needs_reconnect.html", context)
        reason = form.cleaned_data["reason"]
        for connection in queryset:
            try:
                connection_transition(
                    connection=connection,
                    to=ConnectionState.NEEDS_RECONNECT,
                    actor=request.user,
                    reason=f"staff: {reason}"[:200],
                )
            except IllegalTransition:
                self.message_user(
                    request,
                    _("%(connection)s: a %(state)s connection cannot be marked.")
                    % {"connection": connection, "state": connection.get_state_display().lower()},
                    level="error",
                )
                continue
            self.log_change(request, connection, f"Marked as needing reconnection: {reason}")
            self.message_user(
                request,
                _("%(connection)s: marked as needing reconnection.") % {"connection": connection},
                level="success",
            )
        return None


@admin.register(ScaState)
class ScaStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """SCA redirects started; neither the state nor the TPP-Session-ID sent is shown."""

    list_display = ("id", "user", "purpose_shown", "context", "connection", "created_at", "used_at", "outcome")
    list_filter = (PurposeFilter, "context", "created_at")
    search_fields = ("=user__email",)
    search_help_text = _("A user's exact e-mail.")
    list_select_related = ("user", "connection")
    date_hierarchy = "created_at"
    fields = (
        "user",
        "purpose_shown",
        "context",
        "connection",
        "agreement_name",
        "created_at",
        "used_at",
        "outcome",
    )
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description=_("purpose"), ordering="purpose")
    @csv_value(lambda state: state.purpose)
    def purpose_shown(self, state: ScaState) -> str:
        return state.purpose_label

    @admin.display(description=_("outcome"))
    def outcome(self, state: ScaState) -> str:
        if state.used_at is not None:
            return _("came back")
        return _("expired unused") if state.expires_at <= timezone.now() else _("waiting for the PSU")


@admin.register(TppSession)
class TppSessionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Each user's TPP-Session-ID (not shown, nor the PSU-ID of its SCA): when it was first used, when the first
    SCA in it came back (its hour at the bank runs from then), and when the portal replaces it."""

    list_display = ("id", "user", "started_at", "sca_at", "expires")
    search_fields = ("=user__email",)
    search_help_text = _("A user's exact e-mail.")
    list_select_related = ("user",)
    fields = ("user", "started_at", "sca_at", "expires")
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description=_("replaced after"))
    @csv_value(lambda session: session.expires_at)
    def expires(self, session: TppSession) -> str:
        return display_for_value(session.expires_at, self.get_empty_value_display())


@admin.register(IdentityRefusal)
class IdentityRefusalAdmin(IdentifierHashSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Redirects back from SCA whose claimed identity the portal refused (a swapped PSU-ID, an agreement the bank
    does not list, an SCA done as someone else): nothing was stored from them. The identifiers are kept only as
    keyed hashes; type an exact PSU-ID in the search box to find its refusals."""

    list_display = ("at", "user", "reason", "purpose_shown", "bound_to", "detail")
    list_filter = ("reason", PurposeFilter, "at")
    search_fields = ("=user__email",)
    search_help_text = _(
        "A user's exact e-mail, or an exact PSU-ID or PSU-Corporate-ID (matched by its keyed hash)."
    )
    list_select_related = ("user", "bound_to")
    date_hierarchy = "at"
    fields = ("at", "user", "reason", "purpose_shown", "bound_to", "detail")
    readonly_fields = fields
    actions = [export_csv]

    identifier_hash_fields = ("psu_id_hash", "psu_corporate_id_hash")

    @admin.display(description=_("SCA purpose"), ordering="purpose")
    @csv_value(lambda refusal: refusal.purpose)
    def purpose_shown(self, refusal: IdentityRefusal) -> str:
        return purpose_label(refusal.purpose)


@admin.register(PsuBinding)
class PsuBindingAdmin(IdentifierHashSearchMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Which portal user each PSU-ID belongs to (by its keyed hash: type an exact PSU-ID to find it)."""

    list_display = ("id", "user", "bound_at")
    search_fields = ("=user__email",)
    search_help_text = _("A user's exact e-mail, or an exact PSU-ID (matched by its keyed hash).")
    list_select_related = ("user",)
    fields = ("user", "bound_at")
    readonly_fields = fields
    actions = [export_csv]

    identifier_hash_fields = ("psu_id_hash",)
