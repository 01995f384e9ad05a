"""The SCA screens the PSU's browser sees at scaRedirect (spec sections 1, 5.7 and 6).

Steps: the mocked national identity number (the customer's customerNumber), then the context (PRIVATE, or
CORPORATE with a choice of agreement), then the purpose's review screen (for a consent: the accounts, already
shared ones pre-selected). Approve or cancel, then a redirect to TPP-Redirect-URI. A finished SCA cannot be used
again: its address (the browser's back button, a second tab) shows "This approval is finished" with a link back
to the provider's redirect URI. The pages are never cached and each step done is answered with a 303 to the same
address (Post/Redirect/Get), so the back button asks for the address again and cannot bring back a live Approve
button or a "resubmit the form?" page. An
unknown state shows an error page and redirects nowhere.

The screens speak Norwegian bokmål when the browser asks for it (Accept-Language nb, no or nn), else English
(``bank_simulator/locale``). What goes back to the TPP in the redirect stays English.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_http_methods

from bank_simulator import clock, selectors, services
from bank_simulator.models import Agreement, AgreementContext, Customer, ScaSession, ScaStatus
from bank_simulator.sca_purposes import PURPOSES, PurposeInputError
from bank_simulator.services import DomainError

MAX_IDENTITY_ATTEMPTS = 3
SYSTEM = "SANDBOX-SCA"
_IDENTITY = re.compile(r"^\d{9,11}$")


_NORWEGIAN = frozenset({"nb", "no", "nn"})


def screen_language(request: HttpRequest) -> str:
    """The screens' language: nb when the browser's Accept-Language prefers a Norwegian one to English, else en.

    Django alone maps "no" (the code many browsers send for Norwegian) to nothing, hence this reading.
    """
    offered: list[tuple[float, int, str]] = []
    for position, part in enumerate(request.headers.get("Accept-Language", "").split(",")):
        tag, _sep, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                continue
        primary = tag.strip().lower().split("-")[0]
        if primary in _NORWEGIAN or primary == "en":
            offered.append((-quality, position, "nb" if primary in _NORWEGIAN else "en"))
    offered = [item for item in offered if item[0] < 0]  # q=0 means "not this one"
    return min(offered)[2] if offered else "en"


def localized(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Run ``view`` in the browser's language (``screen_language``); never cached (the back button asks again)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        language = screen_language(request)
        with translation.override(language):
            response = view(request, *args, **kwargs)
        response["Content-Language"] = language
        patch_vary_headers(response, ("Accept-Language",))
        return response

    return never_cache(wrapper)


def _redirect(uri: str, params: dict[str, str]) -> HttpResponseRedirect:
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(params.items())
    return HttpResponseRedirect(urlunsplit(parts._replace(query=urlencode(query))))


def _fail(session: ScaSession, *, status: int, code: str, message: str) -> HttpResponse:
    """End the SCA and send the PSU back with the error parameters (``message`` is for the TPP: English)."""
    try:
        services.sca_fail(session=session, code=code, now=clock.now())
    except DomainError:
        session.refresh_from_db(fields=["status"])
        return _done(None, session)
    return _redirect(
        session.redirect_uri, {"system": SYSTEM, "status": str(status), "code": code, "message": message}
    )


def _page(request: HttpRequest | None, message: str, *, status: int) -> HttpResponse:
    return render(request, "bank_simulator/sca/message.html", {"message": message}, status=status)


def _done(request: HttpRequest | None, session: ScaSession) -> HttpResponse:
    """A finished SCA's address, seen again: "already done" and a link to the provider's site, no form."""
    if session.status == ScaStatus.FINALISED:
        message = _("You have already approved this. Nothing more is needed here.")
    else:
        message = _("This authentication has already ended (cancelled, expired or refused).")
    # Back to the provider's redirect URI as it gave it (its own state parameter included, none of the bank's).
    parts = urlsplit(session.redirect_uri)
    back_url = session.redirect_uri if parts.scheme in {"http", "https"} and parts.netloc else ""
    return render(
        request,
        "bank_simulator/sca/done.html",
        {"session": session, "message": message, "back_url": back_url},
        status=409,
    )


def _screen(request: HttpRequest, session: ScaSession, template: str, **context: object) -> HttpResponse:
    handler = PURPOSES[session.purpose]
    return render(
        request,
        template,
        {"session": session, "purpose_title": handler.title, "action": request.get_full_path(), **context},
        status=400 if context.get("error") else 200,
    )


@localized
def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return _page(
        request, _("The form expired or was not sent from this page; start again from the provider."), status=403
    )


@localized
@csrf_protect
@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    token = request.GET.get("state", "")
    session = (
        ScaSession.objects.select_related(
            "customer", "agreement", "requested_psu__customer", "requested_agreement"
        )
        .filter(token=token)
        .first()
        if token
        else None
    )
    if session is None:
        return _page(
            request,
            _("Unknown authentication request (SCA_NOT_FOUND). Start again from the provider."),
            status=404,
        )
    if session.status in (ScaStatus.FINALISED, ScaStatus.FAILED):
        return _done(request, session)
    now = clock.now()
    if now > session.expires_at:
        return _fail(session, status=401, code="SCA_EXPIRED", message="The authentication expired.")
    if request.method == "POST" and request.POST.get("action") == "cancel":
        return _fail(session, status=401, code="SCA_INVALID", message="The PSU cancelled the authentication.")
    try:
        if session.status == ScaStatus.STARTED:
            return _identify(request, session)
        if session.status == ScaStatus.IDENTIFIED:
            return _choose_context(request, session)
        return _review(request, session, now)
    except DomainError:  # a concurrent request moved the SCA on
        session.refresh_from_db(fields=["status"])
        if session.status in (ScaStatus.FINALISED, ScaStatus.FAILED):
            return _done(request, session)
        return _page(request, _("This authentication has already moved on; use the newest page."), status=409)


def _identify(request: HttpRequest, session: ScaSession) -> HttpResponse:
    template = "bank_simulator/sca/identify.html"
    if request.method != "POST":
        return _screen(request, session, template)
    number = request.POST.get("identity", "").strip()
    customer = Customer.objects.filter(customer_number=number).first() if _IDENTITY.match(number) else None
    expected = session.requested_psu.customer if session.requested_psu else None
    if customer is None or (expected is not None and customer != expected):
        attempts = services.sca_record_failed_attempt(session=session)
        if attempts >= MAX_IDENTITY_ATTEMPTS:
            return _fail(
                session, status=401, code="PSU_CREDENTIALS_INVALID", message="Unknown national identity number."
            )
        error = (
            _("The identity number does not belong to the user the provider named.")
            if customer is not None
            else _("Unknown national identity number.")
        )
        return _screen(
            request,
            session,
            template,
            error=error,
            identity=number,
            attempts_left=MAX_IDENTITY_ATTEMPTS - attempts,
        )
    services.sca_identify(session=session, customer=customer)
    return _next_step(request)


def _choose_context(request: HttpRequest, session: ScaSession) -> HttpResponse:
    assert session.customer is not None
    options = selectors.agreements_usable_by(customer=session.customer)
    if not options:
        return _fail(session, status=403, code="FORBIDDEN", message="The customer has no agreement with the bank.")
    template = "bank_simulator/sca/context.html"
    if request.method != "POST":
        return _screen(request, session, template, options=options, selected=_preselected(session, options))
    chosen = request.POST.get("agreement", "")
    agreement = next((a for a in options if str(a.agreement_id) == chosen), None)
    if agreement is None:
        return _screen(
            request,
            session,
            template,
            options=options,
            selected=_preselected(session, options),
            error=_("Choose one of the listed contexts."),
        )
    services.sca_choose_context(session=session, agreement=agreement)
    return _next_step(request)


def _preselected(session: ScaSession, options: list[Agreement]) -> Agreement:
    """The agreement the "Act as" screen selects first: the one the TPP named (PSU-Corporate-ID), else the first
    of the context it asked for (PSU-Context: PRIVATE or CORPORATE), else the first listed (the private one)."""
    if session.requested_agreement in options:
        return session.requested_agreement
    if session.requested_context:
        wanted = next((a for a in options if a.context == session.requested_context), None)
        if wanted is not None:
            return wanted
    return options[0]


def _next_step(request: HttpRequest) -> HttpResponse:
    """A step done: the browser GETs the same address for the next screen (303, Post/Redirect/Get). Every screen
    in the browser's history is then a GET of this address, which the back button asks for again (the pages are
    never cached): a finished SCA answers "This approval is finished", never a resubmission of a form."""
    return HttpResponseRedirect(request.get_full_path(), status=303)


def _review(request: HttpRequest, session: ScaSession, now: dt.datetime) -> HttpResponse:
    handler = PURPOSES[session.purpose]
    if request.method != "POST" or request.POST.get("action") != "approve":
        return _screen(request, session, handler.template, **handler.review_context(session))
    try:
        with transaction.atomic():  # the approval and the end of the SCA stand or fall together
            approval = handler.approve(session, request.POST, now)
            services.sca_finalise(session=session, psu=approval.psu, now=now, consent=approval.consent)
    except PurposeInputError as error:
        return _screen(request, session, handler.template, error=str(error), **handler.review_context(session))
    assert session.agreement is not None
    params = {"psu-id": str(approval.psu.psu_id)}
    if session.agreement.context == AgreementContext.CORPORATE:
        params["psu-corporate-id"] = str(session.agreement.agreement_id)
    params["tpp-session-id"] = session.tpp_session_id
    params["context"] = session.agreement.context
    return _redirect(session.redirect_uri, params)
