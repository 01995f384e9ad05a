"""Consents and users: starting SCA for a consent or a PISP-only PSU, ending a consent, the corporate agreements
of a PSU."""

from __future__ import annotations

from xs2a import models
from xs2a.errors import InvalidRequestError
from xs2a.psu import PsuContext
from xs2a.services.base import Service, sca_headers, session_for, with_changes

__all__ = ["ConsentsService"]


class ConsentsService(Service):
    """``client.consents``: POST and DELETE /v1/bank-offered-consents, GET /v1/users, GET /v1/agreements."""

    def start(
        self,
        *,
        psu: PsuContext,
        tpp_session_id: str | None = None,
        redirect_preferred: bool | None = None,
        redirect_uri: str | None = None,
    ) -> models.RedirectResponse:
        """POST /v1/bank-offered-consents (PSU-Context in ``psu``): the answer holds the scaRedirect link.

        Starts SCA: a TPP-Session-ID is always sent (made when none is given) and returned on the response.
        ``redirect_uri``: this SCA's TPP-Redirect-URI instead of the client's.
        """
        session = session_for(tpp_session_id, psu)
        result = self._requester.call(
            "POST",
            "/v1/bank-offered-consents",
            reader=models.RedirectResponse.from_json,
            json_body={},
            psu=psu,
            tpp_session_id=session,
            headers=sca_headers(redirect_preferred, redirect_uri),
        )
        return with_changes(result, tpp_session_id=session)

    def delete(self, *, psu: PsuContext) -> None:
        """DELETE /v1/bank-offered-consents: end the PSU's consent (PSU-ID; PSU-Corporate-ID in corporate
        context). The bank answers 204 when it ended the consent. A bank that does not offer it answers 404 or
        405: ConsentDeletionNotOfferedError (the PSU ends it at the bank); one that no longer knows the consent
        answers CONSENT_UNKNOWN (ConsentUnknownError: already ended). Sent once."""
        if not psu.psu_id:
            raise InvalidRequestError("ending a consent needs the PSU-ID")
        if psu.context == "CORPORATE" and not psu.corporate_id:
            raise InvalidRequestError("ending a corporate consent needs the PSU-Corporate-ID")
        self._requester.call("DELETE", "/v1/bank-offered-consents", reader=lambda _data: None, psu=psu)

    def users(
        self,
        *,
        psu: PsuContext | None = None,
        tpp_session_id: str | None = None,
        redirect_preferred: bool | None = None,
        redirect_uri: str | None = None,
    ) -> models.RedirectResponse:
        """GET /v1/users: starts SCA for a PISP without a PSU-ID; answers with a scaRedirect link.

        Starts SCA, so a TPP-Session-ID is always sent (made when neither argument nor ``psu`` gives one) and
        returned on the response.
        """
        session = session_for(tpp_session_id, psu)
        result = self._requester.call(
            "GET",
            "/v1/users",
            reader=models.RedirectResponse.from_json,
            psu=psu,
            tpp_session_id=session,
            headers=sca_headers(redirect_preferred, redirect_uri),
        )
        return with_changes(result, tpp_session_id=session)

    def agreements(self, *, psu: PsuContext) -> list[models.Agreement]:
        """GET /v1/agreements: the corporate agreements of a known PSU."""
        if not psu.psu_id:
            raise InvalidRequestError("listing agreements needs the PSU-ID")
        return self._requester.call(
            "GET",
            "/v1/agreements",
            reader=lambda d: models.read_list(d, "agreements", models.Agreement.from_json, "agreements"),
            psu=psu,
        )
