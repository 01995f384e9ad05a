"""The client against a local scripted bank: what goes over the wire, and what the caller gets back."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import uuid
from base64 import b64encode
from datetime import date
from decimal import Decimal

import pytest

from tests.bankfake import Answer, Received, check_signature
from tests.xs2a.server import LocalBank
from xs2a import errors, models, signing
from xs2a.client import DEFAULT_ACCEPT_FIX
from xs2a.core import encode_json
from xs2a.psu import PsuContext
from xs2a.services.payments import initiation_bytes

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"
PRESENT = PsuContext(psu_id=PSU_ID, ip_address="198.51.100.7", user_agent="Firefox/140")
ABSENT = PsuContext(psu_id=PSU_ID)


def _payment() -> models.PaymentInitiation:
    return models.PaymentInitiation(
        instructed_amount=models.Amount(Decimal("150000.00"), "NOK"),
        creditor_name="Nordlys Handel AB",
        creditor_account=models.AccountReference(iban="SE4550000000058398257466", currency="SEK"),
        debtor_account=models.AccountReference(bban="12345678903", currency="NOK"),
        creditor_agent="ESSESESS",
        creditor_address=models.Address(country="SE", city="Malmö"),
        remittance_information_unstructured="Faktura 2026-114",
        regulatory_reporting_code="14",
        regulatory_reporting_information="Kjøp av varer",
        requested_execution_date=date(2026, 3, 5),
    )


CREATED = {
    "paymentId": "enc!!Z78gcpH6=",
    "transactionStatus": "RCVD",
    "transactionFees": {"amount": "0.00", "currency": "NOK"},
    "transactionFeeIndicator": True,
    "futureField": {"kept": True},
    "_links": {
        "self": {"href": "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z78gcpH6=", "verbs": ["GET"]},
        "status": {
            "href": "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z78gcpH6=/status",
            "verbs": ["GET"],
        },
        "startAuthorisation": {
            "href": "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z78gcpH6=/authorisations",
            "verbs": ["POST"],
        },
    },
}


def test_payment_initiation_sends_a_signed_exact_body_with_every_required_header(bank, client, test_pki):
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", Answer(201, CREATED))

    result = client.payments.initiate(_payment(), psu=PRESENT, allow_logical_duplicate=False)

    (sent,) = bank.received
    assert sent.target == "/v1/payments/norwegian-cross-border-credit-transfers?allowLogicalDuplicate=false"
    body = json.loads(sent.body)
    assert body["instructedAmount"] == {"amount": "150000.00", "currency": "NOK"}
    assert body["requestedExecutionDate"] == "2026-03-05"
    assert body["creditorAddress"] == {"city": "Malmö", "country": "SE"}
    assert b" " not in sent.body.replace(b"Nordlys Handel AB", b"").replace(b"Faktura 2026-114", b"").replace(
        "Kjøp av varer".encode(), b""
    ), "compact JSON: no whitespace the bank did not see hashed"
    assert sent.headers["digest"] == "SHA-256=" + b64encode(hashlib.sha256(sent.body).digest()).decode()
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["psu-id"] == PSU_ID
    assert sent.headers["psu-ip-address"] == "198.51.100.7"
    assert sent.headers["psu-user-agent"] == "Firefox/140"
    assert sent.headers["tpp-redirect-uri"] == "https://portal.example/bank/callback"
    assert sent.headers["x-accept-fix"] == ",".join(DEFAULT_ACCEPT_FIX)
    assert len(DEFAULT_ACCEPT_FIX) == 4
    assert uuid.UUID(sent.headers["tpp-session-id"]) and uuid.UUID(sent.headers["x-request-id"])
    assert sent.headers["date"].endswith(" GMT")
    assert check_signature(sent, test_pki.tpp.certificate) == [
        "(request-target)",
        "date",
        "digest",
        "x-request-id",
        "psu-id",
        "tpp-redirect-uri",
    ]

    assert result.payment_id == "enc!!Z78gcpH6="
    assert result.transaction_status == "RCVD"
    assert result.transaction_fees == models.Amount(Decimal("0.00"), "NOK")
    assert isinstance(result.transaction_fees.amount, Decimal)
    assert result.extra == {"futureField": {"kept": True}}
    assert result.request_id == sent.headers["x-request-id"]
    assert result.tpp_session_id == sent.headers["tpp-session-id"]


def test_an_initiation_answer_that_starts_the_approval_itself_is_read_with_its_sca_status(bank, client):
    """A bank may start SCA with the initiation (scaRedirect and scaStatus in the 201) or exempt the payment
    (scaStatus exempted, no scaRedirect): the answer says which."""
    links = {k: v for k, v in CREATED["_links"].items() if k != "startAuthorisation"}
    started = {
        **CREATED,
        "scaStatus": "started",
        "_links": {**links, "scaRedirect": {"href": "https://bank.example/sca?s=2", "verbs": ["GET"]}},
    }
    exempted = {**CREATED, "transactionStatus": "PDNG", "scaStatus": "exempted", "_links": links}
    path = "/v1/payments/norwegian-cross-border-credit-transfers"
    bank.add("POST", path, Answer(201, started))
    bank.add("POST", path, Answer(201, exempted))

    first = client.payments.initiate(_payment(), psu=PRESENT)
    second = client.payments.initiate(_payment(), psu=PRESENT)

    assert first.sca_status == "started" and first.sca_redirect == "https://bank.example/sca?s=2"
    assert first.start_authorisation is None
    assert second.sca_status == "exempted" and second.sca_redirect is None
    assert second.transaction_status == "PDNG"
    assert models.PaymentInitiationResponse.from_json(CREATED).sca_status is None
    assert "scaStatus" not in first.extra


def test_payment_initiation_needs_a_present_and_identified_psu(bank, client):
    with pytest.raises(ValueError, match="PSU present"):
        client.payments.initiate(_payment(), psu=ABSENT)
    with pytest.raises(ValueError, match="PSU-ID or X-PSU-IDENTITY"):
        client.payments.initiate(_payment(), psu=PsuContext(ip_address="10.0.0.1"))
    with pytest.raises(ValueError, match="unknown payment product"):
        client.payments.initiate(_payment(), psu=PRESENT, product="sepa-credit-transfers")
    assert bank.received == []


def test_the_bytes_of_a_typed_payment_are_sent_as_they_are(bank, client):
    """The portal keeps initiation_bytes of its typed body and sends those bytes, the first time and again."""
    path = "/v1/payments/norwegian-domestic-credit-transfers"
    bank.add("POST", path, Answer(201, CREATED))
    bank.add("POST", path, Answer(201, CREATED))
    payment = dataclasses.replace(
        _payment(),
        remittance_information_structured_array=[models.StructuredRemittance("12345678903", "KID")],
    )
    raw = initiation_bytes(payment)

    client.payments.initiate(raw, psu=PRESENT, product="norwegian-domestic-credit-transfers")
    client.payments.initiate(payment, psu=PRESENT, product="norwegian-domestic-credit-transfers")

    by_bytes, by_record = bank.received
    assert by_bytes.body == raw == by_record.body == encode_json(payment.to_json())
    body = json.loads(raw)
    assert list(body)[6:8] == ["remittanceInformationUnstructured", "remittanceInformationStructuredArray"]
    assert body["remittanceInformationStructuredArray"] == [{"reference": "12345678903", "referenceType": "KID"}]
    assert models.PaymentInitiation.from_json(body) == payment  # read back, the same record


def test_bytes_that_are_not_a_json_object_are_not_sent(bank, client):
    for raw in (b"", b"[1]", b"{", "{}".encode("utf-16")):
        with pytest.raises(errors.InvalidRequestError):
            client.payments.initiate(raw, psu=PRESENT)
    assert bank.received == []


def test_an_unreadable_structured_remittance_is_kept_raw_not_refused():
    payment = models.PaymentInitiation.from_json(
        {
            "instructedAmount": {"amount": "1.00", "currency": "NOK"},
            "creditorName": "Fjordkraft AS",
            "creditorAccount": {"bban": "15030000002"},
            "debtorAccount": {"bban": "12345678903"},
            "remittanceInformationStructuredArray": [{"referenceType": "KID"}],
        }
    )
    assert payment.remittance_information_structured_array == []
    assert payment.unread == {"remittanceInformationStructuredArray": [{"referenceType": "KID"}]}


def test_single_sca_payment_with_x_psu_identity_and_domestic_product(bank, client):
    bank.add("POST", "/v1/payments/norwegian-domestic-credit-transfers", Answer(201, CREATED))
    psu = PsuContext(identity="13039319955", context="PRIVATE", ip_address="2001:db8::1")
    client.payments.initiate(_payment(), psu=psu, product="norwegian-domestic-credit-transfers")
    (sent,) = bank.received
    assert sent.headers["x-psu-identity"] == "13039319955"
    assert sent.headers["psu-context"] == "PRIVATE"
    assert "psu-id" not in sent.headers


def test_floats_and_unprocessable_characters_never_reach_the_bank(bank, client):
    with pytest.raises(TypeError, match="Decimal"):
        models.Amount(1.5, "NOK")  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidRequestError, match="float"):
        client.request("POST", "/v1/sandbox/customers", json_body={"amount": 1.5})
    with pytest.raises(errors.InvalidRequestError, match="U\\+1F600"):
        client.request("POST", "/v1/sandbox/customers", json_body={"customerName": "Glad \U0001f600"})
    assert bank.received == []


def test_authorisation_status_details_and_deletion_follow_links(bank, client):
    base = "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z78gcpH6="
    bank.add(
        "POST",
        base + "/authorisations",
        Answer(
            201,
            {
                "scaStatus": "started",
                "_links": {"scaRedirect": {"href": "https://bank.example/sca?state=1", "verbs": ["GET"]}},
            },
        ),
    )
    bank.add("GET", base + "/status", Answer(200, {"transactionStatus": "ACCP", "fundsAvailable": False}))
    bank.add(
        "GET",
        base,
        Answer(200, {**_payment().to_json(), "paymentId": "enc!!Z78gcpH6=", "transactionStatus": "PDNG"}),
    )
    bank.add("DELETE", base, Answer(200, {"transactionStatus": "CANC"}))

    created = models.PaymentInitiationResponse.from_json(CREATED)
    authorisation = client.payments.start_authorisation(href=created.start_authorisation, psu=PRESENT)
    status = client.payments.status(href=created.status_link, psu=ABSENT)
    details = client.payments.get(payment_id="enc!!Z78gcpH6=")
    cancelled = client.payments.delete(payment_id="enc!!Z78gcpH6=")

    assert authorisation.sca_redirect == "https://bank.example/sca?state=1"
    assert authorisation.sca_status == "started"
    assert status.transaction_status == "ACCP" and status.funds_available is False
    assert details.payment.instructed_amount.amount == Decimal("150000.00")
    assert details.payment.creditor_address == models.Address(country="SE", city="Malmö")
    assert details.transaction_status == "PDNG"
    assert cancelled.transaction_status == "CANC"
    post, get_status, _details, _delete = bank.received
    assert (
        post.body == b""
        and post.headers["digest"] == "SHA-256=" + b64encode(hashlib.sha256(b"").digest()).decode()
    )
    assert get_status.target == base + "/status" and "digest" not in get_status.headers
    assert "psu-ip-address" not in get_status.headers, "PSU absent: no PSU-IP-Address"
    assert [r.method for r in bank.received] == ["POST", "GET", "GET", "DELETE"]


def test_accounts_balances_and_card_accounts_are_typed_with_decimals(bank, client):
    bank.add(
        "GET",
        "/v1/accounts",
        Answer(
            200,
            {
                "accounts": [
                    {
                        "resourceId": "enc!!acc=",
                        "iban": "NO9386011117947",
                        "bban": "86011117947",
                        "currency": "NOK",
                        "name": "Brukskonto",
                        "product": "Konto",
                        "cashAccountType": "CACC",
                        "bic": "DNBANOKK",
                        "ownerName": "kept",
                        "_links": {"balances": {"href": "/v1/accounts/enc!!acc=/balances", "verbs": ["GET"]}},
                    }
                ]
            },
        ),
    )
    bank.add(
        "GET",
        "/v1/accounts/enc!!acc=/balances",
        Answer(
            200,
            {
                "account": {"iban": "NO9386011117947", "currency": "NOK"},
                "balances": [
                    {
                        "balanceAmount": {"amount": "-12.50", "currency": "NOK"},
                        "balanceType": "interimAvailable",
                        "referenceDate": "2026-03-01",
                    }
                ],
            },
        ),
    )
    bank.add(
        "GET",
        "/v1/card-accounts",
        Answer(
            200,
            {
                "cardAccounts": [
                    {
                        "resourceId": "card1",
                        "maskedPan": "5555********1234",
                        "currency": "NOK",
                        "creditLimit": {"amount": "20000.00", "currency": "NOK"},
                    }
                ]
            },
        ),
    )

    (account,) = client.accounts.list(psu=PRESENT)
    balances = client.accounts.balances(account.resource_id, psu=ABSENT)
    (card,) = client.card_accounts.list(psu=PRESENT)

    assert account.iban == "NO9386011117947" and account.extra == {"ownerName": "kept"}
    assert account.links["balances"].verbs == ("GET",)
    assert balances.balances[0].balance_amount.amount == Decimal("-12.50")
    assert balances.balances[0].reference_date == date(2026, 3, 1)
    assert card.credit_limit == models.Amount(Decimal("20000.00"), "NOK")
    assert bank.received[0].target == "/v1/accounts?withBalance=false"
    assert bank.received[1].target == "/v1/accounts/enc!!acc=/balances"


def _transaction(tid, amount, *, pending=False):
    item = {"transactionAmount": {"amount": amount, "currency": "NOK"}, "bookingDate": "2026-02-27"}
    if not pending:
        item["transactionId"] = tid
    else:
        item["remittanceInformationUnstructured"] = tid
    return item


def test_transactions_follow_next_links_and_keep_repeated_pending_items_once(bank, client):
    path = "/v1/accounts/enc!!a=/transactions"
    pending = [_transaction("reserved 1", "-99.00", pending=True)]
    bank.add(
        "GET",
        path,
        lambda r: Answer(
            200,
            {
                "account": {"iban": "NO9386011117947", "currency": "NOK"},
                "transactions": {
                    "booked": [_transaction("t1", "-1.00"), _transaction("t2", "2.00")]
                    if "offset=2" not in r.query
                    else [_transaction("t3", "-3.10")],
                    "pending": pending,
                    "_links": {"next": {"href": path + "?bookingStatus=both&limit=2&offset=2", "verbs": ["GET"]}}
                    if "offset=2" not in r.query
                    else {},
                },
            },
        ),
    )
    result = client.accounts.transactions(
        "enc!!a=",
        psu=PRESENT,
        booking_status="both",
        date_from=date(2026, 1, 1),
        date_to=date(2026, 3, 1),
        limit=2,
    )
    assert [t.transaction_id for t in result.booked] == ["t1", "t2", "t3"]
    assert [t.transaction_amount.amount for t in result.booked] == [
        Decimal("-1.00"),
        Decimal("2.00"),
        Decimal("-3.10"),
    ]
    assert len(result.pending) == 1
    assert result.pages == 2
    first, second = bank.received
    assert first.target == path + "?bookingStatus=both&dateFrom=2026-01-01&dateTo=2026-03-01&limit=2"
    assert second.target == path + "?bookingStatus=both&limit=2&offset=2"
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


def test_a_next_link_that_loops_is_refused(bank, client):
    path = "/v1/accounts/a/transactions"
    page = {"transactions": {"booked": [], "_links": {"next": {"href": path + "?offset=0"}}}}
    bank.add("GET", path, Answer(200, page))
    with pytest.raises(errors.UnexpectedResponseError, match="repeats"):
        client.accounts.transactions("a", psu=ABSENT)
    assert len(bank.received) == 2


def test_transaction_details_users_agreements_and_consents(bank, client):
    bank.add(
        "GET",
        "/v1/accounts/a/transactions/t%2F1",
        Answer(
            200,
            {
                "transactionsDetails": {
                    **_transaction("t/1", "5.00"),
                    "additionalInformationProprietary1": "x",
                    "kid": "1234567890",
                }
            },
        ),
    )
    bank.add(
        "GET",
        "/v1/users",
        Answer(200, {"_links": {"scaRedirect": {"href": "https://bank.example/sca?u=1", "verbs": ["GET"]}}}),
    )
    bank.add(
        "GET",
        "/v1/agreements",
        Answer(200, {"agreements": [{"id": "ag-1", "name": "Firma AS", "engagements": ["a"], "_links": {}}]}),
    )
    bank.add(
        "POST",
        "/v1/bank-offered-consents",
        Answer(
            201,
            {
                "_links": {
                    "scaRedirect": {"href": "https://bank.example/sca?c=1&context=PRIVATE", "verbs": ["GET"]}
                }
            },
        ),
    )

    details = client.accounts.transaction_details("a", "t/1", psu=PRESENT)
    users = client.consents.users(psu=PsuContext(ip_address="198.51.100.7"))
    (agreement,) = client.consents.agreements(psu=ABSENT)
    consent = client.consents.start(psu=PsuContext(psu_id=PSU_ID, context="PRIVATE", ip_address="198.51.100.7"))

    assert details.transaction_id == "t/1"
    assert details.additional_information_proprietary == {"additionalInformationProprietary1": "x"}
    assert details.extra["kid"] == "1234567890"
    assert users.sca_redirect == "https://bank.example/sca?u=1"
    assert agreement.id == "ag-1" and agreement.engagements == ["a"]
    assert consent.sca_redirect.endswith("context=PRIVATE")
    assert bank.received[3].headers["psu-context"] == "PRIVATE"
    assert bank.received[3].body == b"{}"


def test_sandbox_operations(bank, client):
    customer = {
        "customerId": "c1",
        "customerNumber": "13039319955",
        "customerType": "PRIVATE",
        "customerName": "Private Customer 1",
        "agreements": [
            {
                "id": "ag",
                "name": "Privat",
                "engagements": ["a1"],
                "_links": {"self": {"href": "/x", "verbs": ["GET"]}},
            }
        ],
        "accounts": ["a1", "a2"],
        "cardAccounts": ["k1"],
        "_links": {"self": {"href": "/v1/sandbox/customers/c1", "verbs": ["GET"]}},
    }
    bank.add("GET", "/v1/sandbox/customers", Answer(200, [customer]))
    bank.add("POST", "/v1/sandbox/customers", Answer(201, customer))
    bank.add("POST", "/v1/sandbox/initialize", Answer(200, {"customers": [customer]}))
    bank.add("POST", "/v1/sandbox/accounts", Answer(201, {"resourceId": "a3", "currency": "NOK"}))
    bank.add("POST", "/v1/sandbox/agreements", Answer(201, {"id": "ag2", "name": "Firma", "engagements": []}))
    bank.add("POST", "/v1/sandbox/accounts/a1/transactions", Answer(201, _transaction("t9", "10.00")))

    (listed,) = client.sandbox.customers(with_accounts=True, with_agreements=True)
    created = client.sandbox.create_customer({"customerType": "PRIVATE", "customerName": "Ny Kunde"})
    (reset,) = client.sandbox.initialize()
    account = client.sandbox.create_account({"customerId": "c1", "currency": "NOK"})
    agreement = client.sandbox.create_agreement({"customerId": "c1"})
    mock = client.sandbox.create_mock_transaction("a1", {"amount": {"amount": "10.00", "currency": "NOK"}})

    assert listed == created == reset
    assert listed.customer_number == "13039319955" and listed.card_accounts == ["k1"]
    assert listed.agreements[0].engagements == ["a1"]
    assert account.resource_id == "a3" and agreement.id == "ag2"
    assert mock.transaction_amount.amount == Decimal("10.00")
    assert bank.received[0].target == "/v1/sandbox/customers?withAccounts=true&withAgreements=true"
    assert json.loads(bank.received[1].body) == {"customerType": "PRIVATE", "customerName": "Ny Kunde"}


def test_a_success_answer_of_the_wrong_shape_is_an_error(bank, client):
    bank.add("GET", "/v1/accounts", Answer(200, {"accounts": [{"name": "no resourceId"}]}))
    with pytest.raises(errors.UnexpectedResponseError, match="resourceId"):
        client.accounts.list(psu=ABSENT)
    bank.add("GET", "/v1/users", Answer(200, b"<html>", {"Content-Type": "text/html"}))
    with pytest.raises(errors.UnexpectedResponseError, match="not JSON"):
        client.consents.users()


# --- response signatures ----------------------------------------------------------------------------------


def _signed_answer(test_pki, body: dict, *, tamper: bool = False):
    """A responder answering as the bank signs: Date, Digest and the request's X-Request-ID (no request target)."""

    def answer(received: Received) -> Answer:
        data = json.dumps(body).encode()
        headers = {
            "Date": received.headers["date"],
            "X-Request-ID": received.headers["x-request-id"],
            "Digest": signing.digest_header(data),
        }
        names = ["date", "digest", "x-request-id"]
        seal = test_pki.bank_seal
        value = signing.signature_for(names, method="", target="", headers=headers, key=seal.key)
        headers["Signature"] = signing.signature_header(
            key_id=signing.key_id(seal.certificate), header_names=names, signature=value
        )
        return Answer(200, (data + b" ") if tamper else data, headers)

    return answer


