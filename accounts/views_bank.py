"""Bank connection pages: connect, the SCA callback, connections (reconnect, disconnect, agreements), and the
accounts overview's "Refresh now" (the overview itself and the account pages: views_accounts.py). Thin: forms
check, services write, selectors read."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import formats
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import refresh, selectors, services
from accounts.forms_bank import AgreementForm, ConnectForm, callback_failure, callback_success
from accounts.models import ConnectionAccess, PsuContextChoice, ScaPurpose
from accounts.psu import psu_presence
from accounts.security import sensitive_page
from payments import services as payment_services
from payments.views_initiation import payment_callback, payment_callback_failure
from xs2a.errors import Xs2aError

logger = logging.getLogger(__name__)


def _to_bank(request, **start):
    """Start SCA and send the PSU's browser to the bank's scaRedirect (the only redirect out of the portal)."""
    try:
        href = services.sca_start(
            user=request.user, session_key=request.session.session_key, presence=psu_presence(request), **start
        )
    except (Xs2aError, services.BankStartFailed) as exc:
        logger.warning("SCA not started", extra={"error": type(exc).__name__})
        messages.error(request, _("The bank could not start the authentication. Please try again later."))
        return None
    return redirect(href)


def _report(request, outcome: services.FetchOutcome | None) -> None:
    if outcome is None:
        return
    if outcome.problem == services.FetchProblem.NEEDS_RECONNECT:
        messages.warning(request, _("The bank asks you to confirm your consent again. Use Reconnect."))
    elif outcome.problem == services.FetchProblem.LIMIT:
        if outcome.retry_at:
            when = formats.date_format(outcome.retry_at, "DATETIME_FORMAT")
            messages.warning(request, _("The bank's limit is reached; try again after %(when)s.") % {"when": when})
        else:
            messages.warning(request, _("The bank's limit is reached; try again later."))
    elif outcome.problem == services.FetchProblem.UNAVAILABLE:
        messages.error(request, _("The bank did not answer as expected. Please try again later."))


@sensitive_page
@require_http_methods(["GET", "POST"])
def connect(request):
    form = ConnectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        payments_only = form.cleaned_data["access"] == ConnectionAccess.PAYMENTS
        response = _to_bank(
            request,
            purpose=ScaPurpose.USERS if payments_only else ScaPurpose.CONNECT,
            context=form.cleaned_data["context"],
        )
        if response is not None:
            return response
    return render(request, "accounts/connect.html", {"form": form})


@never_cache
@require_GET
def callback(request):
    """TPP-Redirect-URI: the bank sends the PSU back here after SCA (spec section 6).

    Never redirects outside the portal; a rejected callback stores nothing.
    """
    failure = callback_failure(request.GET)
    if failure is not None:
        return payment_callback_failure(request, failure) or render(
            request, "accounts/callback_failed.html", {"failure": failure}, status=400
        )
    if not request.user.is_authenticated:
        return render(request, "accounts/callback_rejected.html", {"reason": "signed_out"}, status=400)
    params, wrong = callback_success(request.GET)
    if params is None:
        logger.info("SCA callback malformed", extra={"parameter": wrong})
        return render(request, "accounts/callback_rejected.html", {"reason": "malformed"}, status=400)
    if payment_services.is_payment_callback(params["tpp_session_id"]):  # the approval of a payment
        return payment_callback(request, params)
    try:
        _connection, outcome = services.sca_callback_accept(
            user=request.user,
            session_key=request.session.session_key,
            params=services.CallbackParams(**params),
            presence=psu_presence(request),
        )
    except services.ScaStateRejected as exc:
        logger.info("SCA callback rejected", extra={"reason": exc.reason})
        return render(request, "accounts/callback_rejected.html", {"reason": exc.reason}, status=400)
    except services.IdentityMismatch:
        return render(request, "accounts/callback_rejected.html", {"reason": "identity"}, status=400)
    if outcome is None or outcome.ok:
        messages.success(request, _("Your bank is connected."))
    _report(request, outcome)
    return redirect("bank-connections")


@sensitive_page
@require_GET
def connections(request):
    return render(
        request,
        "accounts/connections.html",
        {"connections": selectors.connections_for(user=request.user)},
    )


@sensitive_page
@require_POST
def reconnect(request, pk):
    connection = selectors.connection_for(user=request.user, pk=pk)
    response = _to_bank(request, purpose=ScaPurpose.RECONNECT, context=connection.context, connection=connection)
    return response or redirect("bank-connections")


@sensitive_page
@require_http_methods(["GET", "POST"])
def disconnect(request, pk):
    connection = selectors.connection_for(user=request.user, pk=pk)
    if request.method == "POST":
        services.connection_disconnect(connection=connection, actor=request.user)
        messages.success(request, _("The connection is removed, with its accounts and balances."))
        return redirect("bank-connections")
    return render(request, "accounts/disconnect.html", {"connection": connection})


@sensitive_page
@require_http_methods(["GET", "POST"])
def agreements(request, pk):
    """Corporate agreements of a connection's PSU (GET /v1/agreements); picking one starts a consent for it."""
    connection = selectors.connection_for(user=request.user, pk=pk)
    try:
        listed = selectors.bank_agreements_for(
            connection=connection, presence=psu_presence(request), user=request.user
        )
    except Xs2aError as exc:
        logger.warning("agreements not listed", extra={"error": type(exc).__name__})
        messages.error(request, _("The bank did not list your agreements. Please try again later."))
        return redirect("bank-connections")
    form = AgreementForm(request.POST or None, agreements=listed)
    if request.method == "POST" and form.is_valid():
        response = _to_bank(
            request,
            purpose=ScaPurpose.AGREEMENT,
            context=PsuContextChoice.CORPORATE,
            connection=connection,
            agreement=form.chosen(),
        )
        if response is not None:
            return response
    return render(request, "accounts/agreements.html", {"connection": connection, "form": form, "listed": listed})


@sensitive_page
@require_POST
def accounts_refresh(request):
    presence = psu_presence(request)
    outcomes = services.balances_refresh_for_user(user=request.user, presence=presence)
    for outcome in outcomes:
        _report(request, outcome)
    # The transactions too, with the PSU present (PSU-IP-Address: not counted against the bank's daily limit).
    synced = refresh.transactions_refresh_for_user(user=request.user, presence=presence)
    for failed in {o.message for o in synced if not o.ok}:
        messages.warning(request, failed)
    if outcomes and all(o.ok for o in outcomes) and all(o.ok for o in synced):
        messages.success(request, _("Balances and transactions refreshed."))
    elif not outcomes:
        messages.info(request, _("There is no connected account to refresh."))
    return redirect("bank-accounts")
