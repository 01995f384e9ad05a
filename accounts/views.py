"""The accounts pages of end users: the overview, an account (balance chart and transactions), one transaction,
the CSV export, and "Refresh now" (every account, or one). Thin: the form checks, selectors read, services and
accounts.refresh talk to the bank. Every page is a sensitive page, and another user's account or transaction is
a 404."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts import ledger, refresh, selectors, services, transaction_facts, transactions_csv
from accounts.forms import TransactionFilterForm
from accounts.models import UNATTENDED_CALLS_PER_DAY, TransactionStatus
from connections.psu import psu_presence
from connections.selectors import connection_for
from connections.views import report
from users.security import sensitive_page

logger = logging.getLogger(__name__)

#: The query parameters of the pager; everything else in the query string belongs to the filter form.
PAGER_PARAMETERS = ("after", "before")


@sensitive_page
@require_GET
def accounts_overview(request):
    """Every account, or with ``?connection=<pk>`` those of one of the user's connections (where a new
    connection lands; another user's connection is a 404)."""
    connection = None
    wanted = request.GET.get("connection", "")
    if wanted:
        if not wanted.isascii() or not wanted.isdigit() or len(wanted) > 18:
            raise Http404("no such connection")
        connection = connection_for(user=request.user, pk=int(wanted))
    accounts = selectors.accounts_overview_with_budgets(
        user=request.user, connection_id=connection.pk if connection else None
    )
    return render(
        request,
        "accounts/accounts_overview.html",
        {"accounts": accounts, "connection": connection, "unattended_limit": UNATTENDED_CALLS_PER_DAY},
    )


def _filter_form(request) -> tuple[TransactionFilterForm, selectors.TransactionFilters | None]:
    """The filter form of the query string and its filters; None when a filter is not valid."""
    data = request.GET.copy()
    for name in PAGER_PARAMETERS:
        data.pop(name, None)
    form = TransactionFilterForm(data or None)
    if not form.is_bound:
        return form, selectors.TransactionFilters()
    return form, form.filters() if form.is_valid() else None


@sensitive_page
@require_GET
def account_detail(request, pk):
    account = selectors.account_for(user=request.user, pk=pk)
    form, filters = _filter_form(request)
    query = request.GET.copy()
    for name in PAGER_PARAMETERS:
        query.pop(name, None)
    context = {
        "account": account,
        "form": form,
        "query": query.urlencode(),
        "filters_active": any(value.strip() for value in query.values()),
        "budget": ledger.refresh_budgets(account_ids=[account.pk]).get(account.pk),
        "history": selectors.balance_history(account=account),
        "balances": selectors.latest_balances(account=account),
        "page": None,
        "pending": None,
    }
    if context["history"] is not None:
        context["chart"] = context["history"].chart_data(
            computed_name=_("End of day, from the transactions"), reported_name=_("Reported by the bank")
        )
    if filters is not None:
        after = selectors.Cursor.parse(request.GET.get("after"))
        before = selectors.Cursor.parse(request.GET.get("before")) if after is None else None
        paged = (
            TransactionStatus.PENDING if filters.status == TransactionStatus.PENDING else TransactionStatus.BOOKED
        )
        context["paged_status"] = paged
        context["page"] = selectors.transactions_page(
            account=account, filters=filters, status=paged, after=after, before=before
        )
        if not filters.status and after is None and before is None:
            # Both at once: the newest pending items above the first page of booked ones.
            context["pending"] = selectors.transactions_page(
                account=account, filters=filters, status=TransactionStatus.PENDING
            )
    return render(request, "accounts/account_detail.html", context)


@sensitive_page
@require_GET
def transaction_detail(request, pk):
    """One transaction: the bank's details read while the user looks (kept for a few hours), over the list's
    record; when the bank cannot give them, the list's record with a note."""
    tx = selectors.transaction_for(user=request.user, pk=pk)
    details = services.transaction_details_read(transaction=tx, presence=psu_presence(request), actor=request.user)
    facts = transaction_facts.transaction_facts(transaction=tx, details=details.record)
    return render(
        request,
        "accounts/transaction_detail.html",
        {"tx": tx, "account": tx.account, "facts": facts, "details": details, "problems": services.DetailsProblem},
    )


@sensitive_page
@require_GET
def transactions_export(request, pk):
    """The filtered transactions as CSV, streamed (pending first, then booked, newest first)."""
    account = selectors.account_for(user=request.user, pk=pk)
    form, filters = _filter_form(request)
    if filters is None:
        return HttpResponse(
            _("The filters are not valid: %(errors)s") % {"errors": form.errors.as_text()},
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    rows = selectors.transactions_for_export(account=account, filters=filters).iterator(chunk_size=2000)
    response = StreamingHttpResponse(transactions_csv.stream(rows), content_type="text/csv; charset=utf-8")
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="transactions-{account.pk}-{stamp}.csv"'
    return response


@sensitive_page
@require_POST
def account_refresh(request, pk):
    """ "Refresh now" for one account, with the PSU present (never counts against the unattended budget)."""
    account = selectors.account_for(user=request.user, pk=pk)
    outcome = refresh.account_refresh(account_id=account.pk, presence=psu_presence(request), actor=request.user)
    if outcome.ok:
        messages.success(
            request,
            _("%(message)s %(new)d new and %(updated)d changed transactions.")
            % {
                "message": outcome.message,
                "new": outcome.transactions_new,
                "updated": outcome.transactions_updated,
            },
        )
    else:
        messages.error(request, outcome.message)
    return redirect("bank-account", pk=account.pk)


@sensitive_page
@require_POST
def accounts_refresh(request):
    presence = psu_presence(request)
    outcomes = services.balances_refresh_for_user(user=request.user, presence=presence)
    for outcome in outcomes:
        report(request, outcome)
    # The transactions too, with the PSU present (PSU-IP-Address: not counted against the bank's daily limit).
    synced = refresh.transactions_refresh_for_user(user=request.user, presence=presence)
    for failed in {o.message for o in synced if not o.ok}:
        messages.warning(request, failed)
    if outcomes and all(o.ok for o in outcomes) and all(o.ok for o in synced):
        messages.success(request, _("Balances and transactions refreshed."))
    elif not outcomes:
        messages.info(request, _("There is no connected account to refresh."))
    return redirect("bank-accounts")
