"""Admin: exchange rates (staff correct or add one; every save records who made it) and payments with their status
timeline and signatures (read-only; staff may poll a payment's status at the bank now)."""

from __future__ import annotations

import uuid

from django.contrib import admin
from django.db.models import Q
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from payments.models import (
    ExchangeRate,
    ExchangeRateSource,
    Payment,
    PaymentAuthorisation,
    PaymentEvent,
    PaymentMail,
    PaymentState,
)
from payments.services.exchange_rates import exchange_rate_save_by_staff
from payments.services.polling import payment_poll
from payments.services.staff import payment_staff_attach, payment_staff_settle
from payments.status import OUTCOMES, outcome_query, payment_outcome
from staff.admin.bank_calls import bank_calls_link
from staff.admin.helpers import (
    ACTION_LIMIT,
    ReadOnlyAdminMixin,
    ReadOnlyInline,
    amount_exact,
    amount_text,
    csv_value,
    export_csv,
    fieldset_fields,
    run_bank_action,
)
from staff.selectors import PAYMENT_WAITING_STATES


@admin.register(ExchangeRate)
class ExchangeRateAdmin(admin.ModelAdmin):
    list_display = ("currency", "rate_date", "rate", "unit", "source", "fetched_at", "updated_by", "updated_at")
    list_filter = ("currency", "source", "rate_date")
    search_fields = ("currency",)
    date_hierarchy = "rate_date"
    ordering = ("-rate_date", "currency")
    readonly_fields = ("fetched_at", "updated_by", "updated_at")
    list_select_related = ("updated_by",)
    actions = [export_csv]
    fields = ("currency", "rate", "unit", "rate_date", "source", "fetched_at", "updated_by", "updated_at")

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        initial.setdefault("source", ExchangeRateSource.MANUAL)
        return initial

    def get_readonly_fields(self, request, obj=None):
        # An existing rate keeps its identity (currency, date, source); staff correct its figures.
        if obj is not None:
            return (*self.readonly_fields, "currency", "rate_date", "source")
        return self.readonly_fields

    def save_model(self, request, obj, form, change):
        exchange_rate_save_by_staff(exchange_rate=obj, user=request.user)


# --- payments ----------------------------------------------------------------------------------------------


