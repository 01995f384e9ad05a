"""Admin: users' bank connections with their timeline, accounts with their refresh budget, balances, SCA states.

Staff read; the only writes are the actions, which go through the services (a connection's state changes only
through ``services.connection_transition``; a refresh through ``accounts.refresh.account_refresh``). PSU
identifiers are shown masked and are never searchable in clear: an exact PSU-ID typed in the search box is
matched by its keyed hash.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ChangeList
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode

from accounts.models import (
    BalanceSnapshot,
    BankAccount,
    BankConnection,
    ConnectionEvent,
    ConnectionState,
    ConsentReminder,
    RefreshCall,
    ScaState,
    Transaction,
)
from accounts.services import IllegalTransition, connection_transition
from tpp_portal.admin import (
    ReadOnlyAdminMixin,
    ReadOnlyInline,
    amount_text,
    bank_calls_link,
    csv_value,
    export_csv,
    fieldset_fields,
    masked,
    run_bank_action,
    search_by_identifier_hash,
)

#: Bank calls made by one admin action, at most (staff wait for the page).
ACTION_LIMIT = 20


class ReconnectReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=150,
        strip=True,
        widget=forms.TextInput(attrs={"size": 80}),
        error_messages={"required": "Say why: it is kept in the connection's timeline."},
    )


class ConsentValidityFilter(admin.SimpleListFilter):
    title = "consent validity"
    parameter_name = "consent"

    def lookups(self, request, model_admin):
        return [
            ("valid", "valid"),
            ("expiring", "expires within 14 days"),
            ("expired", "expired"),
            ("none", "no consent"),
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


class ConnectionEventInline(ReadOnlyInline, admin.TabularInline):
    model = ConnectionEvent
    fields = ("at", "from_state", "to_state", "reason", "actor")
    readonly_fields = fields
    ordering = ("at", "id")
    verbose_name_plural = "timeline"


class BankAccountInline(ReadOnlyInline, admin.TabularInline):
    model = BankAccount
    fields = ("account_link", "kind", "iban", "masked_pan", "currency", "consented", "balances_refreshed_at")
    readonly_fields = fields

    @admin.display(description="account")
    def account_link(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_bankaccount_change", args=[account.pk])
        return format_html('<a href="{}">{}</a>', url, account)


class ConsentReminderInline(ReadOnlyInline, admin.TabularInline):
    model = ConsentReminder
    fields = ("consent_valid_until", "days_before", "claimed_at", "sent_at")
    readonly_fields = fields
    verbose_name_plural = "consent expiry reminders"


@admin.register(BankConnection)
class BankConnectionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
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
    search_help_text = (
        "A user's exact e-mail, part of an agreement name, or an exact PSU-ID or PSU-Corporate-ID "
        "(matched by its keyed hash; identifiers are never stored in clear)."
    )
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    fieldsets = (
        (None, {"fields": ("user", "context", "access", "state", "agreement_name")}),
        ("Bank identity (masked)", {"fields": ("psu_id_masked", "psu_corporate_id_masked")}),
        ("Consent", {"fields": ("sca_at", "consent_valid_until", "consent_status", "accounts_fetched_at")}),
        ("Audit", {"fields": ("bank_calls", "created_at", "updated_at")}),
    )
    readonly_fields = fieldset_fields(fieldsets)
    inlines = (ConnectionEventInline, BankAccountInline, ConsentReminderInline)
    actions = [export_csv, "mark_needs_reconnect"]

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term:
            by_hash = search_by_identifier_hash(queryset, term, "psu_id_hash", "psu_corporate_id_hash")
            results = results | by_hash
        return results, may_have_duplicates

    @admin.display(description="PSU-ID")
    def psu_id_masked(self, connection: BankConnection) -> str:
        return masked(connection.psu_id) or "-"

    @admin.display(description="PSU-Corporate-ID")
    def psu_corporate_id_masked(self, connection: BankConnection) -> str:
        return masked(connection.psu_corporate_id) or "-"

    @admin.display(description="consent")
    def consent_status(self, connection: BankConnection) -> str:
        if connection.consent_valid_until is None:
            return "none"
        remaining = connection.consent_valid_until - timezone.now()
        if remaining <= timedelta(0):
            return "expired"
        return f"valid, {remaining.days} days left"

    @admin.display(description="bank calls")
    def bank_calls(self, connection: BankConnection) -> str:
        return bank_calls_link(connection)

    @admin.action(description="Mark as needing reconnection", permissions=["change"])
    def mark_needs_reconnect(self, request, queryset):
        """Asks for the reason first (a confirmation page), then moves each connection through the service."""
        form = ReconnectReasonForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            context = {
                **self.admin_site.each_context(request),
                "title": "Mark as needing reconnection",
                "opts": self.model._meta,
                "queryset": queryset.select_related("user"),
                "form": form,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/accounts/bankconnection/mark_needs_reconnect.html", context)
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
                    f"{connection}: a {connection.get_state_display().lower()} connection cannot be marked.",
                    level="error",
                )
                continue
            self.log_change(request, connection, f"Marked as needing reconnection: {reason}")
            self.message_user(request, f"{connection}: marked as needing reconnection.", level="success")
        return None


class AccountChangeList(ChangeList):
    """The change list of accounts, with every shown account's refresh budget read in one go."""

    def get_results(self, request):
        super().get_results(request)
        from accounts.selectors import refresh_budgets

        budgets = refresh_budgets(account_ids=[account.pk for account in self.result_list])
        for account in self.result_list:
            account.refresh_budget = budgets.get(account.pk)