def test_signed_responses_are_verified_against_the_configured_bank_certificate(bank, make_client, test_pki):
    client = make_client(bank.base_url, response_certificate=test_pki.bank_seal.certificate)
    bank.add(
        "GET",
        "/v1/users",
        _signed_answer(test_pki, {"_links": {}}),
        _signed_answer(test_pki, {"_links": {}}, tamper=True),
    )
    assert client.consents.users().links == {}
    with pytest.raises(errors.ResponseSignatureError, match="Digest"):
        client.consents.users()

    other = make_client(bank.base_url, response_certificate=test_pki.tpp.certificate)
    with pytest.raises(errors.ResponseSignatureError, match="keyId"):
        other.consents.users()


def test_an_unsigned_answer_is_refused_when_the_banks_seal_is_configured(bank, make_client, test_pki):
    records = []
    client = make_client(
        bank.base_url, audit_hook=records.append, response_certificate=test_pki.bank_seal.certificate
    )
    bank.add("GET", "/v1/users", Answer(200, {"_links": {}}))
    bank.add("GET", "/v1/accounts", Answer(404, {"tppMessages": [{"category": "ERROR", "code": "NOT_FOUND"}]}))

    with pytest.raises(errors.ResponseSignatureError, match="no Signature") as unsigned:
        client.consents.users()
    with pytest.raises(errors.ResponseSignatureError, match="no Signature"):
        client.accounts.list(psu=ABSENT)  # an unsigned refusal is not believed either

    assert unsigned.value.status == 200 and unsigned.value.request_id == records[0].request_id
    assert [(r.status, r.error) for r in records] == [
        (200, "ResponseSignatureError"),
        (404, "ResponseSignatureError"),
    ]
    # Without a configured seal, the same answers are read as they are.
    plain = make_client(bank.base_url)
    assert plain.consents.users().links == {}
    with pytest.raises(errors.ResourceUnknownError):
        plain.accounts.list(psu=ABSENT)


