"""The staff sandbox area: the bank's sandbox customers (spec 4.2) and the mock-data operations (spec 4.3).

Who sees it: staff only, and only while the configured bank is a sandbox (``BANK_IS_SANDBOX``); otherwise every
page is a 404, for anonymous visitors too, so nothing shows that the area exists. Signed-in non-staff get a 404,
anonymous visitors of a sandbox portal are sent to sign in. Among staff, the read pages need
``sandbox_admin.view_sandbox`` and every page that writes to the bank (its form included) needs
``sandbox_admin.change_sandbox`` (sandbox_admin/models.py; the roles grant them: support views, operators
change); without it, 403. Views are thin: forms check, ``services`` write,
``selectors`` read; the bank's refusals are shown with its text.

Customer and account ids are the bank's opaque ids (``enc!!...=``): they travel as query parameters, never as
path segments, so any character the bank uses survives.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods

from payments.services.polling import next_batch_after
from sandbox_admin import selectors, services
from sandbox_admin.errors import SandboxError
from sandbox_admin.forms import (
    CORPORATE,
    AccountCreateForm,
    AgreementCreateForm,
    ClockForm,
    CustomerCreateForm,
    EngagementForm,
    ListingForm,
    MockTransactionForm,
    ResetForm,
)
from users.security import sensitive_page
from xs2a.models import CardTransaction, SandboxCustomer

View = Callable[..., HttpResponse]
TIMINGS_KEY = "sandbox_admin.listing_timings"
MAX_TIMINGS = 8
MAX_ID_LENGTH = 200


VIEW_PERMISSION = "sandbox_admin.view_sandbox"
CHANGE_PERMISSION = "sandbox_admin.change_sandbox"


def staff_sandbox_page(view: View | None = None, *, writes: bool = False):
    """404 unless the bank is a sandbox; then sign-in (idle timeout, never cached) and staff, else 404; then the
    permission: ``change_sandbox`` for a page that ``writes`` (and for any request but GET and HEAD), else
    ``view_sandbox``, else 403."""
    if view is None:
        return functools.partial(staff_sandbox_page, writes=writes)

    @functools.wraps(view)
    def staff_only(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not (request.user.is_active and request.user.is_staff):
            raise Http404("staff only")
        needed = CHANGE_PERMISSION if writes or request.method not in {"GET", "HEAD"} else VIEW_PERMISSION
        if not request.user.has_perm(needed):
            raise PermissionDenied(needed)
        return view(request, *args, **kwargs)

    protected = sensitive_page(staff_only)

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.BANK_IS_SANDBOX:
            raise Http404("the configured bank is not a sandbox")
        return protected(request, *args, **kwargs)

    return wrapper


def _id_param(request: HttpRequest, name: str) -> str:
    value = request.GET.get(name, "")
    if not value or len(value) > MAX_ID_LENGTH or not value.isprintable():
        raise Http404(f"no {name}")
    return value


def _customer(request: HttpRequest) -> SandboxCustomer:
    """The customer named by ``?customer=``; 404 when the bank has none, ``SandboxError`` when it fails."""
    try:
        return selectors.sandbox_customer_get(actor=request.user, customer_id=_id_param(request, "customer"))
    except selectors.CustomerNotFound:
        raise Http404("no such sandbox customer") from None


def _posted(request: HttpRequest):
    """The submitted data of a POST (even an empty one, so that it is checked), else None (an unbound form)."""
    return request.POST if request.method == "POST" else None


def customer_url(customer_id: str) -> str:
    return reverse("sandbox_admin:customer") + "?" + urlencode({"customer": customer_id})


def _unavailable(request: HttpRequest, error: SandboxError) -> HttpResponse:
    return render(request, "sandbox_admin/unavailable.html", {"error": error}, status=502)


def _remember_timing(request: HttpRequest, listing: selectors.CustomerListing) -> list[dict[str, Any]]:
    """The last few listings' flags and durations, newest first (kept in the session, no identifiers)."""
    entry = {
        "with_accounts": listing.with_accounts,
        "with_agreements": listing.with_agreements,
        "customers": len(listing.customers),
        "duration_ms": round(listing.duration_ms, 1),
        "listed_at": listing.listed_at.isoformat(),
    }
    timings = [entry, *request.session.get(TIMINGS_KEY, [])][:MAX_TIMINGS]
    request.session[TIMINGS_KEY] = timings
    return timings


