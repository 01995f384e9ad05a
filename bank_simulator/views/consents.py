"""Operations that start SCA or tell the TPP about the PSU: bank-offered consents, /v1/users, /v1/agreements."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse

from bank_simulator import services
from bank_simulator.access import PSP_AI, PSP_PI, ApiRequest, endpoint
from bank_simulator.errors import ApiError, error_response, format_error, header_required
from bank_simulator.models import Agreement, AgreementContext, ScaPurpose
from bank_simulator.representations import link
from bank_simulator.views.common import require_session_sca, sca_redirect_link

SCA_HEADERS = ("TPP-Redirect-URI", "TPP-Session-ID")


def _psu_context(api: ApiRequest) -> str:
    context = api.header("PSU-Context") or ""
    if context and context not in AgreementContext.values:
        raise format_error("PSU-Context", "PSU-Context must be PRIVATE or CORPORATE.")
    if api.agreement is not None and api.agreement.context == AgreementContext.CORPORATE:
        return AgreementContext.CORPORATE
    return context


def _start(api: ApiRequest, purpose: str) -> dict[str, Any]:
    session = services.sca_start(
        purpose=purpose,
        tpp_org_id=api.tpp_org_id,
        tpp_name=api.tpp.organization_name,
        tpp_session_id=api.header("TPP-Session-ID") or "",
        redirect_uri=api.header("TPP-Redirect-URI") or "",
        now=api.now,
        psu=api.psu,
        context=_psu_context(api),
        agreement=api.agreement,
    )
    return {"_links": {"scaRedirect": sca_redirect_link(session)}}


@endpoint(roles=frozenset({PSP_AI}), required=SCA_HEADERS, body="ignored")
def bank_offered_consents(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    """Bank-offered consent: the body is ignored; the PSU picks the accounts in the SCA screens."""
    return 201, _start(api, ScaPurpose.CONSENT)


@endpoint(roles=frozenset({PSP_AI}), required=("TPP-Redirect-URI",), corporate_required=True)
def bank_offered_consent_delete(api: ApiRequest) -> HttpResponse:
    """The TPP ends its consent for the PSU of PSU-ID (and the agreement of PSU-Corporate-ID): 204, and account
    reads answer 401 CONSENT_UNKNOWN with a scaRedirect for a new consent. BANK_SIM_CONSENT_DELETE=false: 405."""
    if not settings.BANK_SIM_CONSENT_DELETE:
        error = ApiError(
            405,
            "SERVICE_INVALID",
            "This bank does not offer deleting a consent; the PSU revokes it directly with the bank.",
        )
        response = error_response(error)
        response["Allow"] = "POST"
        return response
    if not api.psu_id_given:
        raise header_required("PSU-ID", "to name the PSU whose consent ends")
    if api.psu is None:
        raise ApiError(401, "PSU_CREDENTIALS_INVALID", "PSU-ID is not known for this TPP.", path="PSU-ID")
    assert api.agreement is not None  # corporate_required: a corporate PSU has sent PSU-Corporate-ID
    if services.consent_terminate_by_tpp(psu=api.psu, agreement=api.agreement, now=api.now) is None:
        raise ApiError(403, "CONSENT_UNKNOWN", "There is no valid consent of this PSU for this agreement to end.")
    return HttpResponse(status=204)


@endpoint(roles=frozenset({PSP_AI}), body="ignored")
def consents_removed(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    raise ApiError(
        410, "NOT_FOUND", "POST /v1/consents was removed on 05-Dec-2024; use POST /v1/bank-offered-consents."
    )


@endpoint(roles=frozenset({PSP_PI}), required=SCA_HEADERS)
def users(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    """A PISP without PSU-ID: SCA tells it the PSU-ID through the redirect."""
    return 200, _start(api, ScaPurpose.USERS)


@endpoint(roles=frozenset({PSP_AI, PSP_PI}), required=("TPP-Redirect-URI",))
def agreements(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    """The corporate agreements the PSU may act for; its id goes into PSU-Corporate-ID. With the PSU present and a
    TPP-Session-ID, only for the PSU who completed SCA in that session (a TPP confirms a redirect's PSU-ID so)."""
    if not api.psu_id_given:
        raise header_required("PSU-ID", "to list the PSU's agreements")
    if api.psu is None:
        raise ApiError(401, "PSU_CREDENTIALS_INVALID", "PSU-ID is not known for this TPP.", path="PSU-ID")
    require_session_sca(api, purpose=ScaPurpose.CONSENT if PSP_AI in api.tpp.roles else ScaPurpose.USERS)
    rows = Agreement.objects.filter(users=api.psu.customer, context=AgreementContext.CORPORATE).select_related(
        "owner"
    )
    return 200, {
        "agreements": [
            {
                "id": str(a.agreement_id),
                "name": a.name,
                "companyName": a.owner.name,
                "_links": {"accounts": link("/v1/accounts")},
            }
            for a in rows.order_by("id")
        ]
    }
