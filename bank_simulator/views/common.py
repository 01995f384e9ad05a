"""Pieces shared by the API views: the scaRedirect link of an SCA, and the answer that asks for SCA."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.conf import settings

from bank_simulator import selectors, services
from bank_simulator.errors import ApiError
from bank_simulator.models import ScaSession, TppSession

if TYPE_CHECKING:
    from bank_simulator.access import ApiRequest


def sca_url(session: ScaSession) -> str:
    query = {"state": session.token}
    if session.requested_context:
        query["context"] = session.requested_context
    return f"{settings.BANK_SIM_PUBLIC_URL}/sca/authorize?{urlencode(query)}"


def sca_redirect_link(session: ScaSession) -> dict[str, Any]:
    return {"href": sca_url(session), "verbs": ["GET"]}


def sca_required(api: ApiRequest, *, purpose: str, status: int, code: str, text: str) -> ApiError:
    """The answer that sends the PSU to SCA: an SCA of ``purpose`` started for the request's PSU (its PSU-ID and
    agreement, its TPP-Session-ID and TPP-Redirect-URI), its link in ``_links.scaRedirect``."""
    session = services.sca_start(
        purpose=purpose,
        tpp_org_id=api.tpp_org_id,
        tpp_name=api.tpp.organization_name,
        tpp_session_id=api.header("TPP-Session-ID") or "",
        redirect_uri=api.header("TPP-Redirect-URI") or "",
        now=api.now,
        psu=api.psu,
        context=api.agreement.context if api.agreement else "",
        agreement=api.agreement,
    )
    return ApiError(status, code, text, links={"scaRedirect": sca_redirect_link(session)})


def require_session_sca(api: ApiRequest, *, purpose: str) -> None:
    """Spec sections 3 and 5.8: an SCA is valid for one TPP and one PSU within a TPP-Session-ID, for an hour.

    A read made with the PSU present (PSU-IP-Address) that names a TPP-Session-ID speaks for the PSU who
    authenticated in that session: it is answered only when the PSU of PSU-ID completed SCA in that
    TPP-Session-ID within its hour (and no later session's SCA ended it). Otherwise the answer is 401 with a
    scaRedirect (an SCA of ``purpose`` for that PSU), as for any request that needs SCA: SCA_NOT_FOUND when the PSU
    never completed SCA in that session, SCA_EXPIRED when its hour has passed or a newer session ended it. A read
    without TPP-Session-ID, or without the PSU present (the TPP acting alone), is not affected.
    """
    session_id = api.header("TPP-Session-ID")
    if not session_id or not api.psu_present or api.psu is None:
        return
    customer = api.psu.customer
    if api.session_read:  # read with the PSU in the same query (access._resolve_psu)
        valid = selectors.session_sca_in_force(api.session_sca_at, now=api.now)
    else:
        valid = selectors.tpp_session_sca_valid(
            tpp_org_id=api.tpp_org_id, customer=customer, tpp_session_id=session_id, now=api.now
        )
    if valid:
        return
    if TppSession.objects.filter(tpp_org_id=api.tpp_org_id, customer=customer, tpp_session_id=session_id).exists():
        code, text = (
            "SCA_EXPIRED",
            "The PSU's SCA in this TPP-Session-ID is no longer valid (its hour has passed, or an SCA in a newer "
            "session ended it); send the PSU to scaRedirect.",
        )
    else:
        code, text = (
            "SCA_NOT_FOUND",
            "The PSU of PSU-ID has not completed SCA in this TPP-Session-ID; send the PSU to scaRedirect.",
        )
    raise sca_required(api, purpose=purpose, status=401, code=code, text=text)
