"""Payment initiation (spec 4.1, 4.3): initiation, startAuthorisation, details, status, cancellation; and the
sandbox control that runs the bank's batches now or moves its clock to them.

Every operation needs a certificate with PSP_PI (except the sandbox control) and first runs the batches whose
time has come on the business clock (``engine.run_due``), so reads see what the batches did, never more.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from django.conf import settings
from django.http import HttpResponse

from bank_simulator import clock
from bank_simulator import services as bank_services
from bank_simulator.access import PSP_PI, ApiRequest, bool_query, endpoint
from bank_simulator.errors import ApiError, format_error, header_required
from bank_simulator.models import Agreement, AgreementContext, Customer, CustomerType, PsuIdentity, ScaStatus
from bank_simulator.pis import engine, lost_answers, selectors, services, tables, validation
from bank_simulator.pis.models import Payment, PaymentAuthorisation, TransactionStatus
from bank_simulator.pis.schedule import next_slot_after
from bank_simulator.representations import amount as amount_json
from bank_simulator.representations import link, path_id
from bank_simulator.views.common import sca_redirect_link

PI = frozenset({PSP_PI})
INITIATION_HEADERS = ("x-accept-fix", "TPP-Session-ID", "TPP-Redirect-URI", "PSU-IP-Address")
PAYMENT_HEADERS = ("TPP-Redirect-URI",)  # spec 5.3: on every request, SCA may be needed at any moment
_IDENTITY = re.compile(r"^[0-9]{11}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_GEO = re.compile(r"^GEO:-?[0-9]{1,2}(\.[0-9]+)?,-?[0-9]{1,3}(\.[0-9]+)?$")
# Optional headers of spec 4.1 with a stated form: name -> (check, what the form is).
_FORMED_HEADERS = {
    "PSU-Device-ID": (_UUID.match, "a UUID"),
    "PSU-Geo-Location": (_GEO.match, "GEO:<latitude>,<longitude>"),
    "PSU-HTTP-Method": ({"GET", "POST", "PUT", "PATCH", "DELETE"}.__contains__, "GET, POST, PUT, PATCH or DELETE"),
    "TPP-Redirect-Preferred": ({"true", "false"}.__contains__, "true or false"),
}
# Berlin Group scaStatus names for the SCA steps of part 1.
SCA_STATUS = {
    ScaStatus.STARTED: "started",
    ScaStatus.IDENTIFIED: "psuIdentified",
    ScaStatus.CONTEXT_CHOSEN: "psuAuthenticated",
    ScaStatus.FINALISED: "finalised",
    ScaStatus.FAILED: "failed",
}


def _refused(error: services.PaymentRefused) -> ApiError:
    return ApiError(error.status, error.code, str(error), path=error.field)


def _product(product: str) -> str:
    if product not in tables.PRODUCTS:
        raise ApiError(
            404,
            "PRODUCT_UNKNOWN",
            f"Unknown payment product; this bank offers {' and '.join(tables.PRODUCTS)}.",
            path="paymentProduct",
        )
    return product


def payment_path(payment: Payment) -> str:
    return f"/v1/payments/{payment.product}/{path_id(payment.payment_id)}"


def shown_status(payment: Payment) -> str:
    """The transactionStatus answered: before SCA (RCVD inside) what BANK_SIM_STATUS_BEFORE_SCA says."""
    if payment.status == TransactionStatus.RCVD:
        return settings.BANK_SIM_STATUS_BEFORE_SCA
    return payment.status


def _links(payment: Payment) -> dict[str, Any]:
    base = payment_path(payment)
    return {
        "self": link(base, "GET", "DELETE"),
        "status": link(base + "/status"),
        "startAuthorisation": link(base + "/authorisations", "POST"),
    }


def _payment(api: ApiRequest, product: str, payment_id: str) -> Payment:
    _product(product)
    engine.run_due(now=api.now)
    payment = selectors.payment_for_tpp(payment_id=payment_id, product=product, tpp_org_id=api.tpp_org_id)
    if payment is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such payment for this TPP and product.", path="paymentId")
    return payment


def _domestic_known_issue(payment: Payment) -> None:
    """Spec 3 rule 5: the domestic product's details and status cannot be read before the payment is approved.

    The bank's domestic payment system only learns of a payment when the PSU has approved it, so it answers
    as for an unknown payment.
    """
    if payment.product == tables.DOMESTIC and payment.authorised_at is None:
        raise ApiError(
            404,
            "RESOURCE_UNKNOWN",
            "The payment is not found in the domestic payment system; its details and status can be read "
            "once the PSU has approved it.",
            path="paymentId",
        )


def _check_formed_headers(api: ApiRequest) -> None:
    for name, (check, form) in _FORMED_HEADERS.items():
        value = api.header(name)
        if value is not None and not check(value):
            raise format_error(name, f"{name} must be {form}.")


def _initiating_psu(api: ApiRequest) -> tuple[Customer | None, PsuIdentity | None, Agreement | None]:
    """Who initiates: the PSU of PSU-ID, or the private customer of X-PSU-IDENTITY (single SCA)."""
    context = api.header("PSU-Context")
    if context and context not in AgreementContext.values:
        raise format_error("PSU-Context", "PSU-Context must be PRIVATE or CORPORATE.")
    identity = api.header("X-PSU-IDENTITY")
    if not identity:
        if not api.psu_id_given:
            raise header_required("PSU-ID", "(or X-PSU-IDENTITY with PSU-Context PRIVATE for single SCA)")
        return None, api.psu, api.agreement
    if not context:
        raise header_required("PSU-Context", "for single SCA payment initiation (X-PSU-IDENTITY)")
    if context != AgreementContext.PRIVATE:
        raise format_error("PSU-Context", "Single SCA (X-PSU-IDENTITY) is for private customers: use PRIVATE.")
    if not _IDENTITY.match(identity):
        raise format_error("X-PSU-IDENTITY", "X-PSU-IDENTITY must be an 11-digit national identity number.")
    customer = Customer.objects.filter(customer_number=identity).first()
    if customer is None:
        raise ApiError(
            401, "PSU_CREDENTIALS_INVALID", "X-PSU-IDENTITY names no customer of the bank.", path="X-PSU-IDENTITY"
        )
    if customer.customer_type != CustomerType.PRIVATE:
        raise format_error(
            "X-PSU-IDENTITY",
            "Single SCA is for private customers; a corporate PSU sends PSU-ID and PSU-Corporate-ID.",
        )
    if api.psu_id_given and (api.psu is None or api.psu.customer_id != customer.pk):
        raise format_error("X-PSU-IDENTITY", "X-PSU-IDENTITY and PSU-ID name different persons.")
    agreement = Agreement.objects.filter(owner=customer, context=AgreementContext.PRIVATE).first()
    return customer, api.psu, agreement


def initiation_json(payment: Payment, authorisation: PaymentAuthorisation | None = None) -> dict[str, Any]:
    """The 201 answer. With ``authorisation`` (BANK_SIM_SCA_AT_INITIATION) its scaRedirect (none when exempted)
    and scaStatus links take the place of startAuthorisation."""
    currency = payment.debtor_account.currency
    links = _links(payment)
    if authorisation is not None:
        del links["startAuthorisation"]
        links.update(_authorisation_json(payment, authorisation)["_links"])
    return {
        "transactionStatus": shown_status(payment),
        "paymentId": payment.payment_id,
        "transactionFees": amount_json(payment.fee_amount, currency),
        "transactionFeeIndicator": payment.fee_amount > 0,
        "_links": links,
    }


@endpoint(roles=PI, required=INITIATION_HEADERS, body="json", corporate_required=True)
def initiate(api: ApiRequest, product: str) -> tuple[int, dict[str, Any]]:
    _product(product)
    engine.run_due(now=api.now)
    allow_duplicate = bool_query(api, "allowLogicalDuplicate")
    _check_formed_headers(api)
    customer, psu, agreement = _initiating_psu(api)
    order = validation.validate(api.body, product=product, today=api.now.astimezone(dt.UTC).date())
    if customer is not None:  # single SCA: the PSU-ID is made now (the same one every time)
        psu = services.psu_for_identity(tpp_org_id=api.tpp_org_id, customer=customer, now=api.now)
    if psu is None:
        raise ApiError(401, "PSU_CREDENTIALS_INVALID", "PSU-ID is not known for this TPP.", path="PSU-ID")
    if agreement is None:
        raise ApiError(403, "FORBIDDEN", "The PSU has no agreement with the bank that allows payments.")
    try:
        payment, _created = services.payment_initiate(
            product=product,
            order=order,
            psu=psu,
            agreement=agreement,
            tpp_org_id=api.tpp_org_id,
            request_id=api.request_id,
            tpp_session_id=api.header("TPP-Session-ID") or "",
            allow_logical_duplicate=allow_duplicate,
            now=api.now,
            request_id_replay=settings.BANK_SIM_REQUEST_ID_REPLAY,
        )
    except services.PaymentRefused as error:
        raise _refused(error) from None
    authorisation = None
    if settings.BANK_SIM_SCA_AT_INITIATION and payment.status == TransactionStatus.RCVD:
        authorisation = _authorisation_start(api, payment)
    answer = initiation_json(payment, authorisation)
    lost_answers.decide(api.http)  # the payment is stored; its answer may be lost (BANK_SIM_DROP_PAYMENT_ANSWER)
    return 201, answer


@endpoint(roles=PI, required=PAYMENT_HEADERS)
def payment_read(api: ApiRequest, product: str, payment_id: str) -> tuple[int, dict[str, Any]]:
    """The submitted fields plus paymentId, transactionStatus and _links."""
    payment = _payment(api, product, payment_id)
    _domestic_known_issue(payment)
    links = _links(payment)
    if payment.status not in (TransactionStatus.RCVD, TransactionStatus.PATC):
        del links["startAuthorisation"]
    return 200, {
        **payment.submitted,
        "paymentId": payment.payment_id,
        "transactionStatus": shown_status(payment),
        "_links": links,
    }


@endpoint(roles=PI, required=PAYMENT_HEADERS)
def payment_status(api: ApiRequest, product: str, payment_id: str) -> tuple[int, dict[str, Any]]:
    payment = _payment(api, product, payment_id)
    _domestic_known_issue(payment)
    body: dict[str, Any] = {"transactionStatus": shown_status(payment)}
    if payment.funds_available is not None:
        body["fundsAvailable"] = payment.funds_available
    return 200, body


@endpoint(roles=PI, required=PAYMENT_HEADERS)
def payment_cancel(api: ApiRequest, product: str, payment_id: str) -> HttpResponse:
    """Cancels before settlement begins (CANC), for every product in the sandbox; 204 without a body."""
    payment = _payment(api, product, payment_id)
    try:
        services.payment_cancel(payment=payment, now=api.now)
    except services.PaymentRefused as error:
        raise _refused(error) from None
    return HttpResponse(status=204)


def _sca_status(authorisation: PaymentAuthorisation) -> str:
    session = authorisation.sca_session
    if authorisation.exempted or session is None:
        return "exempted"
    return SCA_STATUS.get(session.status, session.status)


def _authorisation_json(payment: Payment, authorisation: PaymentAuthorisation) -> dict[str, Any]:
    """scaStatus and the scaRedirect to send the PSU to; an exempted payment has none (Berlin Group's
    scaStatus "exempted"): it is approved, and its status link shows it moving on."""
    href = f"{payment_path(payment)}/authorisations/{path_id(authorisation.authorisation_id)}"
    links: dict[str, Any] = {"scaStatus": link(href)}
    if authorisation.sca_session is not None and not authorisation.exempted and not authorisation.decoupled:
        links = {"scaRedirect": sca_redirect_link(authorisation.sca_session), **links}
    else:
        links["status"] = link(payment_path(payment) + "/status")
    answer = {
        "scaStatus": _sca_status(authorisation),
        "authorisationId": authorisation.authorisation_id,
        "_links": links,
    }
    if authorisation.decoupled:  # Berlin Group's psuMessage of a decoupled SCA
        answer["psuMessage"] = "Open the Sandkasse Bank app and approve the payment there."
    return answer


def _decoupled(api: ApiRequest) -> bool:
    """BANK_SIM_SCA_APPROACH: always, never, or when the TPP sends TPP-Redirect-Preferred: false."""
    approach = settings.BANK_SIM_SCA_APPROACH
    in_app_asked = api.header("TPP-Redirect-Preferred") == "false"
    return approach == "decoupled" or (approach == "tpp-preferred" and in_app_asked)


def _authorisation_start(api: ApiRequest, payment: Payment) -> PaymentAuthorisation:
    try:
        return services.payment_authorisation_start(
            payment=payment,
            tpp_name=api.tpp.organization_name,
            tpp_session_id=api.header("TPP-Session-ID") or payment.tpp_session_id,
            redirect_uri=api.header("TPP-Redirect-URI") or "",
            requesting_psu=api.psu,
            now=api.now,
            exempt_below_nok=settings.BANK_SIM_SCA_EXEMPT_BELOW,
            decoupled=_decoupled(api),
        )
    except services.PaymentRefused as error:
        raise _refused(error) from None


@endpoint(roles=PI, required=PAYMENT_HEADERS, body="ignored")
def authorisation_start(api: ApiRequest, product: str, payment_id: str) -> tuple[int, dict[str, Any]]:
    """POST (empty body) on startAuthorisation: the scaRedirect for the next signer, or scaStatus "exempted"
    without one (BANK_SIM_SCA_EXEMPT_BELOW)."""
    payment = _payment(api, product, payment_id)
    return 201, _authorisation_json(payment, _authorisation_start(api, payment))


@endpoint(roles=PI, required=PAYMENT_HEADERS)
def authorisation_read(
    api: ApiRequest, product: str, payment_id: str, authorisation_id: str
) -> tuple[int, dict[str, Any]]:
    payment = _payment(api, product, payment_id)
    authorisation = selectors.authorisation_of(payment=payment, authorisation_id=authorisation_id)
    if authorisation is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such authorisation of this payment.", path="authorisationId")
    return 200, {"scaStatus": _sca_status(authorisation)}


# --- sandbox control ---------------------------------------------------------------------------------------

MAX_ADVANCE = 5 * 366 * 86400


@endpoint(roles=None, sandbox=True, body="json")
def batches_run(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    """Run the bank's batches without waiting.

    ``{}`` (or no body): every batch whose time has come, then one extra batch now.
    ``{"untilNextBatch": true}``: move the business clock to the next scheduled batch and run it.
    ``{"advanceSeconds": n}``: move the clock forward n seconds and run every scheduled batch passed.
    """
    data = api.body if api.body is not None else {}
    if not isinstance(data, dict):
        raise format_error("body", "A JSON object is expected.")
    unknown = sorted(set(data) - {"untilNextBatch", "advanceSeconds"})
    if unknown:
        raise format_error(unknown[0], f"Unknown field {unknown[0]}: use untilNextBatch or advanceSeconds.")
    until_next = data.get("untilNextBatch", False)
    seconds = data.get("advanceSeconds")
    if not isinstance(until_next, bool):
        raise format_error("untilNextBatch", "untilNextBatch must be true or false.")
    if seconds is not None and (
        not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_ADVANCE
    ):
        raise format_error("advanceSeconds", "advanceSeconds must be a whole number from 0 to five years.")
    if until_next and seconds is not None:
        raise format_error("advanceSeconds", "Give untilNextBatch or advanceSeconds, not both.")
    now = api.now
    if until_next:
        seconds = math.ceil((next_slot_after(now) - now).total_seconds())
    if seconds is not None:
        try:
            now = bank_services.clock_advance(seconds=seconds, now=now)
        except bank_services.DomainError as error:
            raise format_error("advanceSeconds", str(error)) from None
        steps = engine.run_due(now=now)
    else:
        steps = engine.run_now(now=now)
    return 200, {
        "now": now.isoformat(),
        "offsetSeconds": int(clock.offset().total_seconds()),
        "paymentSteps": steps,
        "nextBatchAt": next_slot_after(now).isoformat(),
    }


@endpoint(roles=None, sandbox=True, body="json")
def authorisation_decide(api: ApiRequest, authorisation_id: str) -> tuple[int, dict[str, Any]]:
    """The PSU in the bank's app, for a decoupled SCA: ``{"action": "approve"}`` or ``{"action": "refuse"}``;
    ``"identity"`` (national identity or organisation number) names who approves when the SCA names no PSU."""
    data = api.body
    if not isinstance(data, dict):
        raise format_error("body", "A JSON object is expected.")
    unknown = sorted(set(data) - {"action", "identity"})
    if unknown:
        raise format_error(unknown[0], f"Unknown field {unknown[0]}: use action and identity.")
    action = data.get("action")
    if action not in ("approve", "refuse"):
        raise format_error("action", "action must be approve or refuse.")
    identity = data.get("identity")
    customer = None
    if identity is not None:
        if not isinstance(identity, str) or not identity.isascii() or not identity.isdigit():
            raise format_error("identity", "identity must be a customer number (digits).")
        customer = Customer.objects.filter(customer_number=identity).first()
        if customer is None:
            raise ApiError(404, "RESOURCE_UNKNOWN", "No customer with this identity.", path="identity")
    authorisation = (
        PaymentAuthorisation.objects.select_related("sca_session", "payment__agreement")
        .filter(authorisation_id=authorisation_id)
        .first()
    )
    if authorisation is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such payment authorisation.", path="authorisationId")
    engine.run_due(now=api.now)
    try:
        services.payment_authorisation_decide(
            authorisation=authorisation, approve=action == "approve", customer=customer, now=api.now
        )
    except services.PaymentRefused as error:
        raise _refused(error) from None
    authorisation.sca_session.refresh_from_db()
    authorisation.payment.refresh_from_db()
    return 200, {
        "scaStatus": _sca_status(authorisation),
        "transactionStatus": shown_status(authorisation.payment),
    }


@endpoint(roles=None, sandbox=True, body="json")
def drop_next_payment_answer(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    """Lose the next 201 payment initiation answer: ``{"mode": "reset" | "tls" | "timeout" | "none"}``, and for
    timeout ``"delaySeconds"`` (default BANK_SIM_DROP_PAYMENT_ANSWER_DELAY). "none" disarms."""
    data = api.body
    if not isinstance(data, dict):
        raise format_error("body", "A JSON object is expected.")
    unknown = sorted(set(data) - {"mode", "delaySeconds"})
    if unknown:
        raise format_error(unknown[0], f"Unknown field {unknown[0]}: use mode and delaySeconds.")
    mode = data.get("mode")
    if mode not in (*lost_answers.MODES, "none"):
        raise format_error("mode", "mode must be reset, tls, timeout or none.")
    delay = data.get("delaySeconds")
    if delay is not None and (not isinstance(delay, int) or isinstance(delay, bool) or not 1 <= delay <= 600):
        raise format_error("delaySeconds", "delaySeconds must be a whole number from 1 to 600.")
    lost_answers.arm(mode=mode, delay=delay)
    return 200, {"mode": mode, "delaySeconds": delay or settings.BANK_SIM_DROP_PAYMENT_ANSWER_DELAY}