@staff_sandbox_page
@require_GET
def customers(request: HttpRequest) -> HttpResponse:
    # A first visit lists with both flags; afterwards the checkboxes decide (an unticked box is not sent).
    data = request.GET if "listed" in request.GET else {"with_accounts": "on", "with_agreements": "on"}
    form = ListingForm(data)
    form.is_valid()
    flags = {
        "with_accounts": form.cleaned_data.get("with_accounts", False),
        "with_agreements": form.cleaned_data.get("with_agreements", False),
    }
    listing, error = None, None
    try:
        listing = selectors.sandbox_customers_list(actor=request.user, **flags)
    except SandboxError as exc:
        error = exc
    timings = _remember_timing(request, listing) if listing else request.session.get(TIMINGS_KEY, [])
    return render(
        request,
        "sandbox_admin/customers.html",
        {
            "form": form,
            "listing": listing,
            "known": selectors.known_accounts(listing.customers) if listing else {},
            "error": error,
            "timings": timings,
            **flags,
        },
        status=502 if error else 200,
    )


@staff_sandbox_page
@require_GET
def customer(request: HttpRequest) -> HttpResponse:
    try:
        found = _customer(request)
    except SandboxError as exc:
        return _unavailable(request, exc)
    return render(
        request,
        "sandbox_admin/customer.html",
        {
            "customer": found,
            "is_corporate": found.customer_type == CORPORATE,
            "known": selectors.known_accounts([found]),
        },
    )


@staff_sandbox_page(writes=True)
@require_http_methods(["GET", "POST"])
def customer_create(request: HttpRequest) -> HttpResponse:
    form = CustomerCreateForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            created = services.sandbox_customer_create(actor=request.user, **form.cleaned_data)
        except SandboxError as exc:
            form.add_bank_error(exc)
        else:
            # The number itself is shown on the customer's page, not in the message: messages may travel in a
            # cookie (signed, not encrypted), and a customerNumber is a national identity number.
            messages.success(
                request,
                _(
                    "Customer %(name)s created. Type its customer number (below) at the bank's SCA screen to "
                    "sign in as this customer."
                )
                % {"name": created.customer_name},
            )
            return redirect(customer_url(created.customer_id))
    return render(request, "sandbox_admin/customer_create.html", {"form": form})


@staff_sandbox_page(writes=True)
@require_http_methods(["GET", "POST"])
def agreement_create(request: HttpRequest) -> HttpResponse:
    try:
        company = _customer(request)
        if company.customer_type != CORPORATE:
            messages.info(request, _("A private customer's agreement is created by the bank with the customer."))
            return redirect(customer_url(company.customer_id))
        listing = selectors.sandbox_customers_list(actor=request.user, with_accounts=False, with_agreements=False)
    except SandboxError as exc:
        return _unavailable(request, exc)
    others = [c for c in listing.customers if c.customer_id != company.customer_id]
    form = AgreementCreateForm(_posted(request), others=others)
    if request.method == "POST" and form.is_valid():
        try:
            agreement = services.sandbox_agreement_create(
                actor=request.user,
                customer_id=company.customer_id,
                name=form.cleaned_data["name"],
                signers_required=form.cleaned_data["signers_required"],
                user_customer_ids=form.cleaned_data["users"],
            )
        except SandboxError as exc:
            form.add_bank_error(exc)
        else:
            messages.success(request, _("Agreement %(name)s created.") % {"name": agreement.name or agreement.id})
            return redirect(customer_url(company.customer_id))
    return render(request, "sandbox_admin/agreement_create.html", {"form": form, "customer": company})


