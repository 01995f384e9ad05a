"""Admin: the audit log of bank calls (``core.models.BankCall``), read-only for everyone."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, Q
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from core.models import BankCall, CertificateCheck
from staff.admin.helpers import csv_value, export_csv

FILTER_CHOICES_PERIOD = timedelta(days=30)
FILTER_CHOICES_LIMIT = 200


def concerning_key(obj: Model) -> str:
    return f"{obj._meta.app_label}.{obj._meta.model_name}:{obj.pk}"


def bank_calls_url(obj: Model) -> str:
    return reverse("admin:tpp_portal_bankcall_changelist") + "?" + urlencode({"concerning": concerning_key(obj)})


def bank_calls_link(obj: Model | None) -> str:
    """Link to the audit log filtered to the calls about ``obj``, with their number."""
    if obj is None or obj.pk is None:
        return "-"
    content_type = ContentType.objects.get_for_model(obj)
    count = BankCall.objects.filter(content_type=content_type, object_id=str(obj.pk)).count()
    words = ngettext("%(count)s bank call", "%(count)s bank calls", count) % {"count": count}
    return format_html('<a href="{}">{}</a>', bank_calls_url(obj), words)


def _status_text(call: BankCall, error: str) -> str:
    """The HTTP status in words, with ``error`` standing for the error's name."""
    if call.status is not None and call.error and (call.status < 400 or call.refusal_reason):
        return _("%(status)s, not accepted (%(error)s)") % {"status": call.status, "error": error}
    if call.status is not None:
        return str(call.status)
    return _("no answer (%(error)s)") % {"error": error} if call.error else _("no answer")