def test_base_address_with_a_path_prefix(test_pki, make_client):
    with LocalBank(prefix="/api/psd2") as bank:
        client = make_client(bank.base_url + "/")
        path = "/v1/accounts/enc!!x=/transactions"
        bank.add(
            "GET",
            path,
            lambda r: Answer(
                200,
                {"transactions": {"booked": [], "_links": {"next": {"href": path + "?offset=1"}}}}
                if "offset=1" not in r.query
                else {"transactions": {"booked": [_transaction("z", "1.00")]}},
            ),
        )
        result = client.accounts.transactions("enc!!x=", psu=ABSENT)
        assert [r.target for r in bank.received] == [
            "/api/psd2/v1/accounts/enc!!x=/transactions?bookingStatus=both",
            "/api/psd2/v1/accounts/enc!!x=/transactions?offset=1",
        ]
        assert [t.transaction_id for t in result.booked] == ["z"]
        check_signature(bank.received[1], test_pki.tpp.certificate)


# --- TPP-Redirect-Preferred ------------------------------------------------------------------------------------


def test_redirect_preferred_is_sent_only_when_asked(bank, client):
    base = "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z78gcpH6="
    sca = {"_links": {"scaRedirect": {"href": "https://bank.example/sca", "verbs": ["GET"]}}}
    bank.add("POST", "/v1/bank-offered-consents", Answer(201, sca))
    bank.add("GET", "/v1/users", Answer(200, sca))
    bank.add("POST", "/v1/payments/norwegian-cross-border-credit-transfers", Answer(201, CREATED))
    bank.add("POST", base + "/authorisations", Answer(201, {"scaStatus": "started", **sca}))
    bank.add("GET", "/v1/accounts", Answer(200, {"accounts": []}))
    in_app = PsuContext(psu_id=PSU_ID, ip_address="198.51.100.7", redirect_preferred=False)

    client.consents.start(psu=PRESENT)  # not asked: not sent
    client.consents.start(psu=PRESENT, redirect_preferred=False)  # the argument of the SCA-starting call
    client.consents.users(psu=PsuContext(ip_address="198.51.100.7"), redirect_preferred=True)
    client.payments.initiate(_payment(), psu=PRESENT, redirect_preferred=False)
    client.payments.start_authorisation(payment_id="enc!!Z78gcpH6=", psu=in_app)  # through the PsuContext
    client.payments.start_authorisation(
        payment_id="enc!!Z78gcpH6=", psu=in_app, redirect_preferred=True
    )  # argument wins
    client.accounts.list(psu=ABSENT)

    sent = [r.headers.get("tpp-redirect-preferred") for r in bank.received]
    assert sent == [None, "false", "true", "false", "false", "true", None]
    with pytest.raises(errors.InvalidRequestError):
        PsuContext(redirect_preferred="no")  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidRequestError):
        client.consents.start(psu=PRESENT, redirect_preferred="false")  # type: ignore[arg-type]
    assert len(bank.received) == 7