@staff_sandbox_page(writes=True)
@require_http_methods(["GET", "POST"])
def engagement_create(request: HttpRequest) -> HttpResponse:
    try:
        company = _customer(request)
    except SandboxError as exc:
        return _unavailable(request, exc)
    if company.customer_type != CORPORATE or not company.agreements:
        messages.info(
            request, _("Only a company's accounts are added to its agreements by hand; create one first.")
        )
        return redirect(customer_url(company.customer_id))
    form = EngagementForm(_posted(request), customer=company)
    if request.method == "POST" and form.is_valid():
        try:
            services.sandbox_agreement_engage(
                actor=request.user,
                agreement_id=form.cleaned_data["agreement"],
                account_id=form.cleaned_data["account"],
            )
        except SandboxError as exc:
            form.add_bank_error(exc)
        else:
            messages.success(request, _("The account is added to the agreement."))
            return redirect(customer_url(company.customer_id))
    return render(request, "sandbox_admin/engagement_create.html", {"form": form, "customer": company})


@staff_sandbox_page(writes=True)
@require_http_methods(["GET", "POST"])
def account_create(request: HttpRequest) -> HttpResponse:
    try:
        owner = _customer(request)
    except SandboxError as exc:
        return _unavailable(request, exc)
    form = AccountCreateForm(_posted(request), customer=owner)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = services.sandbox_account_create(
                actor=request.user,
                customer_id=owner.customer_id,
                account_type=data["account_type"],
                currency=data["currency"],
                name=data["name"],
                product=data["product"],
                balance=data["balance"],
                credit_limit=data["credit_limit"],
                agreement_id=data.get("agreement") or None,
            )
        except SandboxError as exc:
            form.add_bank_error(exc)
        else:
            account = outcome.account
            created = _("Account %(id)s created") % {"id": account.resource_id} + (
                f", IBAN {account.iban}" if account.iban else ""
            )
            if outcome.engagement_error:
                messages.warning(
                    request,
                    _("%(created)s, but it is in no agreement: %(why)s")
                    % {"created": created, "why": outcome.engagement_error.message},
                )
            else:
                messages.success(
                    request, created + (_("; added to the agreement.") if outcome.agreement_id else ".")
                )
            return redirect(customer_url(owner.customer_id))
    return render(request, "sandbox_admin/account_create.html", {"form": form, "customer": owner})


