"""``/openapi.json``: an OpenAPI 3 description of everything the sandbox bank serves under /v1.

The test suite runs schemathesis against a running simulator with this document: no 5xx and no answer outside
it. Keep it next to the views: a new operation or status code goes here in the same change.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from bank_simulator.errors import CODES


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _header(name: str, *, required: bool = False, description: str = "", **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": required,
        "description": description,
        "schema": {"type": "string", **schema},
    }


def _query(name: str, description: str, **schema: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


def _path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}


SIGNING = [
    _header(
        "X-Request-ID", required=True, description="identifier unique to the call", minLength=1, maxLength=100
    ),
    _header("Date", required=True, description="RFC 7231 date, within 60 seconds of the bank's clock"),
    _header("TPP-Signature-Certificate", required=True, description="Base64 DER of the TPP's QSealC"),
    _header("Signature", required=True, description='keyId="SN=..,CA=..",algorithm,headers,signature (spec 5.4)'),
]
DIGEST = _header(
    "Digest", description="SHA-256=<base64> or SHA-512=<base64> of the exact body (required with a body)"
)
REDIRECT = _header("TPP-Redirect-URI", required=True, description="where the PSU returns after SCA", format="uri")
SESSION = _header("TPP-Session-ID", description="TPP session; an SCA within it holds for one hour")
SESSION_REQUIRED = {**SESSION, "required": True}
PSU = [
    _header("PSU-ID", description="PSU identifier from the SCA redirect", format="uuid"),
    _header("PSU-Corporate-ID", description="corporate agreement; required for a corporate PSU", format="uuid"),
    _header("PSU-IP-Address", description="present when the PSU takes part in real time", format="ipv4"),
    _header("x-accept-fix", description="comma-separated fix names (spec section 9)"),
]
PSU_CONTEXT = _header("PSU-Context", description="PRIVATE or CORPORATE", enum=["PRIVATE", "CORPORATE"])
AIS_HEADERS = [*SIGNING, REDIRECT, SESSION, *PSU]


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref("Error")}}}


COMMON_ERRORS = {
    "400": _error("a rule of the request failed (signature, certificate, headers, format)"),
    "404": _error("unknown operation or resource; sandbox operations when the sandbox is off"),
    "406": _error("Accept does not allow application/json"),
}
AIS_ERRORS = {
    **COMMON_ERRORS,
    "401": _error(
        "no PSU-ID or no valid consent, or (PSU present, with TPP-Session-ID) no SCA of this PSU in that "
        "session's hour; _links.scaRedirect starts a new SCA"
    ),
    "403": _error("consent revoked or not covering the account; agreement not usable"),
    "429": _error("ACCESS_EXCEEDED: more than 4 requests without the PSU in 24 hours"),
}


def _ok(status: str, schema: dict[str, Any], description: str = "success") -> dict[str, Any]:
    return {status: {"description": description, "content": {"application/json": {"schema": schema}}}}


def _json_body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def _op(
    op_id: str, summary: str, parameters: list[dict[str, Any]], responses: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {"operationId": op_id, "summary": summary, "parameters": parameters, "responses": responses, **extra}


STRING = {"type": "string"}
AMOUNT_STRING = {"type": "string", "pattern": r"^-?\d{1,18}(\.\d{1,5})?$"}
CURRENCY = {"type": "string", "pattern": "^[A-Z]{3}$"}


def _obj(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


SCHEMAS: dict[str, Any] = {
    "Link": _obj(
        ["href", "verbs"],
        href=STRING,
        verbs={"type": "array", "items": {"type": "string", "enum": ["GET", "PUT", "POST", "DELETE"]}},
    ),
    "TppMessage": _obj(
        ["category", "code"],
        category={"type": "string", "enum": ["ERROR", "WARNING"]},
        code={"type": "string", "enum": sorted(CODES)},
        path=STRING,
        text={"type": "string", "maxLength": 512},
    ),
    "Error": _obj(
        ["tppMessages"],
        tppMessages={"type": "array", "minItems": 1, "items": _ref("TppMessage")},
        _links={"type": "object", "properties": {"scaRedirect": _ref("Link")}},
    ),
    "Amount": _obj(["amount", "currency"], amount=AMOUNT_STRING, currency=CURRENCY),
    "AccountReference": _obj(["currency"], iban=STRING, bban=STRING, maskedPan=STRING, currency=CURRENCY),
    "ScaRedirect": _obj(["_links"], _links=_obj(["scaRedirect"], scaRedirect=_ref("Link"))),
    "Balance": _obj(
        ["balanceAmount", "balanceType"],
        balanceAmount=_ref("Amount"),
        balanceType={"type": "string", "enum": ["closingBooked", "interimBooked", "interimAvailable", "expected"]},
        referenceDate={"type": "string", "format": "date"},
    ),
    "Account": _obj(
        ["resourceId", "iban", "bban", "currency", "name", "_links"],
        resourceId=STRING,
        iban=STRING,
        bban=STRING,
        currency=CURRENCY,
        name={"type": "string", "maxLength": 70},
        product=STRING,
        cashAccountType=STRING,
        bic=STRING,
        balances={"type": "array", "items": _ref("Balance")},
        _links={"type": "object", "additionalProperties": _ref("Link")},
    ),
    "CardAccount": _obj(
        ["resourceId", "maskedPan", "currency", "name", "_links"],
        resourceId=STRING,
        maskedPan=STRING,
        currency=CURRENCY,
        name={"type": "string", "maxLength": 70},
        product=STRING,
        status=STRING,
        creditLimit=_ref("Amount"),
        balances={"type": "array", "items": _ref("Balance")},
        _links={"type": "object", "additionalProperties": _ref("Link")},
    ),
    "Balances": {
        "type": "object",
        "required": ["balances"],
        "properties": {
            "account": _ref("AccountReference"),
            "cardAccount": _ref("AccountReference"),
            "balances": {"type": "array", "items": _ref("Balance")},
        },
    },
    "Transaction": _obj(
        ["transactionId", "bookingDate", "transactionAmount"],
        transactionId=STRING,
        endToEndIdentification=STRING,
        bookingDate={"type": "string", "format": "date"},
        valueDate={"type": "string", "format": "date"},
        transactionAmount=_ref("Amount"),
        originalAmount=_ref("Amount"),
        creditorName=STRING,
        debtorName=STRING,
        creditorAccount=_ref("AccountReference_NoCurrency"),
        debtorAccount=_ref("AccountReference_NoCurrency"),
        remittanceInformationUnstructured={"type": "string", "maxLength": 140},
        remittanceInformationUnstructuredArray={"type": "array", "items": STRING},
        remittanceInformationStructuredArray={"type": "array", "items": {"type": "object"}},
        kid=STRING,
        proprietaryBankTransactionCode=STRING,
        _links={"type": "object", "additionalProperties": _ref("Link")},
    ),
    "AccountReference_NoCurrency": {"type": "object", "properties": {"iban": STRING, "bban": STRING}},
    "CardTransaction": _obj(
        ["cardTransactionId", "transactionAmount", "bookingDate"],
        cardTransactionId=STRING,
        transactionDate={"type": "string", "format": "date"},
        bookingDate={"type": "string", "format": "date"},
        transactionAmount=_ref("Amount"),
        originalAmount=_ref("Amount"),
        maskedPan=STRING,
        transactionDetails=STRING,
        proprietaryBankTransactionCode=STRING,
    ),
    "TransactionList": _obj(
        ["account", "transactions"],
        account=_ref("AccountReference"),
        transactions=_obj(
            ["booked", "pending", "_links"],
            booked={"type": "array", "items": _ref("Transaction")},
            pending={"type": "array", "items": _ref("Transaction")},
            _links={"type": "object", "additionalProperties": _ref("Link")},
        ),
    ),
    "CardTransactionList": _obj(
        ["cardAccount", "cardTransactions"],
        cardAccount=_ref("AccountReference"),
        cardTransactions=_obj(
            ["booked", "pending", "_links"],
            booked={"type": "array", "items": _ref("CardTransaction")},
            pending={"type": "array", "items": _ref("CardTransaction")},
            _links={"type": "object", "additionalProperties": _ref("Link")},
        ),
    ),
    "Agreement": _obj(
        ["id", "name", "engagements", "_links"],
        id={"type": "string", "format": "uuid"},
        name=STRING,
        context={"type": "string", "enum": ["PRIVATE", "CORPORATE"]},
        signersRequired={"type": "integer"},
        engagements={"type": "array", "items": STRING},
        _links=_obj(["self", "engagements"], self=_ref("Link"), engagements=_ref("Link")),
    ),
    "Customer": _obj(
        [
            "customerId",
            "customerNumber",
            "customerType",
            "customerName",
            "agreements",
            "accounts",
            "cardAccounts",
            "_links",
        ],
        customerId=STRING,
        customerNumber=STRING,
        customerType={"type": "string", "enum": ["PRIVATE", "CORPORATE"]},
        customerName=STRING,
        agreements={"type": "array", "items": _ref("Agreement")},
        accounts={"type": "array", "items": STRING},
        cardAccounts={"type": "array", "items": STRING},
        _links=_obj(["self"], self=_ref("Link")),
    ),
    "SandboxAccount": {
        "allOf": [
            {"oneOf": [_ref("Account"), _ref("CardAccount")]},
            _obj(["customerId", "agreements"], customerId=STRING, agreements={"type": "array", "items": STRING}),
        ]
    },
    "Clock": _obj(
        ["now", "offsetSeconds"], now={"type": "string", "format": "date-time"}, offsetSeconds={"type": "integer"}
    ),
}

# Path items added by the simulator's other apps (bank_simulator.pis registers from AppConfig.ready()).
PATH_EXTENSIONS: list[Any] = []

_AMOUNT_INPUT = _obj(["amount", "currency"], amount={"type": "string"}, currency={"type": "string"})


# Whole on purpose: one literal OpenAPI document, read top to bottom like the specification it describes.
def build(base_url: str) -> dict[str, Any]:
    acc = [_path("resourceId")]
    with_balance = _query("withBalance", "include balances", type="boolean")
    tx_params = [
        _query(
            "bookingStatus",
            "booked, pending, both or all (default both)",
            type="string",
            enum=["booked", "pending", "both", "all"],
        ),
        _query("dateFrom", "first booking date", type="string", format="date"),
        _query("dateTo", "last booking date", type="string", format="date"),
        _query(
            "limit",
            "page size (default 200)",
            type="integer",
            minimum=1,
            maximum=settings.BANK_SIM_MAX_PAGE,
        ),
        _query("offset", "items to skip", type="integer", minimum=0),
    ]
    sandbox_headers = [*SIGNING, DIGEST]
    sandbox_errors = {**COMMON_ERRORS, "409": _error("a customer with this customerNumber exists")}
    paths: dict[str, Any] = {
        "/v1/bank-offered-consents": {
            "post": _op(
                "startBankOfferedConsent",
                "Start a bank-offered consent (SCA redirect)",
                [*SIGNING, DIGEST, REDIRECT, SESSION_REQUIRED, *PSU, PSU_CONTEXT],
                {**_ok("201", _ref("ScaRedirect")), **AIS_ERRORS},
                requestBody=_json_body({"type": "object"}, required=False),
            ),
            "delete": _op(
                "deleteBankOfferedConsent",
                "End the TPP's consent for the PSU (and PSU-Corporate-ID's agreement)",
                [*SIGNING, REDIRECT, SESSION, *PSU],
                {
                    "204": {"description": "the consent ended"},
                    **AIS_ERRORS,
                    "403": _error("CONSENT_UNKNOWN: no valid consent of this PSU and agreement"),
                    "405": _error("SERVICE_INVALID: the bank does not offer it (BANK_SIM_CONSENT_DELETE=false)"),
                },
            ),
        },
        "/v1/consents": {
            "post": _op(
                "createConsentRemoved",
                "Removed since 05-Dec-2024: answered 410",
                [*SIGNING, DIGEST, REDIRECT, SESSION],
                {"410": _error("the operation was removed"), **AIS_ERRORS},
                requestBody=_json_body({"type": "object"}, required=False),
            )
        },
        "/v1/users": {
            "get": _op(
                "startUserIdentification",
                "SCA for a PISP without PSU-ID",
                [*SIGNING, REDIRECT, SESSION_REQUIRED, *PSU, PSU_CONTEXT],
                {**_ok("200", _ref("ScaRedirect")), **AIS_ERRORS},
            )
        },
        "/v1/agreements": {
            "get": _op(
                "listAgreements",
                "Corporate agreements of a known PSU",
                [*SIGNING, REDIRECT, SESSION, *PSU],
                {
                    **_ok(
                        "200",
                        _obj(
                            ["agreements"],
                            agreements={
                                "type": "array",
                                "items": _obj(
                                    ["id", "name"], id={"type": "string", "format": "uuid"}, name=STRING
                                ),
                            },
                        ),
                    ),
                    **AIS_ERRORS,
                },
            )
        },
        "/v1/accounts": {
            "get": _op(
                "listAccounts",
                "Consented accounts",
                [*AIS_HEADERS, with_balance],
                {
                    **_ok("200", _obj(["accounts"], accounts={"type": "array", "items": _ref("Account")})),
                    **AIS_ERRORS,
                },
            )
        },
        "/v1/accounts/{resourceId}": {
            "get": _op(
                "readAccount",
                "Account details",
                [*AIS_HEADERS, *acc, with_balance],
                {**_ok("200", _obj(["account"], account=_ref("Account"))), **AIS_ERRORS},
            )
        },
        "/v1/accounts/{resourceId}/balances": {
            "get": _op(
                "readBalances", "Balances", [*AIS_HEADERS, *acc], {**_ok("200", _ref("Balances")), **AIS_ERRORS}
            )
        },
        "/v1/accounts/{resourceId}/transactions": {
            "get": _op(
                "listTransactions",
                "Transactions",
                [*AIS_HEADERS, *acc, *tx_params],
                {**_ok("200", _ref("TransactionList")), **AIS_ERRORS},
            )
        },
        "/v1/accounts/{resourceId}/transactions/{transactionId}": {
            "get": _op(
                "readTransactionDetails",
                "Details of one transaction",
                [*AIS_HEADERS, *acc, _path("transactionId")],
                {
                    **_ok("200", _obj(["transactionsDetails"], transactionsDetails=_ref("Transaction"))),
                    **AIS_ERRORS,
                },
            )
        },
        "/v1/card-accounts": {
            "get": _op(
                "listCardAccounts",
                "Consented card accounts",
                [*AIS_HEADERS, with_balance],
                {
                    **_ok(
                        "200", _obj(["cardAccounts"], cardAccounts={"type": "array", "items": _ref("CardAccount")})
                    ),
                    **AIS_ERRORS,
                },
            )
        },
        "/v1/card-accounts/{resourceId}": {
            "get": _op(
                "readCardAccount",
                "Card account details",
                [*AIS_HEADERS, *acc, with_balance],
                {**_ok("200", _obj(["cardAccount"], cardAccount=_ref("CardAccount"))), **AIS_ERRORS},
            )
        },
        "/v1/card-accounts/{resourceId}/balances": {
            "get": _op(
                "readCardBalances",
                "Card account balances",
                [*AIS_HEADERS, *acc],
                {**_ok("200", _ref("Balances")), **AIS_ERRORS},
            )
        },
        "/v1/card-accounts/{resourceId}/transactions": {
            "get": _op(
                "listCardTransactions",
                "Card transactions",
                [*AIS_HEADERS, *acc, *tx_params],
                {**_ok("200", _ref("CardTransactionList")), **AIS_ERRORS},
            )
        },
        "/v1/sandbox/initialize": {
            "post": _op(
                "sandboxInitialize",
                "Reset the sandbox to its known state",
                sandbox_headers,
                {
                    **_ok("200", _obj(["customers"], customers={"type": "array", "items": _ref("Customer")})),
                    **COMMON_ERRORS,
                },
            )
        },
        "/v1/sandbox/customers": {
            "get": _op(
                "sandboxListCustomers",
                "Sandbox customers",
                [
                    *SIGNING,
                    _query("withAccounts", "include accounts", type="boolean"),
                    _query("withAgreements", "include agreements", type="boolean"),
                ],
                {**_ok("200", {"type": "array", "items": _ref("Customer")}), **COMMON_ERRORS},
            ),
            "post": _op(
                "sandboxCreateCustomer",
                "Create a sandbox customer",
                sandbox_headers,
                {**_ok("201", _ref("Customer")), **sandbox_errors},
                requestBody=_json_body(
                    _obj(
                        ["customerNumber", "customerType", "customerName"],
                        customerNumber=STRING,
                        customerType={"type": "string", "enum": ["PRIVATE", "CORPORATE"]},
                        customerName=STRING,
                    )
                ),
            ),
        },
        "/v1/sandbox/customers/{customerId}": {
            "get": _op(
                "sandboxReadCustomer",
                "One sandbox customer",
                [*SIGNING, _path("customerId")],
                {**_ok("200", _ref("Customer")), **COMMON_ERRORS},
            )
        },
        "/v1/sandbox/customers/{customerId}/consents": {
            "delete": _op(
                "sandboxRevokeConsents",
                "The PSU revokes its consents with the bank",
                [*SIGNING, _path("customerId")],
                {**_ok("200", _obj(["revokedConsents"], revokedConsents={"type": "integer"})), **COMMON_ERRORS},
            )
        },
        "/v1/sandbox/agreements": {
            "post": _op(
                "sandboxCreateAgreement",
                "Create a corporate agreement",
                sandbox_headers,
                {**_ok("201", _ref("Agreement")), **COMMON_ERRORS},
                requestBody=_json_body(
                    _obj(
                        ["customerId", "name"],
                        customerId=STRING,
                        name=STRING,
                        signersRequired={"type": "integer"},
                        userCustomerIds={"type": "array", "items": STRING},
                    )
                ),
            )
        },
        "/v1/sandbox/agreements/{agreementId}/engagements": {
            "post": _op(
                "sandboxAddAgreementAccount",
                "Add a company account to an agreement",
                [*sandbox_headers, _path("agreementId")],
                {**_ok("200", _ref("Agreement")), **COMMON_ERRORS},
                requestBody=_json_body(_obj(["accountId"], accountId=STRING)),
            )
        },
        "/v1/sandbox/accounts": {
            "post": _op(
                "sandboxCreateAccount",
                "Create a mock account or card account",
                sandbox_headers,
                {**_ok("201", _ref("SandboxAccount")), **COMMON_ERRORS},
                requestBody=_json_body(
                    _obj(
                        ["customerId", "currency", "name"],
                        customerId=STRING,
                        accountType={"type": "string", "enum": ["ACCOUNT", "CARD"]},
                        currency=STRING,
                        name=STRING,
                        product=STRING,
                        balance=_AMOUNT_INPUT,
                        creditLimit=_AMOUNT_INPUT,
                    )
                ),
            )
        },
        "/v1/sandbox/accounts/{mockAccountId}/transactions": {
            "post": _op(
                "sandboxCreateTransaction",
                "Add a mock transaction (refused when another account is the debtor)",
                [*sandbox_headers, _path("mockAccountId")],
                {**_ok("201", {"oneOf": [_ref("Transaction"), _ref("CardTransaction")]}), **COMMON_ERRORS},
                requestBody=_json_body(
                    _obj(
                        ["transactionAmount"],
                        transactionAmount=_AMOUNT_INPUT,
                        debtorAccount={"type": "object", "properties": {"iban": STRING}},
                        creditorAccount={"type": "object", "properties": {"iban": STRING}},
                        counterpartyName=STRING,
                        remittanceInformationUnstructured=STRING,
                        kid=STRING,
                        endToEndIdentification=STRING,
                        bookingStatus={"type": "string", "enum": ["booked", "pending"]},
                        bookingDate={"type": "string", "format": "date"},
                    )
                ),
            )
        },
        "/v1/sandbox/accounts/{mockAccountId}/balances": {
            "post": _op(
                "sandboxUpdateBalance",
                "Set an account's booked balance",
                [*sandbox_headers, _path("mockAccountId")],
                {**_ok("200", _ref("Balances")), **COMMON_ERRORS},
                requestBody=_json_body(_obj(["balanceAmount"], balanceAmount=_AMOUNT_INPUT)),
            )
        },
        "/v1/sandbox/card-accounts/{mockAccountId}/balances": {
            "post": _op(
                "sandboxUpdateCardBalance",
                "Set a card account's booked balance",
                [*sandbox_headers, _path("mockAccountId")],
                {**_ok("200", _ref("Balances")), **COMMON_ERRORS},
                requestBody=_json_body(_obj(["balanceAmount"], balanceAmount=_AMOUNT_INPUT)),
            )
        },
        "/v1/sandbox/clock": {
            "get": _op(
                "sandboxReadClock",
                "The bank's business clock",
                SIGNING,
                {**_ok("200", _ref("Clock")), **COMMON_ERRORS},
            ),
            "post": _op(
                "sandboxAdvanceClock",
                "Move the business clock forward",
                sandbox_headers,
                {**_ok("200", _ref("Clock")), **COMMON_ERRORS},
                requestBody=_json_body(_obj(["advanceSeconds"], advanceSeconds={"type": "integer", "minimum": 0})),
            ),
        },
    }
    for extension in PATH_EXTENSIONS:
        paths.update(extension())
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Sandkasse Bank XS2A sandbox",
            "version": "1.21.21",
            "description": "Sandbox bank of the TPP portal: account information, consents, SCA and mock data.",
        },
        "servers": [{"url": base_url}],
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }


def document(request: HttpRequest) -> JsonResponse:
    return JsonResponse(build(settings.BANK_SIM_PUBLIC_URL + settings.BANK_SIM_BASE_PATH))
