"""Payment pages after the initiation: the payment page (timeline, live status), "check now", cancel, the next
signer's signature, the list and its CSV export. Thin: selectors read, services write."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

from django.contrib import messages
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from connections.psu import psu_presence
from core import csvsafe
from core.csvsafe import amount_cell, text_cell, time_cell
from core.templatetags.portal_format import money
from payments import selectors
from payments.forms_list import PaymentListFilterForm
from payments.forms_review import ApproveForm
from payments.models import Payment, PaymentState
from payments.reporting_text import payment_rate_phrase
from payments.review_facts import instruction_facts
from payments.services import cancellation
from payments.services.authorisation import (
    IN_APP_MESSAGE,
    AuthorisationNotStarted,
    authorisation_start,
    signature_counted,
)
from payments.services.polling import payment_poll
from payments.services.reconciliation import FOUND_MESSAGE, UNCONFIRMED_MESSAGE
from payments.status import StatusText, charged_fee, rejection_reason, rejection_reason_html, status_text
from users.security import ensure_recent_authentication, sensitive_page

logger = logging.getLogger(__name__)

#: The "check now" button asks the bank at most once in this many seconds per payment.
CHECK_INTERVAL_SECONDS = 15
PAGE_SIZE = 25


def _when(moment) -> str:
    return formats.date_format(timezone.localtime(moment), "DATETIME_FORMAT") if moment else ""


#: What a payment settled by staff as not at the bank means (it was sent: never "not sent yet").
NOT_AT_BANK_MEANING = gettext_lazy(
    "Our staff checked with the bank: it does not carry out this payment, and nothing was paid. You may send "
    "the payment again."
)


def _state_label(payment: Payment, status: StatusText) -> str:
    """The portal's state beside the bank's status, when it adds something: not for a final status (the
    bank's words say it all: "Cancelled", not "Cancelled · Completed"), nor when it repeats the status."""
    label = str(payment.get_state_display())
    if payment.state == PaymentState.FINAL or label == status.label:
        return ""
    return label


def _fee_text(payment: Payment) -> str:
    """The fee line, as the export gives it (payments.status.charged_fee): no fee for a payment the bank did
    not carry out, whatever it estimated before."""
    fee = charged_fee(payment)
    if fee.not_carried_out:
        return _("No fee: the payment was not carried out.")
    if fee.amount is None:
        return _("Not given by the bank")
    text = money(fee.amount, fee.currency)
    no_fee = _("no fee charged")
    return f"{text} ({no_fee})" if payment.fee_indicator is False else text


def _context(request, payment: Payment) -> dict:
    user = request.user
    status = status_text(payment.transaction_status, payment.funds_available)
    if payment.state == PaymentState.UNCONFIRMED:  # no bank status to show: the bank did not confirm the payment
        status = StatusText(
            code="", label=payment.get_state_display(), meaning=str(UNCONFIRMED_MESSAGE), tone="warn"
        )
    elif payment.state == PaymentState.FOUND:  # no bank status either: the bank's transactions show it
        status = StatusText(code="", label=payment.get_state_display(), meaning=str(FOUND_MESSAGE), tone="ok")
    elif payment.state == PaymentState.NOT_AT_BANK:  # settled by staff: sent, and not carried out
        status = StatusText(
            code="", label=payment.get_state_display(), meaning=str(NOT_AT_BANK_MEANING), tone="warn"
        )
    timeline = selectors.timeline(payment)
    rejected = payment.transaction_status == "RJCT"
    if rejected:  # the final page says why, not only that the bank rejected it (the reason holds its message)
        lacked = any(entry.funds_available is False for entry in timeline)
        status = replace(status, meaning=rejection_reason(payment, lacked_funds=lacked))
    return {
        "payment": payment,
        "status": status,
        # The same words with the bank's own marked (the JSON of the live page keeps status.meaning, plain).
        "status_meaning_html": rejection_reason_html(payment, lacked_funds=lacked) if rejected else "",
        "state_label": _state_label(payment, status),
        "fee_text": _fee_text(payment),
        "instruction": instruction_facts(payment),
        "is_initiator": payment.user_id == user.pk,
        "may_sign": selectors.may_sign(user=user, payment=payment),
        "can_cancel": payment.user_id == user.pk and cancellation.cancellable(payment),
        "signatures": selectors.signatures(payment),
        "timeline": timeline,
        "psu_message": "" if rejected else payment.psu_message,
        "insufficient_funds": payment.transaction_status == "ACCP" and payment.funds_available is False,
        "live": not payment.is_final
        and payment.state
        not in (
            PaymentState.DRAFT,
            PaymentState.REFUSED,
            PaymentState.UNCONFIRMED,
            PaymentState.FOUND,
            PaymentState.NOT_AT_BANK,
        ),
        "page_url": request.build_absolute_uri(reverse("payment-detail", args=[payment.pk])),
        "nok_rate": payment_rate_phrase(payment),
    }


@sensitive_page
@require_GET
def payment_detail(request, pk: int):
    payment = selectors.payment_for_viewer(user=request.user, pk=pk)
    return render(request, "payments/detail.html", _context(request, payment))


def _signature_text(signature: selectors.Signature) -> str:
    """The signature's line as the page shows it (detail.html), for the script's redraw."""
    if signature.signed_at is not None:
        state = _("signed %(when)s") % {"when": _when(signature.signed_at)}
    elif signature.failed_at is not None:
        state = _("not signed") + (f" ({signature.failure})" if signature.failure else "")
    else:
        state = _("signing at the bank")
    return f"{signature.signer}: {state}"


def status_payload(request, payment: Payment) -> dict:
    """What the page's script redraws without a reload (payment_live.js)."""
    context = _context(request, payment)
    status = context["status"]
    return {
        "id": payment.pk,
        "state": payment.state,
        "stateLabel": context["state_label"],
        "transactionStatus": payment.transaction_status,
        "statusLabel": status.label,
        "statusMeaning": status.meaning,
        "statusTone": status.tone,
        "fundsAvailable": payment.funds_available,
        "insufficientFunds": context["insufficient_funds"],
        "final": payment.is_final,
        "live": context["live"],
        "canCancel": context["can_cancel"],
        "maySign": context["may_sign"],
        "fee": context["fee_text"],
        "psuMessage": context["psu_message"],
        "timeline": [
            {
                "at": entry.at.isoformat(),
                "atDisplay": _when(entry.at),
                "kind": entry.kind,
                "kindLabel": entry.kind_label,
                "status": entry.status.code if entry.status else "",
                "statusLabel": entry.status.label if entry.status else "",
                "meaning": entry.status.meaning if entry.status else "",
                "detail": entry.detail,
                "actor": entry.actor,
            }
            for entry in context["timeline"]
        ],
        "signatures": [
            {
                "signer": s.signer,
                "signedAt": _when(s.signed_at),
                "signed": s.signed_at is not None,
                "text": _signature_text(s),
            }
            for s in context["signatures"]
        ],
    }


@sensitive_page
@require_GET
def payment_status_json(request, pk: int):
    payment = selectors.payment_for_viewer(user=request.user, pk=pk)
    return JsonResponse(status_payload(request, payment))


@sensitive_page
@require_POST
def payment_check(request, pk: int):
    """Read the status from the bank now (at most once in CHECK_INTERVAL_SECONDS per payment)."""
    payment = selectors.payment_for_viewer(user=request.user, pk=pk)
    if payment.is_final or not payment.payment_id:
        messages.info(request, _("The status of this payment does not change any more."))
    elif not cache.add(f"payment-check:{payment.pk}", 1, CHECK_INTERVAL_SECONDS):
        messages.info(request, _("The status was checked a moment ago. Please wait a few seconds."))
    else:
        outcome = payment_poll(payment_id=payment.pk, actor=request.user)
        if outcome.ok and not outcome.skipped:
            messages.success(request, _("The status is up to date."))
        elif outcome.ok:
            messages.info(request, outcome.message)
        else:
            messages.error(request, outcome.message or _("The bank did not answer. Please try again later."))
    if request.headers.get("Accept", "").startswith("application/json"):
        payment.refresh_from_db()
        return JsonResponse(status_payload(request, payment))
    return redirect("payment-detail", pk=payment.pk)


@sensitive_page
@require_http_methods(["GET", "POST"])
def payment_cancel(request, pk: int):
    payment = selectors.payment_owned(user=request.user, pk=pk)
    if request.method == "POST":
        outcome = cancellation.payment_cancel(payment=payment, actor=request.user, presence=psu_presence(request))
        if outcome.ok:
            messages.success(request, outcome.message)
        else:
            messages.error(request, outcome.message)
        return redirect("payment-detail", pk=payment.pk)
    if not cancellation.cancellable(payment):
        messages.error(request, _("This payment can no longer be cancelled."))
        return redirect("payment-detail", pk=payment.pk)
    return render(
        request,
        "payments/cancel.html",
        {"payment": payment, "status": status_text(payment.transaction_status, payment.funds_available)},
    )


@sensitive_page
@require_POST
def payment_sign(request, pk: int):
    """The next signer of a corporate payment in PATC: start their SCA at the bank (their own PSU-ID).

    Signing needs the password typed recently; the password page sends the user back to the payment page (a
    GET), where they press "Sign at the bank" again: this address takes POST only.
    """
    payment = selectors.payment_for_viewer(user=request.user, pk=pk)
    detail = reverse("payment-detail", args=[payment.pk])
    if (response := ensure_recent_authentication(request, next_url=detail)) is not None:
        return response
    if not selectors.may_sign(user=request.user, payment=payment):
        messages.error(request, _("You cannot sign this payment: it needs no signature of yours."))
        return redirect("payment-detail", pk=payment.pk)
    choice = ApproveForm(request.POST)
    try:
        href = authorisation_start(
            payment=payment,
            signer=request.user,
            session_key=request.session.session_key,
            presence=psu_presence(request),
            in_app=choice.is_valid() and choice.cleaned_data["in_app"],
        )
    except AuthorisationNotStarted as error:
        messages.error(request, str(error))
        return redirect("payment-detail", pk=payment.pk)
    if href is None:  # the bank asked for no approval, or asks the signer in its app: its status tells
        if not signature_counted(payment=payment, signer=request.user):
            messages.info(request, IN_APP_MESSAGE)
        else:
            messages.info(
                request, _("The bank did not ask you to approve this payment. We are following its status.")
            )
        return redirect("payment-detail", pk=payment.pk)
    return redirect(href)


# --- the list and its export ---------------------------------------------------------------------------------


@sensitive_page
@require_GET
def payment_list(request):
    form = PaymentListFilterForm(request.GET or None)
    valid = form.is_valid() if form.is_bound else True
    filters = form.filters() if form.is_bound and valid else selectors.ListFilters()
    payments = selectors.payments_list(user=request.user, filters=filters).select_related("user", "connection")
    page = Paginator(payments, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [(payment, status_text(payment.transaction_status, payment.funds_available)) for payment in page]
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "payments/list.html",
        {
            "form": form,
            "page": page,
            "rows": rows,
            "query": query.urlencode(),
            "filters_active": any(value.strip() for value in query.values()),
            "user_id": request.user.pk,
        },
    )


#: (key, header) of the export's columns: the keys name them in code and tests, the headers are what people read.
CSV_COLUMNS = [
    ("created_at", gettext_lazy("Created")),
    ("payment", gettext_lazy("Payment number")),
    ("product", gettext_lazy("Type")),
    ("creditor_name", gettext_lazy("Recipient")),
    ("creditor_account", gettext_lazy("Recipient's account")),
    ("amount", gettext_lazy("Amount")),
    ("currency", gettext_lazy("Currency")),
    ("requested_execution_date", gettext_lazy("Execution date")),
    ("status", gettext_lazy("Status")),
    ("status_code", gettext_lazy("Status code at the bank")),
    ("funds_available", gettext_lazy("Funds available")),
    ("fee", gettext_lazy("Fee")),
    ("fee_currency", gettext_lazy("Fee currency")),
    ("nok_equivalent", gettext_lazy("About in NOK")),
    ("final_at", gettext_lazy("Final")),
]
CSV_KEYS = [key for key, _header in CSV_COLUMNS]


def _yes_no(value: bool | None) -> str:
    return "" if value is None else (_("Yes") if value else _("No"))


def _csv_rows(payments) -> Iterator[list[str]]:
    yield [str(header) for _key, header in CSV_COLUMNS]
    for payment in payments.iterator(chunk_size=500):
        fee = charged_fee(payment)
        yield [
            time_cell(payment.created_at),
            str(payment.pk),
            text_cell(payment.get_product_display()),
            text_cell(payment.creditor_name),
            text_cell(payment.creditor_account),
            amount_cell(payment.amount, payment.currency),
            text_cell(payment.currency),
            payment.requested_execution_date.isoformat() if payment.requested_execution_date else "",
            text_cell(status_text(payment.transaction_status, payment.funds_available).label),
            text_cell(payment.transaction_status),
            _yes_no(payment.funds_available),
            amount_cell(fee.amount, fee.currency),
            text_cell(fee.currency if fee.amount is not None else ""),
            amount_cell(payment.nok_equivalent, "NOK"),
            time_cell(payment.final_at),
        ]


@sensitive_page
@require_GET
def payment_export(request):
    """The list as CSV, with the same filters; headers and words in the user's language, amounts as plain
    decimals (a dot, no grouping), times in local time with their offset, to the second."""
    form = PaymentListFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        return HttpResponse(
            _("The filters are not valid: %(errors)s") % {"errors": form.errors.as_text()},
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    filters = form.filters() if form.is_bound else selectors.ListFilters()
    payments = selectors.payments_list(user=request.user, filters=filters, drafts=False)
    response = StreamingHttpResponse(
        csvsafe.stream_in_language(_csv_rows(payments), get_language()), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="payments-{stamp}.csv"'
    return response