class WaitingFilter(admin.SimpleListFilter):
    """Payments still waiting on a final bank status (the dashboard's figure) or already settled."""

    title = _("bank status")
    parameter_name = "waiting"

    def lookups(self, request, model_admin):
        return [("yes", _("waiting on a final status")), ("no", _("final or never sent"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(state__in=PAYMENT_WAITING_STATES)
        if self.value() == "no":
            return queryset.exclude(state__in=PAYMENT_WAITING_STATES)
        return queryset


#: The portal's states as staff read them. FINAL is "Completed" to the customer, beside the bank's words; here
#: it stands beside the outcome and must not read "Completed" for a payment the bank rejected or cancelled.
STATE_LABELS = {**dict(PaymentState.choices), PaymentState.FINAL: _("Final status from the bank")}


class StateFilter(admin.SimpleListFilter):
    """The portal's state, in the staff's words (STATE_LABELS); the parameter is the one the dashboard links."""

    title = _("state")
    parameter_name = "state__exact"

    def lookups(self, request, model_admin):
        return list(STATE_LABELS.items())

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(state=self.value())
        return queryset


class OutcomeFilter(admin.SimpleListFilter):
    """What the bank made of the payment (payments.status.payment_outcome), as the list's filter."""

    title = _("outcome")
    parameter_name = "outcome"

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _tone) in OUTCOMES.items()]

    def queryset(self, request, queryset):
        if self.value() in OUTCOMES:
            return queryset.filter(outcome_query(self.value()))
        return queryset


class TransactionStatusFilter(admin.AllValuesFieldListFilter):
    """The bank's statuses seen, as Django lists them, with a name for the empty one (a payment the bank has not
    answered yet): Django shows it as a link without text, which a screen reader cannot name."""

    def choices(self, changelist):
        for choice in super().choices(changelist):
            if choice["display"] == "":
                choice = {**choice, "display": _("No status yet")}
            yield choice


class StaffQueueFilter(admin.SimpleListFilter):
    """The payments the portal could not settle by itself (payments.services.staff): a lost answer past the
    replay window, a refused replay, no final status within the poll horizon."""

    title = _("staff queue")
    parameter_name = "staff"

    def lookups(self, request, model_admin):
        return [("yes", _("for staff to settle"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(staff_flagged_at__isnull=False).exclude(
                state__in=(PaymentState.FINAL, PaymentState.FOUND, PaymentState.NOT_AT_BANK)
            )
        return queryset


class PaymentEventInline(ReadOnlyInline, admin.TabularInline):
    model = PaymentEvent
    fields = ("at", "kind", "transaction_status", "funds_available", "detail", "actor")
    readonly_fields = fields
    ordering = ("at", "id")
    verbose_name_plural = _("status timeline")


class PaymentAuthorisationInline(ReadOnlyInline, admin.TabularInline):
    model = PaymentAuthorisation
    fields = ("signer", "started_at", "completed_at", "failed_at", "failure")
    readonly_fields = fields
    ordering = ("started_at", "id")
    verbose_name_plural = _("signatures")


class PaymentMailInline(ReadOnlyInline, admin.TabularInline):
    """The mails about the payment (payments.services.notifications): whom, for which event, and whether sent."""

    model = PaymentMail
    fields = ("created_at", "kind", "transaction_status", "user", "sent_at", "dropped_at")
    readonly_fields = fields
    ordering = ("created_at", "id")
    verbose_name_plural = _("mails about the payment")


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    # The outcome and the state first, where a narrow screen or the filter sidebar leaves them in view.
    list_display = (
        "id",
        "created_at",
        "outcome_shown",
        "state_shown",
        "amount_shown",
        "creditor_name",
        "user",
        "product",
        "context",
        "transaction_status",
        "poll_count",
        "next_poll_at",
        "final_at",
    )
    list_filter = (
        StaffQueueFilter,
        OutcomeFilter,
        WaitingFilter,
        StateFilter,
        ("transaction_status", TransactionStatusFilter),
        "product",
        "context",
        "currency",
        "created_at",
    )
    search_fields = ("=payment_id", "=user__email", "creditor_name", "=creditor_account", "=debtor_account")
    search_help_text = _(
        "The bank's exact paymentId, an exact X-Request-ID or idempotency key, the initiator's exact e-mail, "
        "part of the creditor's name, or an exact account number."
    )
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "user",
                    "connection_link",
                    "product",
                    "context",
                    "outcome_shown",
                    "state_shown",
                    "amount_shown",
                    "nok_equivalent_shown",
                    "nok_rate",
                    "nok_rate_unit",
                    "nok_rate_date",
                    "nok_rate_source",
                    "debtor_account",
                    "creditor_name",
                    "creditor_account",
                    "requested_execution_date",
                )
            },
        ),
        (
            _("The bank"),
            {
                "fields": (
                    "payment_id_shown",
                    "transaction_status",
                    "funds_available",
                    "fee_shown",
                    "fee_indicator",
                    "psu_message",
                    "tpp_messages",
                    "link_names",
                    "bank_calls",
                )
            },
        ),
        (
            _("Handling"),
            {
                "fields": (
                    "idempotency_key",
                    "request_id",
                    "next_poll_at",
                    "poll_count",
                    "poll_lease_until",
                    "reconcile_attempts",
                    "reconcile_at",
                    "replay_not_before",
                    "staff_flagged_at",
                    "staff_reason",
                    "allow_logical_duplicate",
                    "created_at",
                    "submitted_at",
                    "final_at",
                    "updated_at",
                )
            },
        ),
        (_("Instruction as sent"), {"classes": ("collapse",), "fields": ("body_json",)}),
    )
    # Not shown: the SCA state token (TPP-Session-ID), the encrypted PSU headers kept for a replay
    # (psu_identity, initiation_psu), the form as typed, the poll lease token and the bank's links' addresses.
    readonly_fields = fieldset_fields(fieldsets)
    inlines = (PaymentEventInline, PaymentAuthorisationInline, PaymentMailInline)
    actions = [export_csv, "poll_status_now", "settle_at_bank", "settle_not_at_bank", "attach_bank_payment"]

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        try:
            key = uuid.UUID(search_term.strip())
        except ValueError:
            return results, may_have_duplicates
        return results | queryset.filter(Q(request_id=key) | Q(idempotency_key=key)), may_have_duplicates

    @admin.display(description=_("amount"), ordering="amount")
    @csv_value(lambda payment: amount_exact(payment.amount, payment.currency))  # the CSV cell: not grouped
    def amount_shown(self, payment: Payment) -> str:
        return amount_text(payment.amount, payment.currency)

    @admin.display(description=_("paymentId"))
    def payment_id_shown(self, payment: Payment) -> str:
        """The bank's paymentId is its code for the payment: shown as code, not as words."""
        return format_html("<code>{}</code>", payment.payment_id) if payment.payment_id else "-"

    @admin.display(description=_("outcome"))
    def outcome_shown(self, payment: Payment) -> str:
        return payment_outcome(payment).label

    @admin.display(description=_("state"), ordering="state")
    def state_shown(self, payment: Payment) -> str:
        return str(STATE_LABELS.get(payment.state, payment.state))

    @admin.display(description=_("NOK equivalent"))
    def nok_equivalent_shown(self, payment: Payment) -> str:
        return amount_text(payment.nok_equivalent, "NOK")

    @admin.display(description=_("fee"))
    def fee_shown(self, payment: Payment) -> str:
        return amount_text(payment.fee_amount, payment.fee_currency)

    @admin.display(description=_("connection"))
    def connection_link(self, payment: Payment) -> str:
        if payment.connection_id is None:
            return "-"
        url = reverse("admin:connections_bankconnection_change", args=[payment.connection_id])
        return format_html('<a href="{}">{}</a>', url, _("connection #%(pk)s") % {"pk": payment.connection_id})

    @admin.display(description=_("bank's links"))
    def link_names(self, payment: Payment) -> str:
        names = sorted(payment.links or {})
        if not names:
            return "-"
        return format_html_join(", ", "<code>{}</code>", ((name,) for name in names))

    @admin.display(description=_("bank calls"))
    def bank_calls(self, payment: Payment) -> str:
        return bank_calls_link(payment)

    @admin.action(description=_("Poll the bank's status now"), permissions=["change"])
    def poll_status_now(self, request, queryset):
        def poll(payment: Payment) -> tuple[bool, str]:
            outcome = payment_poll(payment_id=payment.pk, actor=request.user)
            if not outcome.ok or outcome.skipped:
                return outcome.ok, outcome.message or _("nothing was polled.")
            status = outcome.status or "-"
            changed = "changed to" if outcome.changed else "unchanged:"
            self.log_change(request, payment, f"Status polled by staff: bank status {changed} {status}.")
            if outcome.changed:
                summary = _("bank status changed to %(status)s.") % {"status": status}
            else:
                summary = _("bank status unchanged: %(status)s.") % {"status": status}
            return True, f"{summary} {outcome.message}".strip()

        run_bank_action(self, request, queryset, poll, limit=ACTION_LIMIT)

    def _settle(self, request, queryset, *, at_bank: bool) -> None:
        # The admin's log keeps its English record; staff read the outcome in their language.
        logged = "the bank has the payment" if at_bank else "the bank does not have the payment"
        summary = _("the bank has the payment") if at_bank else _("the bank does not have the payment")

        def settle(payment: Payment) -> tuple[bool, str]:
            if payment.state != PaymentState.UNCONFIRMED:
                return False, _("only a payment the bank did not confirm is settled this way.")
            if not payment_staff_settle(payment_id=payment.pk, staff_user=request.user, at_bank=at_bank):
                return False, _("it was settled meanwhile.")
            self.log_change(request, payment, f"Settled by staff: {logged}.")
            return True, str(summary)

        run_bank_action(self, request, queryset, settle, limit=ACTION_LIMIT)

    @admin.action(description=_("Settle: the bank confirmed it HAS the payment"), permissions=["change"])
    def settle_at_bank(self, request, queryset):
        self._settle(request, queryset, at_bank=True)

    @admin.action(description=_("Settle: the bank confirmed it does NOT have the payment"), permissions=["change"])
    def settle_not_at_bank(self, request, queryset):
        self._settle(request, queryset, at_bank=False)

    @admin.action(
        description=_("Attach the bank's payment (by its paymentId, checked with the bank)"),
        permissions=["change"],
    )
    def attach_bank_payment(self, request, queryset):
        from django.template.response import TemplateResponse

        payments = list(queryset[:2])
        if len(payments) != 1:
            self.message_user(request, _("Select one payment to attach."), level="error")
            return None
        payment = payments[0]
        if "apply" not in request.POST:
            return TemplateResponse(
                request,
                "admin/payments/payment/attach.html",
                {**self.admin_site.each_context(request), "payment": payment, "opts": self.model._meta},
            )
        outcome = payment_staff_attach(
            payment_id=payment.pk, staff_user=request.user, bank_payment_id=request.POST.get("bank_payment_id", "")
        )
        if outcome.ok:
            self.log_change(request, payment, f"Attached by staff to the bank's payment: {outcome.message}")
        self.message_user(
            request,
            _("Payment #%(pk)s: %(message)s") % {"pk": payment.pk, "message": outcome.message},
            level="success" if outcome.ok else "error",
        )
        return None
