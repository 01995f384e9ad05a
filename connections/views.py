"""Bank connection pages: connect, the one SCA callback (TPP-Redirect-URI) and the handlers of this app's SCA
purposes, the connections page (reconnect, disconnect, agreements). Thin: forms check, services write, selectors
read.

The callback checks what every purpose shares (connections.sca.sca_return_accept: the state, the PSU-ID's
owner, the PSU-ID and the agreement confirmed by the bank in the SCA's own TPP session), then hands the result to
the handler registered for the state's purpose (connections.plugins): this module's for connecting, payments' for
approving a payment.
"""

from __future__ import annotations

import logging

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from connections import plugins, sca, selectors, services
from connections.errors import (
    AppApprovalNotOffered,
    BankStartFailed,
    IdentityMismatch,
    IdentityRefused,
    IdentityUnconfirmed,
    ScaStateRejected,
)
from connections.forms import (
    AgreementForm,
    ConnectForm,
    callback_failure,
    callback_state,
    callback_success,
    failure_context,
)
from connections.models import ConnectionAccess, IdentityRefusal, PsuContextChoice, ScaPurpose
from connections.outcomes import FetchOutcome, FetchProblem, ScaReturn
from connections.psu import psu_presence
from core.bank import CALLBACK_STATE
from users.security import sensitive_page, session_authenticated_at_bank
from xs2a.errors import Xs2aError

logger = logging.getLogger(__name__)

#: Where a connection lands once its accounts are read: that page with ``?connection=<pk>`` shows the
#: connection's accounts (accounts.views.accounts_overview).
CONNECTION_ACCOUNTS_PAGE = "bank-accounts"
#: The answers after which the user must act on the connections page (consent again) rather than look at the
#: accounts.
NEEDS_THE_CONNECTIONS_PAGE = frozenset({FetchProblem.NEEDS_RECONNECT, FetchProblem.NO_ACCOUNTS})


def _to_bank(request, **start):
    """Start SCA and send the PSU's browser to the bank's scaRedirect (the only redirect out of the portal)."""
    try:
        href = sca.sca_start(
            user=request.user, session_key=request.session.session_key, presence=psu_presence(request), **start
        )
    except AppApprovalNotOffered:
        messages.error(
            request,
            _(
                "Your bank does not offer approval in its app for this. Untick the box to approve in the "
                "browser instead."
            ),
        )
        return None
    except (Xs2aError, BankStartFailed) as exc:
        logger.warning("SCA not started", extra={"error": type(exc).__name__})
        messages.error(request, _("The bank could not start the authentication. Please try again later."))
        return None
    return redirect(href)


def report(request, outcome: FetchOutcome | None) -> None:
    """The bank's answer to a use of a connection, as a message for the user."""
    if outcome is None:
        return
    if outcome.problem == FetchProblem.NEEDS_RECONNECT:
        messages.warning(request, _("The bank asks you to confirm your consent again. Use Reconnect."))
    elif outcome.problem == FetchProblem.LIMIT:
        if outcome.retry_at:
            when = formats.date_format(outcome.retry_at, "DATETIME_FORMAT")
            messages.warning(request, _("The bank's limit is reached; try again after %(when)s.") % {"when": when})
        else:
            messages.warning(request, _("The bank's limit is reached; try again later."))
    elif outcome.problem == FetchProblem.NO_ACCOUNTS:
        messages.warning(
            request,
            _(
                "You did not choose any account at the bank, so nothing is connected. Connect again and tick "
                "the accounts you want to share."
            ),
        )
    elif outcome.problem == FetchProblem.UNAVAILABLE:
        messages.error(request, _("The bank did not answer as expected. Please try again later."))
    elif outcome.problem == FetchProblem.INCOMPLETE:
        messages.warning(
            request, outcome.message or _("Your bank is connected, but not everything could be read yet.")
        )


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
            in_app=form.cleaned_data["in_app"],
        )
        if response is not None:
            return response
    return render(request, "connections/connect.html", {"form": form})


def _rejected(request, reason: str):
    return render(request, "connections/callback_rejected.html", {"reason": reason}, status=400)