class StatusClassFilter(admin.SimpleListFilter):
    title = _("status class")
    parameter_name = "status_class"
    RANGES = {"2xx": (200, 299), "3xx": (300, 399), "4xx": (400, 499), "5xx": (500, 599)}

    def lookups(self, request, model_admin):
        return [
            ("2xx", _("2xx success")),
            ("3xx", _("3xx redirect")),
            ("4xx", _("4xx refused")),
            ("429", _("429 too many requests")),
            ("5xx", _("5xx bank failure")),
            ("none", _("no answer (transport error)")),
            ("rejected", _("answer not accepted (signature, malformed, too large)")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(status__isnull=True)
        if value == "429":
            return queryset.filter(status=429)
        if value == "rejected":
            return queryset.filter((Q(status__lt=400) & ~Q(error="")) | ~Q(refusal_reason=""))
        if value in self.RANGES:
            low, high = self.RANGES[value]
            return queryset.filter(status__gte=low, status__lte=high)
        return queryset


class OperationFilter(admin.SimpleListFilter):
    """Method and endpoint template, e.g. ``GET /v1/accounts/{account_id}/transactions``."""

    title = _("operation")
    parameter_name = "operation"

    def lookups(self, request, model_admin):
        # The operations called recently (an index range, not a scan of the whole log); an older one is found
        # with the search box.
        recent = BankCall.objects.filter(started_at__gte=timezone.now() - FILTER_CHOICES_PERIOD)
        pairs = recent.order_by("path_template", "method").values_list("method", "path_template").distinct()
        choices = [f"{method} {path}" for method, path in pairs]
        if self.value() and self.value() not in choices:
            choices.append(self.value())
        return [(choice, choice) for choice in choices]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        method, _, path = value.partition(" ")
        return queryset.filter(method=method, path_template=path)


class UserFilter(admin.SimpleListFilter):
    """The user a call was made for: those with calls in the recent period, or the portal itself (no user)."""

    title = _("user")
    parameter_name = "user"
    NONE = "none"

    def lookups(self, request, model_admin):
        from django.contrib.auth import get_user_model

        since = timezone.now() - FILTER_CHOICES_PERIOD
        ids = set(
            BankCall.objects.filter(started_at__gte=since, user__isnull=False)
            .order_by()
            .values_list("user_id", flat=True)
            .distinct()[:FILTER_CHOICES_LIMIT]
        )
        if self.value() and self.value().isdigit():
            ids.add(int(self.value()))
        users = get_user_model().objects.filter(pk__in=ids).order_by("username")
        return [(self.NONE, _("the portal itself (no user)"))] + [(str(user.pk), str(user)) for user in users]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.NONE:
            return queryset.filter(user__isnull=True)
        if value is None:
            return queryset
        return queryset.filter(user_id=int(value)) if value.isdigit() else queryset.none()


class ConcerningFilter(admin.SimpleListFilter):
    """The calls about one object (``?concerning=payments.payment:12``), linked from that object's page."""

    title = _("object")
    parameter_name = "concerning"

    def _parse(self) -> tuple[ContentType, str] | None:
        app_model, _, pk = (self.value() or "").partition(":")
        app_label, _, model = app_model.partition(".")
        if not (app_label and model and pk):
            return None
        try:
            return ContentType.objects.get_by_natural_key(app_label, model), pk
        except ContentType.DoesNotExist:
            return None

    def lookups(self, request, model_admin):
        if self.value() is None:
            return []  # offered only as the link from an object's page
        parsed = self._parse()
        if parsed is None:
            return [(self.value(), _("unknown object"))]  # shown, so that its (empty) result applies
        content_type, pk = parsed
        return [(self.value(), f"{content_type.name} #{pk}")]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        parsed = self._parse()
        if parsed is None:
            return queryset.none()
        content_type, pk = parsed
        return queryset.filter(content_type=content_type, object_id=pk)


def _tpp_messages_text(call: BankCall) -> str:
    codes = ", ".join(call.tpp_message_codes or [])
    texts = " / ".join(call.tpp_message_texts or [])
    return f"{codes}: {texts}" if codes and texts else codes or texts


@admin.register(BankCall)
class BankCallAdmin(admin.ModelAdmin):
    """Every HTTP attempt the portal made to the bank. Read-only for everyone, superusers included."""

    list_display = (
        "started_at",
        "operation",
        "request_id",
        "attempt",
        "status_shown",
        "duration_ms",
        "tpp_messages",
        "psu_present",
        "user",
        "concerning_link",
    )
    list_filter = (
        StatusClassFilter,
        OperationFilter,
        ConcerningFilter,
        "psu_present",
        UserFilter,
        "started_at",
    )
    search_fields = ("=request_id", "=user__email", "path_template")
    search_help_text = _("An exact X-Request-ID, an exact user e-mail, or part of an endpoint.")
    # No date hierarchy: its year and month links are a DISTINCT over the whole log. The date filter's ranges
    # (today, past 7 days, this month) and the dashboard cover the periods staff ask about.
    list_select_related = ("user", "content_type")
    list_per_page = 100
    show_full_result_count = False  # no COUNT(*) over the whole log on every page
    actions = [export_csv]
    fields = (
        "started_at",
        "method",
        "path_template",
        "request_id",
        "attempt",
        "will_retry",
        "status",
        "error",
        "refusal_reason",
        "duration_ms",
        "tpp_message_codes",
        "tpp_message_texts",
        "psu_present",
        "bytes_sent",
        "bytes_received",
        "user",
        "concerning_link",
    )
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description=_("operation"), ordering="path_template")
    def operation(self, call: BankCall) -> str:
        return f"{call.method} {call.path_template}"

    @admin.display(description=_("HTTP status"), ordering="status")
    @csv_value(lambda call: _status_text(call, call.error))
    def status_shown(self, call: BankCall) -> str:
        """The status in words; the error is quoted as the client library gave it (its words, often English), so
        it is marked as not for translation."""
        quoted = format_html('<span translate="no">{}</span>', call.error)
        return format_html(_status_text(call, "{error}"), error=quoted)

    @admin.display(description=_("tppMessages"))
    @csv_value(_tpp_messages_text)
    def tpp_messages(self, call: BankCall) -> str:
        """The bank's codes and its own words, as it sent them (in its language): marked so, not translated."""
        shown = _tpp_messages_text(call)
        return format_html('<span translate="no">{}</span>', shown) if shown else ""

    @admin.display(description=_("concerning"))
    def concerning_link(self, call: BankCall) -> str:
        if call.content_type_id is None or not call.object_id:
            return "-"
        content_type = ContentType.objects.get_for_id(call.content_type_id)
        label = f"{content_type.name} #{call.object_id}"
        try:
            url = reverse(f"admin:{content_type.app_label}_{content_type.model}_change", args=[call.object_id])
        except NoReverseMatch:
            return label
        return format_html('<a href="{}">{}</a>', url, label)


@admin.register(CertificateCheck)
class CertificateCheckAdmin(admin.ModelAdmin):
    """The bank's TLS certificate as the daily check last read it (the staff dashboard shows every certificate)."""

    list_display = ("name", "source", "not_after", "checked_at", "error")
    fields = ("name", "source", "subject", "not_after", "checked_at", "error")
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
