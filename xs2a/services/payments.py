"""Payment initiation: initiate, start an authorisation, read the status or the payment, delete it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from xs2a import models
from xs2a.core import encode_json
from xs2a.errors import InvalidRequestError
from xs2a.links import path_from_template
from xs2a.psu import PsuContext
from xs2a.services.base import Service, sca_headers, text_bool, with_changes

__all__ = ["CROSS_BORDER", "DOMESTIC", "PRODUCTS", "PaymentsService", "initiation_bytes"]

CROSS_BORDER = "norwegian-cross-border-credit-transfers"
DOMESTIC = "norwegian-domestic-credit-transfers"
PRODUCTS = (CROSS_BORDER, DOMESTIC)


def initiation_bytes(payment: models.PaymentInitiation) -> bytes:
    """The exact bytes ``initiate`` sends for ``payment`` (compact UTF-8 JSON, characters as themselves).

    Keep them to send the very same request again: ``initiate`` sends bytes as they are."""
    return encode_json(payment.to_json())


class PaymentsService(Service):
    """``client.payments``: /v1/payments/{product} and the links of a created payment."""

    def initiate(
        self,
        payment: models.PaymentInitiation | Mapping[str, Any] | bytes,
        *,
        psu: PsuContext,
        product: str = CROSS_BORDER,
        tpp_session_id: str | None = None,
        allow_logical_duplicate: bool | None = None,
        redirect_preferred: bool | None = None,
        redirect_uri: str | None = None,
        request_id: str | None = None,
    ) -> models.PaymentInitiationResponse:
        """POST /v1/payments/{product}. Sent once, never retried. TransportError: nothing was sent (the same
        request may be sent again). OutcomeUnknownError (a ServerOutcomeUnknownError for a 5xx): it may have
        reached the bank; reconcile with the X-Request-ID it carries, never send it anew under another one.

        The PSU must be present (PSU-IP-Address) and identified by PSU-ID or X-PSU-IDENTITY (single SCA).
        A TPP-Session-ID is made when none is given; the response carries it and the X-Request-ID.
        ``redirect_uri``: the TPP-Redirect-URI of an SCA the bank may start with the initiation (else the
        client's).

        ``payment``: the typed body, a JSON object, or the bytes ``initiation_bytes`` made of a typed body
        (sent as they are, so a request sent again after a lost answer is the same byte for byte).
        """
        if product not in PRODUCTS:
            raise InvalidRequestError(
                f"unknown payment product {product!r}; expected one of {', '.join(PRODUCTS)}"
            )
        if not psu.present:
            raise InvalidRequestError("payment initiation needs the PSU present: PsuContext.ip_address (spec 4.1)")
        if not (psu.psu_id or psu.identity):
            raise InvalidRequestError("payment initiation needs PSU-ID or X-PSU-IDENTITY (spec 4.1)")
        body, raw = _initiation_body(payment)
        tpp_session_id = tpp_session_id or psu.tpp_session_id or str(uuid.uuid4())
        request_id = request_id or str(uuid.uuid4())
        query = {}
        if allow_logical_duplicate is not None:
            query["allowLogicalDuplicate"] = text_bool(allow_logical_duplicate)
        result = self._requester.call(
            "POST",
            path_from_template("/v1/payments/{product}", product=product),
            reader=models.PaymentInitiationResponse.from_json,
            query=query,
            json_body=body,
            body=raw,
            psu=psu,
            request_id=request_id,
            tpp_session_id=tpp_session_id,
            headers=sca_headers(redirect_preferred, redirect_uri),
        )
        return with_changes(result, request_id=request_id, tpp_session_id=tpp_session_id)

    def start_authorisation(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
        tpp_session_id: str | None = None,
        redirect_preferred: bool | None = None,
        redirect_uri: str | None = None,
    ) -> models.AuthorisationResponse:
        """POST (empty body) to the payment's startAuthorisation link; the answer holds the scaRedirect (or, for
        an approval in the bank's app, none). ``redirect_uri``: this SCA's TPP-Redirect-URI."""
        return self._requester.call(
            "POST",
            reader=models.AuthorisationResponse.from_json,
            psu=psu,
            tpp_session_id=tpp_session_id,
            headers=sca_headers(redirect_preferred, redirect_uri),
            **_target(href, product, payment_id, "/authorisations"),
        )

    def status(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
    ) -> models.PaymentStatus:
        """GET the payment's status link (or /v1/payments/{product}/{paymentId}/status)."""
        return self._requester.call(
            "GET", reader=models.PaymentStatus.from_json, psu=psu, **_target(href, product, payment_id, "/status")
        )

    def authorisation_status(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        authorisation_id: str | None = None,
        product: str = CROSS_BORDER,
    ) -> models.ScaStatusResponse:
        """GET an authorisation's scaStatus link (or /v1/payments/{product}/{paymentId}/authorisations/{id}):
        how a decoupled approval (in the bank's app) is followed."""
        if not href and not authorisation_id:
            raise InvalidRequestError("give the scaStatus link href or the authorisation id")
        suffix = (
            ""
            if href
            else path_from_template("/authorisations/{authorisation_id}", authorisation_id=authorisation_id)
        )
        return self._requester.call(
            "GET", reader=models.ScaStatusResponse.from_json, **_target(href, product, payment_id, suffix)
        )

    def get(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
    ) -> models.PaymentDetails:
        """GET the payment (its self link, or /v1/payments/{product}/{paymentId})."""
        return self._requester.call(
            "GET", reader=models.PaymentDetails.from_json, psu=psu, **_target(href, product, payment_id, "")
        )

    def delete(
        self,
        *,
        href: str | None = None,
        payment_id: str | None = None,
        product: str = CROSS_BORDER,
        psu: PsuContext | None = None,
    ) -> models.PaymentCancellationResponse:
        """DELETE the payment (available for all products in the sandbox). Sent once."""
        return self._requester.call(
            "DELETE",
            reader=models.PaymentCancellationResponse.from_json,
            psu=psu,
            **_target(href, product, payment_id, ""),
        )


def _initiation_body(
    payment: models.PaymentInitiation | Mapping[str, Any] | bytes,
) -> tuple[dict[str, Any] | None, bytes | None]:
    """(json_body, body) for the request: bytes go as they are, once they are seen to be a JSON object."""
    if isinstance(payment, bytes):
        try:
            parsed = json.loads(payment.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
            raise InvalidRequestError("the payment's bytes are not UTF-8 JSON") from None
        if not isinstance(parsed, dict):
            raise InvalidRequestError("the payment's bytes are not a JSON object")
        return None, payment
    if isinstance(payment, models.PaymentInitiation):
        return payment.to_json(), None
    return dict(payment), None


def _target(href: str | None, product: str, payment_id: str | None, suffix: str) -> dict[str, str]:
    """The link given, else the payment's path with ``suffix``."""
    if href:
        return {"href": href}
    if not payment_id:
        raise InvalidRequestError("give the link href or the payment id")
    path = path_from_template("/v1/payments/{product}/{payment_id}", product=product, payment_id=payment_id)
    return {"path": path + suffix}