@staff_sandbox_page(writes=True)
@require_http_methods(["GET", "POST"])
def transaction_create(request: HttpRequest) -> HttpResponse:
    try:
        owner = _customer(request)
    except SandboxError as exc:
        return _unavailable(request, exc)
    if not (owner.accounts or owner.card_accounts):
        messages.info(request, _("This customer has no account yet: create one first."))
        return redirect(customer_url(owner.customer_id))
    initial = {"account": request.GET.get("account", "")}
    form = MockTransactionForm(_posted(request), customer=owner, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created = services.sandbox_mock_transaction_create(
                actor=request.user,
                account_id=data["account"],
                amount=data["amount"],
                currency=data["currency"],
                booking_status=data["booking_status"],
                booking_date=data["booking_date"],
                counterparty_name=data["counterparty_name"],
                debtor_iban=data["debtor_iban"],
                creditor_iban=data["creditor_iban"],
                remittance=data["remittance"],
                kid=data["kid"],
                end_to_end_id=data["end_to_end_id"],
            )
        except SandboxError as exc:
            form.add_bank_error(exc)
        else:
            amount = created.transaction_amount
            ident = created.card_transaction_id if isinstance(created, CardTransaction) else created.transaction_id
            messages.success(
                request,
                _("Transaction %(id)s created: %(amount)s %(currency)s on %(account)s.")
                % {
                    "id": ident or _("(pending, no id yet)"),
                    "amount": amount.amount,
                    "currency": amount.currency,
                    "account": data["account"],
                },
            )
            return redirect(customer_url(owner.customer_id))
    return render(request, "sandbox_admin/transaction_create.html", {"form": form, "customer": owner})


@staff_sandbox_page(writes=True)
@require_http_methods(["GET", "POST"])
def reset(request: HttpRequest) -> HttpResponse:
    form = ResetForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            known = services.sandbox_reset(actor=request.user)
        except SandboxError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(
                request, _("The sandbox is back to its known state: %(count)s customers.") % {"count": len(known)}
            )
            return redirect("sandbox_admin:customers")
    return render(request, "sandbox_admin/reset.html", {"form": form})


def _batches_message(run: services.BatchesRun, move: str) -> str:
    moved = {
        services.ClockMove.NOW: _("The bank ran a batch now"),
        services.ClockMove.HOUR: _("The bank's clock moved 1 hour forward and its batches ran"),
        services.ClockMove.NEXT_BATCH: _("The bank's clock moved to its next batch, which ran"),
        services.ClockMove.DAY: _("The bank's clock moved 1 day forward and its batches ran"),
    }[move]
    steps = run.clock.payment_steps or 0
    bank_time = formats.date_format(run.clock.now.astimezone(datetime.UTC), "DATETIME_FORMAT")
    text = ngettext(
        "%(moved)s: %(steps)s payment step. Bank time %(time)s UTC.",
        "%(moved)s: %(steps)s payment steps. Bank time %(time)s UTC.",
        steps,
    ) % {"moved": moved, "steps": steps, "time": bank_time}
    if run.polled:
        count = len(run.polled)
        text += " " + ngettext(
            "The portal is checking %(count)s payment in flight now.",
            "The portal is checking %(count)s payments in flight now.",
            count,
        ) % {"count": count}
    else:
        text += " " + _("No payment in the portal is waiting for the bank's batches.")
    return text


def offset_words(seconds: int) -> str:
    """How far the bank's clock is ahead, in days, hours and minutes ("13 hours 35 minutes"), not seconds."""
    minutes = seconds // 60  # whole minutes, as a clock reads
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [
        ngettext("%(count)d day", "%(count)d days", days) % {"count": days} if days else "",
        ngettext("%(count)d hour", "%(count)d hours", hours) % {"count": hours} if hours else "",
        ngettext("%(count)d minute", "%(count)d minutes", minutes) % {"count": minutes} if minutes else "",
    ]
    return " ".join(part for part in parts if part) or _("less than a minute")


def next_batch_words(bank_now: datetime.datetime) -> str:
    """The bank's next batch by its own clock ("15:00 UTC today"), from the batch times the portal knows."""
    slot = next_batch_after(bank_now)
    if slot is None:
        return ""
    time = slot.strftime("%H:%M")
    if slot.date() == bank_now.astimezone(datetime.UTC).date():
        return _("The next batch is at %(time)s UTC today by the bank's clock.") % {"time": time}
    return _("The next batch is at %(time)s UTC tomorrow by the bank's clock.") % {"time": time}


@staff_sandbox_page
@require_http_methods(["GET", "POST"])
def clock(request: HttpRequest) -> HttpResponse:
    """The bank's business clock and the buttons that move it and run its payment batches (POST needs
    ``change_sandbox``); after a run the portal checks the payments in flight at once."""
    form = ClockForm(_posted(request))
    if request.method == "POST":
        if form.is_valid():
            move = form.cleaned_data["move"]
            try:
                run = services.sandbox_batches_run(actor=request.user, move=move)
            except SandboxError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, _batches_message(run, move))
            return redirect("sandbox_admin:clock")
        messages.error(request, _("Choose one of the buttons."))
    try:
        bank_clock, error = selectors.sandbox_clock_read(actor=request.user), None
    except SandboxError as exc:
        bank_clock, error = None, exc
    context = {
        "bank_clock": bank_clock,
        "offset": offset_words(bank_clock.offset_seconds) if bank_clock else "",
        "next_batch": next_batch_words(bank_clock.now) if bank_clock else "",
        "error": error,
        "batch_times": [slot.strftime("%H:%M") for slot in settings.BANK_BATCH_TIMES],
        "moves": form.fields["move"].choices,
    }
    return render(request, "sandbox_admin/clock.html", context)
