"""Admin: staff see the exchange rates and correct or add one; every save records who made it."""

from __future__ import annotations

from django.contrib import admin

from payments.models import ExchangeRate, ExchangeRateSource
from payments.services import exchange_rate_save_by_staff


@admin.register(ExchangeRate)
class ExchangeRateAdmin(admin.ModelAdmin):
    list_display = ("currency", "rate_date", "rate", "unit", "source", "fetched_at", "updated_by", "updated_at")
    list_filter = ("currency", "source", "rate_date")
    search_fields = ("currency",)
    date_hierarchy = "rate_date"
    ordering = ("-rate_date", "currency")
    readonly_fields = ("fetched_at", "updated_by", "updated_at")
    list_select_related = ("updated_by",)
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
