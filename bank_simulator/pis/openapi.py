"""The payment operations of ``/openapi.json`` (merged by ``bank_simulator.views.openapi.PATH_EXTENSIONS``)."""

from __future__ import annotations

from typing import Any

from bank_simulator.pis import tables
from bank_simulator.views import openapi as base

_ref = base._ref
_error = base._error
_ok = base._ok
_op = base._op
_obj = base._obj
_header = base._header
_path = base._path
_query = base._query
_json_body = base._json_body
STRING = base.STRING

PRODUCT = {
    "name": "paymentProduct",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "minLength": 1},
    "description": f"{' or '.join(tables.PRODUCTS)}; others answer 404 PRODUCT_UNKNOWN",
}
PAYMENT_ID = _path("paymentId")
AMOUNT = _obj(["amount", "currency"], amount=STRING, currency=STRING)
ACCOUNT_REF = {"type": "object", "properties": {"iban": STRING, "bban": STRING, "currency": STRING}}
PSU_HEADERS = [
    _header("PSU-ID", description="PSU identifier from an SCA redirect", format="uuid"),
    _header("PSU-Corporate-ID", description="corporate agreement; required for a corporate PSU", format="uuid"),
    _header("X-PSU-IDENTITY", description="national identity number: single SCA for private customers"),
    _header("PSU-Context", description="PRIVATE or CORPORATE; required with X-PSU-IDENTITY"),
]
ERRORS = {
    **base.COMMON_ERRORS,
    "401": _error("PSU-ID or X-PSU-IDENTITY not known"),
    "403": _error("the PSU may not pay from the debtor account"),
    "409": _error("logical duplicate, X-Request-ID reused, or the payment's status does not allow this"),
}
READ_HEADERS = [*base.SIGNING, base.REDIRECT, base.SESSION, *PSU_HEADERS[:2]]

SCHEMAS: dict[str, Any] = {
    "PaymentInitiation": _obj(
        ["instructedAmount", "creditorName", "creditorAccount", "debtorAccount"],
        instructedAmount=AMOUNT,
        creditorName={"type": "string", "maxLength": 70},
        creditorAgent=STRING,
        creditorAccount=ACCOUNT_REF,
        creditorAddress={
            "type": "object",
            "properties": {
                "street": {"type": "string", "maxLength": 70},
                "buildingNumber": STRING,
                "postalCode": STRING,
                "city": STRING,
                "country": {"type": "string", "maxLength": 2},
            },
        },
        debtorAccount=ACCOUNT_REF,
        remittanceInformationUnstructured={"type": "string", "minLength": 1, "maxLength": 140},
        purposeCode={"type": "string", "enum": sorted(tables.PURPOSE_CODES)},
        requestedExecutionDate={"type": "string", "format": "date"},
        regulatoryReportingCode={"type": "string", "enum": sorted(tables.REGULATORY_CODES)},
        regulatoryReportingInformation={"type": "string", "maxLength": 140},
    ),
    "PaymentInitiationResponse": _obj(
        ["transactionStatus", "paymentId", "_links"],
        transactionStatus=STRING,
        paymentId=STRING,
        transactionFees=AMOUNT,
        transactionFeeIndicator={"type": "boolean"},
        _links={"type": "object", "additionalProperties": _ref("Link")},
    ),
    "PaymentDetails": {
        "type": "object",
        "required": ["paymentId", "transactionStatus", "_links"],
        "properties": {"paymentId": STRING, "transactionStatus": STRING, "_links": {"type": "object"}},
    },
    "PaymentStatus": _obj(["transactionStatus"], transactionStatus=STRING, fundsAvailable={"type": "boolean"}),
    "Authorisation": _obj(
        ["scaStatus", "authorisationId", "_links"],
        scaStatus=STRING,
        authorisationId=STRING,
        _links=_obj(["scaStatus"], scaRedirect=_ref("Link"), scaStatus=_ref("Link"), status=_ref("Link")),
        psuMessage=STRING,
    ),
    "ScaStatus": _obj(["scaStatus"], scaStatus=STRING),
    "AppDecision": _obj(["scaStatus", "transactionStatus"], scaStatus=STRING, transactionStatus=STRING),
    "LostAnswer": _obj(["mode", "delaySeconds"], mode=STRING, delaySeconds={"type": "integer"}),
    "BatchRun": _obj(
        ["now", "offsetSeconds", "paymentSteps", "nextBatchAt"],
        now={"type": "string", "format": "date-time"},
        offsetSeconds={"type": "integer"},
        paymentSteps={"type": "integer"},
        nextBatchAt={"type": "string", "format": "date-time"},
    ),
}