def _budget_of(account: BankAccount):
    budget = getattr(account, "refresh_budget", None)
    if budget is None and not hasattr(account, "refresh_budget"):
        from accounts.selectors import refresh_budgets

        budget = refresh_budgets(account_ids=[account.pk]).get(account.pk)
        account.refresh_budget = budget
    return budget


@admin.register(BankAccount)
class BankAccountAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "__str__",
        "owner",
        "kind",
        "iban",
        "currency",
        "consented",
        "balances_refreshed_at",
        "budget_used",
        "next_due",
        "blocked_until",
    )
    list_filter = ("kind", "consented", "currency", "connection__state", "connection__context")
    search_fields = ("name", "iban", "bban", "=connection__user__email")
    search_help_text = "Account name, IBAN or BBAN (or part of them), or the owner's exact e-mail."
    list_select_related = ("connection__user",)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "connection_link",
                    "owner",
                    "kind",
                    "name",
                    "product",
                    "cash_account_type",
                    "iban",
                    "bban",
                    "masked_pan",
                    "currency",
                    "resource_id",
                    "consented",
                    "created_at",
                )
            },
        ),
        ("Refresh", {"fields": ("balances_refreshed_at", "budget_used", "next_due", "blocked_until")}),
        ("Related", {"fields": ("balances", "transactions", "bank_calls")}),
    )
    readonly_fields = fieldset_fields(fieldsets)
    actions = [export_csv, "refresh_within_budget"]

    def get_changelist(self, request, **kwargs):
        return AccountChangeList

    @admin.display(description="owner", ordering="connection__user__email")
    def owner(self, account: BankAccount) -> str:
        return str(account.connection.user)

    @admin.display(description="connection")
    def connection_link(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_bankconnection_change", args=[account.connection_id])
        return format_html('<a href="{}">{}</a>', url, account.connection)

    @admin.display(description="unattended calls (24 h)")
    def budget_used(self, account: BankAccount) -> str:
        budget = _budget_of(account)
        return "-" if budget is None else f"{budget.used} of {budget.limit}"

    @admin.display(description="next refresh due")
    def next_due(self, account: BankAccount):
        budget = _budget_of(account)
        return None if budget is None else budget.next_due_at

    @admin.display(description="blocked until (429)")
    def blocked_until(self, account: BankAccount):
        budget = _budget_of(account)
        return None if budget is None else budget.blocked_until

    @admin.display(description="balances")
    def balances(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_balancesnapshot_changelist") + "?" + urlencode({"account__id": account.pk})
        return format_html('<a href="{}">{} balances</a>', url, account.balance_snapshots.count())

    @admin.display(description="transactions")
    def transactions(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_transaction_changelist") + "?" + urlencode({"account__id": account.pk})
        return format_html('<a href="{}">transactions</a>', url)

    @admin.display(description="bank calls")
    def bank_calls(self, account: BankAccount) -> str:
        return bank_calls_link(account)

    @admin.action(description="Refresh now (unattended, within the daily budget)", permissions=["change"])
    def refresh_within_budget(self, request, queryset):
        from accounts.refresh import account_refresh

        def refresh(account: BankAccount) -> tuple[bool, str]:
            outcome = account_refresh(account_id=account.pk, presence=None, actor=request.user)
            if outcome.ok:
                self.log_change(request, account, f"Refreshed by staff: {outcome.message}")
            return outcome.ok, outcome.message

        run_bank_action(self, request, queryset, refresh, limit=ACTION_LIMIT, verb="refresh")


@admin.register(BalanceSnapshot)
class BalanceSnapshotAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("account", "balance_type", "amount_shown", "currency", "reference_date", "fetched_at")
    list_filter = ("balance_type", "currency", "fetched_at")
    search_fields = ("account__name", "account__iban", "=account__connection__user__email")
    search_help_text = "Account name or IBAN (or part of them), or the owner's exact e-mail."
    list_select_related = ("account",)
    show_full_result_count = False
    fields = ("account", "balance_type", "amount_shown", "currency", "reference_date", "fetched_at")
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description="amount", ordering="amount")
    @csv_value(lambda balance: balance.amount)
    def amount_shown(self, balance: BalanceSnapshot) -> str:
        return amount_text(balance.amount, balance.currency).removesuffix(balance.currency).strip()


@admin.register(ScaState)
class ScaStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """SCA redirects started; the TPP-Session-ID itself is a secret and is not shown."""

    list_display = ("id", "user", "purpose", "context", "connection", "created_at", "used_at", "outcome")
    list_filter = ("purpose", "context", "created_at")
    search_fields = ("=user__email",)
    search_help_text = "A user's exact e-mail."
    list_select_related = ("user", "connection")
    date_hierarchy = "created_at"
    fields = ("user", "purpose", "context", "connection", "agreement_name", "created_at", "used_at", "outcome")
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description="outcome")
    def outcome(self, state: ScaState) -> str:
        if state.used_at is not None:
            return "used"
        return "expired unused" if state.expires_at <= timezone.now() else "waiting for the PSU"


@admin.register(Transaction)
class TransactionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "account",
        "status",
        "booking_date",
        "value_date",
        "amount_shown",
        "currency",
        "counterparty_name",
        "remittance_short",
        "transaction_id",
    )
    list_filter = ("status", "currency", "booking_date")
    search_fields = (
        "counterparty_name",
        "remittance",
        "=transaction_id",
        "=end_to_end_id",
        "=kid",
        "account__iban",
        "=account__connection__user__email",
    )
    search_help_text = (
        "Part of the counterparty or the remittance text or the account's IBAN; an exact transactionId, "
        "end-to-end id, KID or owner's e-mail."
    )
    list_select_related = ("account",)
    show_full_result_count = False
    fields = (
        "account",
        "status",
        "transaction_id",
        "booking_date",
        "value_date",
        "amount_shown",
        "currency",
        "counterparty_name",
        "counterparty_account",
        "remittance",
        "kid",
        "end_to_end_id",
        "raw",
        "first_seen_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description="amount", ordering="amount")
    @csv_value(lambda transaction: transaction.amount)
    def amount_shown(self, transaction: Transaction) -> str:
        return amount_text(transaction.amount, transaction.currency).removesuffix(transaction.currency).strip()

    @admin.display(description="remittance")
    def remittance_short(self, transaction: Transaction) -> str:
        text = transaction.remittance or ""
        return text if len(text) <= 60 else text[:59] + "…"


@admin.register(RefreshCall)
class RefreshCallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The ledger of unattended bank calls (the refresh budget: 4 per account and kind per rolling 24 hours)."""

    list_display = ("account", "kind", "reserved_at")
    list_filter = ("kind", "reserved_at")
    search_fields = ("account__iban", "account__name", "=account__connection__user__email")
    search_help_text = "Part of the account's IBAN or name, or the owner's exact e-mail."
    list_select_related = ("account",)
    show_full_result_count = False
    fields = ("account", "kind", "resource_key", "reserved_at")
    readonly_fields = fields
    actions = [export_csv]
