"""Admin: bank accounts with their refresh budget, balances, transactions and the ledger of unattended calls.

Staff read; the only write is the refresh action, which goes through ``accounts.refresh.account_refresh``.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.contrib.admin.utils import display_for_value
from django.contrib.admin.views.main import ChangeList
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.ledger import refresh_budgets
from accounts.models import BALANCE_TYPE_LABELS, BalanceSnapshot, BankAccount, RefreshCall, Transaction
from accounts.refresh import account_refresh
from staff.admin.bank_calls import bank_calls_link
from staff.admin.helpers import (
    ACTION_LIMIT,
    ReadOnlyAdminMixin,
    amount_text,
    csv_value,
    export_csv,
    fieldset_fields,
    run_bank_action,
)


class AccountChangeList(ChangeList):
    """The change list of accounts, with every shown account's refresh budget read in one go."""

    def get_results(self, request):
        super().get_results(request)
        budgets = refresh_budgets(account_ids=[account.pk for account in self.result_list])
        for account in self.result_list:
            account.refresh_budget = budgets.get(account.pk)


def _budget_of(account: BankAccount):
    budget = getattr(account, "refresh_budget", None)
    if budget is None and not hasattr(account, "refresh_budget"):
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
    search_help_text = _("Account name, IBAN or BBAN (or part of them), or the owner's exact e-mail.")
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
        (_("Refresh"), {"fields": ("balances_refreshed_at", "budget_used", "next_due", "blocked_until")}),
        (_("Related"), {"fields": ("balances", "transactions", "bank_calls")}),
    )
    readonly_fields = fieldset_fields(fieldsets)
    actions = [export_csv, "refresh_within_budget"]

    def get_changelist(self, request, **kwargs):
        return AccountChangeList

    @admin.display(description=_("owner"), ordering="connection__user__email")
    def owner(self, account: BankAccount) -> str:
        return str(account.connection.user)

    @admin.display(description=_("connection"))
    def connection_link(self, account: BankAccount) -> str:
        url = reverse("admin:connections_bankconnection_change", args=[account.connection_id])
        return format_html('<a href="{}">{}</a>', url, account.connection)

    @admin.display(description=_("unattended calls (24 h)"))
    def budget_used(self, account: BankAccount) -> str:
        budget = _budget_of(account)
        return "-" if budget is None else _("%(used)s of %(limit)s") % {"used": budget.used, "limit": budget.limit}

    def _moment(self, value) -> str:
        """A time as the admin shows a date field's (localised, in the staff member's language), or the admin's
        "-": the change page prints a method's value as it is, which was "None" or an unlocalised time."""
        return display_for_value(value, self.get_empty_value_display())

    @admin.display(description=_("next refresh due"))
    def next_due(self, account: BankAccount) -> str:
        budget = _budget_of(account)
        return self._moment(None if budget is None else budget.next_due_at)

    @admin.display(description=_("blocked until (429)"))
    def blocked_until(self, account: BankAccount) -> str:
        budget = _budget_of(account)
        return self._moment(None if budget is None else budget.blocked_until)

    @admin.display(description=_("balances"))
    def balances(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_balancesnapshot_changelist") + "?" + urlencode({"account__id": account.pk})
        count = account.balance_snapshots.count()
        return format_html(
            '<a href="{}">{}</a>',
            url,
            ngettext("%(count)s balance", "%(count)s balances", count) % {"count": count},
        )

    @admin.display(description=_("transactions"))
    def transactions(self, account: BankAccount) -> str:
        url = reverse("admin:accounts_transaction_changelist") + "?" + urlencode({"account__id": account.pk})
        return format_html('<a href="{}">{}</a>', url, _("transactions"))

    @admin.display(description=_("bank calls"))
    def bank_calls(self, account: BankAccount) -> str:
        return bank_calls_link(account)

    @admin.action(description=_("Refresh now (unattended, within the daily budget)"), permissions=["change"])
    def refresh_within_budget(self, request, queryset):
        def refresh(account: BankAccount) -> tuple[bool, str]:
            outcome = account_refresh(account_id=account.pk, presence=None, actor=request.user)
            if outcome.ok:
                self.log_change(request, account, f"Refreshed by staff: {outcome.message}")
            return outcome.ok, outcome.message

        run_bank_action(self, request, queryset, refresh, limit=ACTION_LIMIT)


class BalanceTypeFilter(admin.SimpleListFilter):
    """The balance types seen, in words (the field's own filter lists the bank's codes)."""

    title = _("type")
    parameter_name = "balance_type"

    def lookups(self, request, model_admin):
        seen = model_admin.get_queryset(request).order_by().values_list("balance_type", flat=True).distinct()
        return sorted(((code, BALANCE_TYPE_LABELS.get(code, code)) for code in seen), key=lambda c: str(c[1]))

    def queryset(self, request, queryset):
        return queryset.filter(balance_type=self.value()) if self.value() else queryset


@admin.register(BalanceSnapshot)
class BalanceSnapshotAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("account", "type_label", "amount_shown", "currency", "reference_date", "fetched_at")
    list_filter = (BalanceTypeFilter, "currency", "fetched_at")
    search_fields = ("account__name", "account__iban", "=account__connection__user__email")
    search_help_text = _("Account name or IBAN (or part of them), or the owner's exact e-mail.")
    list_select_related = ("account",)
    show_full_result_count = False
    fields = ("account", "type_shown", "amount_shown", "currency", "reference_date", "fetched_at")
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description=_("type"), ordering="balance_type")
    @csv_value(lambda balance: balance.balance_type)
    def type_label(self, balance: BalanceSnapshot) -> str:
        return balance.type_label

    @admin.display(description=_("type"))
    def type_shown(self, balance: BalanceSnapshot) -> str:
        """The type in words; the bank's code (``closingBooked``) behind a disclosure."""
        return format_html(
            '{} <details class="bank-code"><summary>{}</summary><code>{}</code></details>',
            balance.type_label,
            _("bank's code"),
            balance.balance_type,
        )

    @admin.display(description=_("amount"), ordering="amount")
    @csv_value(lambda balance: balance.amount)
    def amount_shown(self, balance: BalanceSnapshot) -> str:
        return amount_text(balance.amount, balance.currency).removesuffix(balance.currency).strip()


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
    search_help_text = _(
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
        "raw_shown",
        "first_seen_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = [export_csv]

    @admin.display(description=_("amount"), ordering="amount")
    @csv_value(lambda transaction: transaction.amount)
    def amount_shown(self, transaction: Transaction) -> str:
        return amount_text(transaction.amount, transaction.currency).removesuffix(transaction.currency).strip()

    @admin.display(description=_("as sent by the bank"))
    def raw_shown(self, transaction: Transaction) -> str:
        """The bank's JSON as it was sent, folded: its keys are the bank's names, not words to read."""
        if not transaction.raw:
            return "-"
        return format_html(
            '<details class="bank-json"><summary>{}</summary><pre>{}</pre></details>',
            _("show"),
            json.dumps(transaction.raw, indent=2, ensure_ascii=False, sort_keys=True),
        )

    @admin.display(description=_("remittance"))
    def remittance_short(self, transaction: Transaction) -> str:
        text = transaction.remittance or ""
        return text if len(text) <= 60 else text[:59] + "…"


@admin.register(RefreshCall)
class RefreshCallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The ledger of unattended bank calls (the refresh budget: 4 per account and kind per rolling 24 hours)."""

    list_display = ("account", "kind", "reserved_at")
    list_filter = ("kind", "reserved_at")
    search_fields = ("account__iban", "account__name", "=account__connection__user__email")
    search_help_text = _("Part of the account's IBAN or name, or the owner's exact e-mail.")
    list_select_related = ("account",)
    show_full_result_count = False
    fields = ("account", "kind", "resource_key", "reserved_at")
    readonly_fields = fields
    actions = [export_csv]
