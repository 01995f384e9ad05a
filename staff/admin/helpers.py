"""The helpers every admin page of the portal shares (staff/admin/*):

- ``export_csv``: the one generic action exporting the selected rows with the columns of the change list, safe
  against CSV formula injection; columns that mask an identifier stay masked.
- ``masked``: how a PSU identifier is shown to staff (never in clear).
- ``bank_calls_link``: the link from an object's admin page to the audit log filtered to its calls.
- ``ReadOnlyAdminMixin``: objects that staff look at but never edit in a form (their writes go through
  services).

Operators' pages: labels are translated, like the models' field labels.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import label_for_field, lookup_field
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from django.utils.html import strip_tags
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from connections.crypto import lookup_hash
from core import csvsafe
from core.csvsafe import text_cell
from core.money import amount_plain

#: Bank calls made by one admin action, at most (staff wait for the page).
ACTION_LIMIT = 20


def fieldset_fields(fieldsets: Iterable[tuple[Any, dict[str, Any]]]) -> tuple[str, ...]:
    """Every field named in ``fieldsets``, in order: the read-only fields of a page that shows only what it
    lays out and lets nothing be edited."""
    return tuple(name for _title, options in fieldsets for name in options["fields"])


# --- identifiers -------------------------------------------------------------------------------------------

MASK = "•" * 4


def masked(value: str | None) -> str:
    """A PSU identifier as staff see it: its last three characters only, for "ends with ..." conversations.

    Short values (under 8 characters) show nothing at all; the length of the value is not revealed either.
    """
    if not value:
        return ""
    return f"{MASK}{value[-3:]}" if len(value) >= 8 else MASK


def amount_exact(amount: Decimal | None, currency: str) -> str:
    """``150000.00000`` NOK -> ``150000.00 NOK``: exact and ungrouped, for a CSV cell."""
    return "" if amount is None else amount_plain(amount, currency, grouped=False)


def amount_text(amount: Decimal | None, currency: str) -> str:
    """``150000.00000`` NOK -> ``150 000.00 NOK`` (no-break spaces between thousands), ``1500`` JPY ->
    ``1 500 JPY``: the currency's minor units at least, more only when sent. CSV cells keep the exact
    ungrouped figure (``csv_value``)."""
    return "-" if amount is None else amount_plain(amount, currency)


# --- CSV export --------------------------------------------------------------------------------------------


def csv_safe(value: Any) -> str:
    """One CSV cell: numbers and times exact and unambiguous, text defused against formula injection."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat() if timezone.is_aware(value) else value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return text_cell(html.unescape(strip_tags(str(value))))


def csv_value(getter: Any) -> Any:
    """Give a list column's method the value its CSV cell holds, e.g. the exact signed Decimal of an amount
    the page shows formatted (text starting with a minus sign would be defused as a formula)."""

    def mark(method: Any) -> Any:
        method.csv_value = getter
        return method

    return mark


def _cell_value(name: str, obj: Model, model_admin: admin.ModelAdmin) -> Any:
    field, attr, value = lookup_field(name, obj, model_admin)
    getter = getattr(attr, "csv_value", None)
    if getter is not None:
        return getter(obj)
    if field is not None:
        if getattr(field, "flatchoices", None):
            return dict(field.flatchoices).get(value, value)
        if field.is_relation and value is not None:
            return str(value)
    return value


def csv_rows(model_admin: admin.ModelAdmin, columns: list[str], queryset: QuerySet) -> Iterator[list[str]]:
    yield [csv_safe(label_for_field(name, model_admin.model, model_admin)) for name in columns]
    for obj in queryset.iterator(chunk_size=500):
        yield [csv_safe(_cell_value(name, obj, model_admin)) for name in columns]


@admin.action(description=_("Export selected rows to CSV"))
def export_csv(model_admin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> StreamingHttpResponse:
    """The selected rows with the change list's columns (masked identifiers stay masked), streamed."""
    columns = [name for name in model_admin.get_list_display(request) if name != "action_checkbox"]
    response = StreamingHttpResponse(
        csvsafe.stream(csv_rows(model_admin, columns, queryset)), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="{model_admin.model._meta.model_name}-{stamp}.csv"'
    return response


# --- admin behaviours --------------------------------------------------------------------------------------


class ReadOnlyAdminMixin:
    """Staff read these objects; nobody adds, edits or deletes them in a form.

    Change permission still matters: actions marked ``permissions=["change"]`` need it (support has view only).
    The object page is the read-only view for everyone.
    """

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None:
            return False
        return super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline:
    """An inline timeline: shown, never edited."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def run_bank_action(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    objects: Iterable[Model],
    call: Any,
    *,
    limit: int,
) -> None:
    """Run ``call(obj) -> (ok, message)`` for each selected object (one bank call each) and show each outcome.

    The number of objects is capped: each one is a bank call made while staff wait for the page.
    """
    objects = list(objects)
    if len(objects) > limit:
        model_admin.message_user(
            request,
            ngettext(
                "Select at most %(limit)d row at once: each one is a bank call.",
                "Select at most %(limit)d rows at once: each one is a bank call.",
                limit,
            )
            % {"limit": limit},
            level="error",
        )
        return
    for obj in objects:
        ok, message = call(obj)
        shown = _("%(name)s #%(pk)s: %(message)s") % {
            "name": capfirst(obj._meta.verbose_name),
            "pk": obj.pk,
            "message": message,
        }
        model_admin.message_user(request, shown, level="success" if ok else "error")


# --- the audit log -----------------------------------------------------------------------------------------


#: The operation and user filters of the audit log offer what was seen in this period (older: use the search).
class IdentifierHashSearchMixin:
    """The search box also finds rows by an exact PSU identifier, matched by its keyed hash in
    ``identifier_hash_fields`` (identifiers are never stored, nor searchable, in clear)."""

    identifier_hash_fields: tuple[str, ...] = ()

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term:
            results = results | search_by_identifier_hash(queryset, term, *self.identifier_hash_fields)
        return results, may_have_duplicates


def search_by_identifier_hash(queryset: QuerySet, term: str, *fields: str) -> QuerySet:
    """Rows whose keyed-hash column(s) match an exact identifier typed by staff (never stored in clear)."""
    digest = lookup_hash(term)
    if not digest:
        return queryset.none()
    condition = Q()
    for name in fields:
        condition |= Q(**{name: digest})
    return queryset.filter(condition)