@never_cache
@require_GET
def callback(request):
    """TPP-Redirect-URI: the bank sends the PSU back here after SCA (spec section 6).

    Never redirects outside the portal; a rejected callback stores nothing. A failure redirect names no state: it
    goes to the handler of this browser session's open state, which spends nothing and changes nothing.
    """
    code = callback_failure(request.GET)
    if code is not None:
        state = sca.sca_state_open(
            user=request.user, session_key=request.session.session_key, token=callback_state(request.GET)
        )
        if state is not None:
            return plugins.purpose(state.purpose).failed(request, state, code)
        return render(request, "connections/callback_failed.html", failure_context(request.GET, code))
    if not request.user.is_authenticated:
        return _rejected(request, "signed_out")
    if set(request.GET) == {CALLBACK_STATE}:
        # Only the portal's own state, nothing of the bank's: the "Back to" link of a bank's SCA screen that was
        # already finished (the back button after SCA). Nothing to accept, nothing spent: say where things are.
        return render(request, "connections/callback_back.html")
    params, wrong = callback_success(request.GET)
    if params is None:
        logger.info("SCA callback malformed", extra={"parameter": wrong})
        return _rejected(request, "malformed")
    try:
        sca_return = sca.sca_return_accept(
            user=request.user,
            session_key=request.session.session_key,
            params=sca.CallbackParams(**params),
            presence=psu_presence(request),
        )
    except ScaStateRejected as exc:
        logger.info("SCA callback rejected", extra={"reason": exc.reason})
        return _rejected(request, exc.reason)
    except IdentityRefused as exc:
        if exc.reason == IdentityRefusal.Reason.SESSION_UNCONFIRMED:
            # The bank did not confirm the PSU-ID in this SCA's session: say no more than that (an attacker who
            # wrote another customer's PSU-ID into the address learns nothing about it).
            return render(request, "connections/callback_not_confirmed.html", status=400)
        return _rejected(request, "refused")
    except IdentityUnconfirmed:
        return _rejected(request, "unconfirmed")
    # The user proved themselves to the bank a moment ago: no password again for the next few minutes.
    session_authenticated_at_bank(request)
    return plugins.purpose(sca_return.state.purpose).accept(request, sca_return)


def connection_sca_accept(request, sca_return: ScaReturn):
    """This app's purposes (connect, reconnect, agreement, users): the connection established, then, for
    account information, what the other apps read with the new consent while the PSU is here."""
    try:
        connection = services.connection_establish(sca_return=sca_return)
    except IdentityMismatch:
        return _rejected(request, "identity")
    except ScaStateRejected as exc:
        return _rejected(request, exc.reason)
    context_changed(request, asked=sca_return.state.context, chosen=sca_return.context)
    if connection.access == ConnectionAccess.PAYMENTS:
        messages.success(request, _("Your bank is connected for payments."))
        return redirect("home")  # where "New payment" is
    outcomes = plugins.consent_granted(
        connection=connection,
        presence=sca_return.presence,
        actor=request.user,
        tpp_session_id=sca_return.state.tpp_session_id,
    )
    if all(outcome.ok for outcome in outcomes):
        messages.success(request, _("Your bank is connected."))
    for outcome in outcomes:
        report(request, outcome)
    if any(outcome.problem in NEEDS_THE_CONNECTIONS_PAGE for outcome in outcomes):
        return redirect("bank-connections")  # where the consent is given again (Reconnect)
    # The connection's accounts, by the name of the page (the accounts app sits above this one).
    return HttpResponseRedirect(f"{reverse(CONNECTION_ACCOUNTS_PAGE)}?connection={connection.pk}")


def context_changed(request, *, asked: str, chosen: str) -> None:
    """The PSU chose another context at the bank than the one asked for here: say which one is connected (the
    bank's choice is the one that holds)."""
    if asked == chosen:
        return
    if chosen == PsuContextChoice.PRIVATE:
        text = _(
            "You asked to connect a company's accounts, but at the bank you chose your private accounts. You are "
            "connected in private context. To connect the company, connect again and choose the company at the "
            "bank."
        )
    else:
        text = _(
            "You asked to connect your private accounts, but at the bank you chose a company. You are connected "
            "in corporate context, for that company. To connect your private accounts, connect again and choose "
            "private at the bank."
        )
    messages.warning(request, text)


def connection_sca_failed(request, state, code: str):
    """A failure redirect while this session was connecting: nothing is changed and the state stays usable (the
    bank's real redirect may still come)."""
    return render(request, "connections/callback_failed.html", failure_context(request.GET, code))


@sensitive_page
@require_GET
def connections(request):
    return render(
        request,
        "connections/connections.html",
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
        ended = services.connection_disconnect(
            connection=connection, actor=request.user, presence=psu_presence(request)
        )
        messages.success(request, _("The connection is removed, with its accounts and balances."))
        if ended == services.ConsentEnd.ENDED:
            messages.info(request, _("Your bank has ended the consent you gave this portal."))
        elif ended == services.ConsentEnd.NOT_OFFERED:
            messages.warning(
                request,
                _(
                    "Your bank does not let us end the consent from here. To end it, revoke it directly with your "
                    "bank (in its online bank or app)."
                ),
            )
        elif ended == services.ConsentEnd.UNAVAILABLE:
            messages.warning(
                request,
                _(
                    "Your bank did not answer when we asked it to end the consent, so it may still be valid "
                    "there. Revoke it directly with your bank (in its online bank or app)."
                ),
            )
        return redirect("bank-connections")
    return render(request, "connections/disconnect.html", {"connection": connection})


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
    return render(
        request, "connections/agreements.html", {"connection": connection, "form": form, "listed": listed}
    )