# Whole on purpose: the payment paths as one literal OpenAPI fragment, in the order the specification lists them.
def paths() -> dict[str, Any]:
    one = [PRODUCT, PAYMENT_ID]
    return {
        "/v1/payments/{paymentProduct}": {
            "post": _op(
                "initiatePayment",
                "Initiate a payment (spec 4.1)",
                [
                    *base.SIGNING,
                    base.DIGEST,
                    base.REDIRECT,
                    base.SESSION_REQUIRED,
                    _header("x-accept-fix", required=True, description="comma-separated fix names"),
                    _header("PSU-IP-Address", required=True, description="the PSU is present", format="ipv4"),
                    *PSU_HEADERS,
                    PRODUCT,
                    _query("allowLogicalDuplicate", "allow a logical duplicate payment", type="boolean"),
                ],
                {**_ok("201", _ref("PaymentInitiationResponse")), **ERRORS},
                requestBody=_json_body(_ref("PaymentInitiation")),
            )
        },
        "/v1/payments/{paymentProduct}/{paymentId}": {
            "get": _op(
                "readPayment",
                "The submitted payment with paymentId, transactionStatus and _links",
                [*READ_HEADERS, *one],
                {**_ok("200", _ref("PaymentDetails")), **ERRORS},
            ),
            "delete": _op(
                "cancelPayment",
                "Cancel before settlement (CANC); available for every product in the sandbox",
                [*READ_HEADERS, *one],
                {"204": {"description": "cancelled"}, **ERRORS},
            ),
        },
        "/v1/payments/{paymentProduct}/{paymentId}/status": {
            "get": _op(
                "readPaymentStatus",
                "transactionStatus, with fundsAvailable once funds were checked",
                [*READ_HEADERS, *one],
                {**_ok("200", _ref("PaymentStatus")), **ERRORS},
            )
        },
        "/v1/payments/{paymentProduct}/{paymentId}/authorisations": {
            "post": _op(
                "startPaymentAuthorisation",
                "Start (or continue, for the next signer) the SCA of a payment; empty body",
                [*READ_HEADERS, base.DIGEST, *one],
                {**_ok("201", _ref("Authorisation")), **ERRORS},
            )
        },
        "/v1/payments/{paymentProduct}/{paymentId}/authorisations/{authorisationId}": {
            "get": _op(
                "readPaymentAuthorisation",
                "scaStatus of one authorisation",
                [*READ_HEADERS, *one, _path("authorisationId")],
                {**_ok("200", _ref("ScaStatus")), **ERRORS},
            )
        },
        "/v1/sandbox/batches/run": {
            "post": _op(
                "sandboxRunBatches",
                "Run the payment batches now, or move the clock to the next batch or by advanceSeconds",
                [*base.SIGNING, base.DIGEST],
                {**_ok("200", _ref("BatchRun")), **base.COMMON_ERRORS},
                requestBody=_json_body(
                    {
                        "type": "object",
                        "properties": {
                            "untilNextBatch": {"type": "boolean"},
                            "advanceSeconds": {"type": "integer", "minimum": 0},
                        },
                    },
                    required=False,
                ),
            )
        },
        "/v1/sandbox/payment-authorisations/{authorisationId}": {
            "post": _op(
                "sandboxDecideInApp",
                "The PSU approves or refuses a decoupled payment SCA in the bank's app (BANK_SIM_SCA_APPROACH)",
                [*base.SIGNING, base.DIGEST, _path("authorisationId")],
                {
                    **_ok("200", _ref("AppDecision")),
                    **base.COMMON_ERRORS,
                    "403": _error("the customer may not sign for the payment's agreement"),
                    "409": _error("not a decoupled SCA, or no longer waiting for the PSU"),
                },
                requestBody=_json_body(
                    _obj(["action"], action={"type": "string", "enum": ["approve", "refuse"]}, identity=STRING)
                ),
            )
        },
        "/v1/sandbox/behaviour/drop-next-payment-answer": {
            "post": _op(
                "sandboxDropNextPaymentAnswer",
                "Lose the next 201 payment initiation answer after the payment is stored (none disarms)",
                [*base.SIGNING, base.DIGEST],
                {**_ok("200", _ref("LostAnswer")), **base.COMMON_ERRORS},
                requestBody=_json_body(
                    _obj(
                        ["mode"],
                        mode={"type": "string", "enum": ["reset", "tls", "timeout", "none"]},
                        delaySeconds={"type": "integer", "minimum": 1, "maximum": 600},
                    )
                ),
            )
        },
    }
