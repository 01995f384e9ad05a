"""Payment initiation through signed requests: the 201 answer, every validation rule, headers, duplicates,
idempotent replays and single SCA (spec 2.1-2.7, 4.1, 8)."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest
from cryptography import x509
from django.test import Client

from bank_simulator.models import PsuIdentity
from bank_simulator.pis.models import Payment, TransactionStatus
from devtools import pki
from tests.bank_simulator.conftest import (
    CORPORATE_1,
    PRIVATE_1,
    PRIVATE_2,
    Signer,
    error_code,
    error_text,
    resent_date,
)
from tests.bank_simulator.pis.helpers import (
    CREDITOR_IBAN,
    CROSS,
    DOMESTIC,
    NO_CREDITOR_BBAN,
    PINNED,
    account,
    approve,
    body,
    identify,
    initiate,
    pin_clock,
    start_authorisation,
)


@pytest.fixture
def payer(bank):
    """Private Customer 1 is known to the PISP (PSU-ID through /v1/users); the clock is pinned."""
    pin_clock()
    identify(bank, PRIVATE_1)
    return bank


@pytest.fixture
def main_account(db):
    return account(PRIVATE_1, "Brukskonto")


def paths_of(response) -> list[str]:
    return [m.get("path") for m in response.json()["tppMessages"]]


def test_initiation_answers_201_with_fees_and_links(payer, main_account):
    response = initiate(payer, body(main_account))
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["transactionStatus"] == "RCVD"
    assert "!" in data["paymentId"] and "=" in data["paymentId"]
    # 50 NOK cross-border fee + 0.25 % of 1250 EUR at 11.73 NOK (14 662.50 NOK) = 36.66 NOK conversion fee.
    assert data["transactionFees"] == {"amount": "86.66", "currency": "NOK"}
    assert data["transactionFeeIndicator"] is True
    links = data["_links"]
    assert links["self"]["verbs"] == ["GET", "DELETE"]
    assert links["status"]["verbs"] == ["GET"]
    assert links["startAuthorisation"]["verbs"] == ["POST"]
    assert links["startAuthorisation"]["href"].endswith("/authorisations")
    # The self link (with '!' and '=' in the path) returns the submitted fields plus paymentId and _links.
    details = payer.get(links["self"]["href"])
    assert details.status_code == 200, details.content
    got = details.json()
    assert got["paymentId"] == data["paymentId"]
    assert got["instructedAmount"] == {"amount": "1250.00", "currency": "EUR"}
    assert got["creditorName"] == "Müller Maschinenbau GmbH"
    assert got["creditorAccount"] == {"iban": CREDITOR_IBAN, "currency": "EUR"}
    assert got["creditorAddress"]["country"] == "DE"
    assert got["transactionStatus"] == "RCVD"
    assert set(got["_links"]) == {"self", "status", "startAuthorisation"}
    status = payer.get(links["status"]["href"])
    assert status.json() == {"transactionStatus": "RCVD"}


def test_same_currency_domestic_payment_has_no_fee(payer, main_account):
    data = body(
        main_account,
        instructedAmount={"amount": "499", "currency": "NOK"},
        creditorAccount={"bban": NO_CREDITOR_BBAN, "currency": "NOK"},
        creditorAgent=None,
        creditorAddress=None,
        purposeCode=None,
    )
    response = initiate(payer, data, path=DOMESTIC)
    assert response.status_code == 201, response.content
    assert response.json()["transactionFees"] == {"amount": "0.00", "currency": "NOK"}
    assert response.json()["transactionFeeIndicator"] is False
    # The same NOK payment cross-border costs the cross-border fee only (no conversion).
    data["creditorAgent"] = "DNBANOKKXXX"
    response = initiate(payer, data, path=CROSS, query="?allowLogicalDuplicate=true")
    assert response.status_code == 201, response.content
    assert response.json()["transactionFees"] == {"amount": "50.00", "currency": "NOK"}


def test_unknown_product_is_404_product_unknown(payer, main_account):
    response = initiate(payer, body(main_account), path="/v1/payments/sepa-credit-transfers")
    assert response.status_code == 404
    assert error_code(response) == "PRODUCT_UNKNOWN"


LONG = "x" * 71


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"instructedAmount": None}, "instructedAmount"),
        ({"instructedAmount": {"currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "10.00"}}, "instructedAmount.currency"),
        ({"instructedAmount": {"amount": 10, "currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "1,5", "currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "-5.00", "currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "0.00", "currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "1e3", "currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "10.123", "currency": "EUR"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "10.5", "currency": "JPY"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "10.1234", "currency": "KWD"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "1" * 14, "currency": "JPY"}}, "instructedAmount.amount"),
        ({"instructedAmount": {"amount": "10.00", "currency": "XYZ"}}, "instructedAmount.currency"),
        ({"instructedAmount": {"amount": "10.00", "currency": "eur"}}, "instructedAmount.currency"),
        ({"creditorName": None}, "creditorName"),
        ({"creditorName": LONG}, "creditorName"),
        ({"creditorName": "   "}, "creditorName"),
        ({"creditorAccount": None}, "creditorAccount"),
        ({"creditorAccount": {"currency": "EUR"}}, "creditorAccount"),
        ({"creditorAccount": {"iban": CREDITOR_IBAN}}, "creditorAccount.currency"),
        ({"creditorAccount": {"iban": "DE89370400440532013001", "currency": "EUR"}}, "creditorAccount.iban"),
        ({"creditorAccount": {"iban": "DE89 3704 0044 0532 0130 00", "currency": "EUR"}}, "creditorAccount.iban"),
        ({"creditorAccount": {"iban": "X" * 35, "currency": "EUR"}}, "creditorAccount.iban"),
        ({"creditorAccount": {"bban": "1" * 31, "currency": "EUR"}}, "creditorAccount.bban"),
        ({"creditorAccount": {"bban": "12-34", "currency": "EUR"}}, "creditorAccount.bban"),
        ({"creditorAccount": {"bban": "123456789", "currency": "EUR"}, "creditorAgent": None}, "creditorAgent"),
        ({"creditorAgent": "NOTABIC"}, "creditorAgent"),
        ({"debtorAccount": None}, "debtorAccount"),
        ({"creditorAddress": {"street": "Main"}}, "creditorAddress.country"),
        ({"creditorAddress": {"country": "XX"}}, "creditorAddress.country"),
        ({"creditorAddress": {"country": "NOR"}}, "creditorAddress.country"),
        ({"creditorAddress": {"country": "NO", "street": LONG}}, "creditorAddress.street"),
        ({"creditorAddress": {"country": "NO", "city": 5}}, "creditorAddress.city"),
        ({"remittanceInformationUnstructured": ""}, "remittanceInformationUnstructured"),
        ({"remittanceInformationUnstructured": "r" * 141}, "remittanceInformationUnstructured"),
        ({"purposeCode": "GDDS"}, "purposeCode"),
        ({"requestedExecutionDate": "07.01.2030"}, "requestedExecutionDate"),
        ({"requestedExecutionDate": "2030-02-30"}, "requestedExecutionDate"),
        ({"regulatoryReportingCode": "99"}, "regulatoryReportingCode"),
        ({"regulatoryReportingInformation": "i" * 141}, "regulatoryReportingInformation"),
    ],
)
def test_each_rule_is_a_400_format_error_naming_the_field(payer, main_account, change, path):
    response = initiate(payer, body(main_account, **change))
    assert response.status_code == 400, response.content
    assert error_code(response) == "FORMAT_ERROR"
    assert path in paths_of(response), response.json()
    assert not Payment.objects.exists()  # nothing kept of a refused initiation


def test_every_violation_of_a_body_is_reported(payer, main_account):
    data = body(main_account, creditorName=LONG, purposeCode="XXXX", creditorAddress={"country": "ZZ"})
    response = initiate(payer, data)
    assert response.status_code == 400
    assert {"creditorName", "purposeCode", "creditorAddress.country"} <= set(paths_of(response))


def test_body_must_be_a_json_object(payer):
    for raw in ("[]", '"x"', "null"):
        response = initiate(payer, raw)
        assert response.status_code == 400
        assert error_code(response) == "FORMAT_ERROR"
    response = initiate(payer, "{not json")
    assert response.status_code == 400 and paths_of(response) == ["body"]


def test_minor_units_follow_iso_4217_and_the_documented_table(payer, main_account):
    ok = [("10", "JPY"), ("10.5", "EUR"), ("10.123", "KWD"), ("7.25", "GGP"), ("1000", "BYR"), ("1.12345", "XDR")]
    for amount, currency in ok:
        data = body(main_account, instructedAmount={"amount": amount, "currency": currency})
        response = initiate(payer, data, query="?allowLogicalDuplicate=true")
        assert response.status_code == 201, (amount, currency, response.content)
    response = initiate(payer, body(main_account, instructedAmount={"amount": "1000.5", "currency": "BYR"}))
    assert response.status_code == 400 and "BYR amounts have at most 0" in error_text(response)


def test_regulatory_reporting_required_from_100000_nok(payer, main_account):
    def attempt(amount: str, currency: str, **extra):
        data = body(main_account, instructedAmount={"amount": amount, "currency": currency}, **extra)
        return initiate(payer, data, query="?allowLogicalDuplicate=true")

    below = attempt("99999.99", "NOK")
    assert below.status_code == 201, below.content
    at = attempt("100000.00", "NOK")
    assert at.status_code == 400
    assert set(paths_of(at)) == {"regulatoryReportingCode", "regulatoryReportingInformation"}
    # Other currencies at the simulator's fixed rate: 8525.58 EUR x 11.73 = 100 005.05 NOK.
    assert attempt("8525.58", "EUR").status_code == 400
    assert attempt("8525.00", "EUR").status_code == 201  # 99 998.25 NOK
    complete = attempt(
        "100000.00", "NOK", regulatoryReportingCode="14", regulatoryReportingInformation="Purchase of machinery"
    )
    assert complete.status_code == 201, complete.content
    only_code = attempt("250000", "NOK", regulatoryReportingCode="14")
    assert paths_of(only_code) == ["regulatoryReportingInformation"]


def test_domestic_product_rules(payer, main_account):
    nok = {"amount": "100000.00", "currency": "NOK"}
    good = body(
        main_account,
        instructedAmount=nok,
        creditorAccount={"bban": NO_CREDITOR_BBAN, "currency": "NOK"},
        creditorAgent=None,
    )
    response = initiate(payer, good, path=DOMESTIC)
    assert response.status_code == 201, response.content  # no creditorAgent, no regulatory reporting at home
    eur = initiate(payer, {**good, "instructedAmount": {"amount": "10.00", "currency": "EUR"}}, path=DOMESTIC)
    assert eur.status_code == 400 and paths_of(eur) == ["instructedAmount.currency"]
    foreign = initiate(
        payer, {**good, "creditorAccount": {"iban": CREDITOR_IBAN, "currency": "NOK"}}, path=DOMESTIC
    )
    assert foreign.status_code == 400 and paths_of(foreign) == ["creditorAccount"]
    bad_check_digit = initiate(
        payer, {**good, "creditorAccount": {"bban": "12345678901", "currency": "NOK"}}, path=DOMESTIC
    )
    assert bad_check_digit.status_code == 400


def test_execution_date_in_the_past_is_execution_date_invalid(payer, main_account):
    yesterday = initiate(payer, body(main_account, requestedExecutionDate="2030-01-06"))
    assert yesterday.status_code == 400
    assert error_code(yesterday) == "EXECUTION_DATE_INVALID"
    assert paths_of(yesterday) == ["requestedExecutionDate"]
    today = initiate(payer, body(main_account, requestedExecutionDate=PINNED.date().isoformat()))
    assert today.status_code == 201, today.content


@pytest.mark.parametrize("header", ["PSU-IP-Address", "x-accept-fix", "TPP-Session-ID", "TPP-Redirect-URI"])
def test_required_headers(payer, main_account, header):
    response = payer.post(
        CROSS,
        json.dumps(body(main_account)),
        headers={"x-accept-fix": "amount-as-string", header: None},  # type: ignore[dict-item]
    )
    assert response.status_code == 400
    assert error_code(response) == "HTTP_HEADER_REQUIRED"
    assert paths_of(response) == [header]


def test_psu_id_is_required_and_must_be_known(bank, main_account):
    pin_clock()
    missing = initiate(bank, body(main_account))
    assert missing.status_code == 400 and paths_of(missing) == ["PSU-ID"]
    assert error_code(missing) == "HTTP_HEADER_REQUIRED"
    bank.psu_id = str(uuid.uuid4())
    unknown = initiate(bank, body(main_account))
    assert unknown.status_code == 401 and error_code(unknown) == "PSU_CREDENTIALS_INVALID"


def test_payments_need_the_psp_pi_role(payer, main_account, dev_ca):
    cert = pki.issue_qseal(dev_ca, roles=("PSP_AI",))
    response = payer.post(
        CROSS,
        json.dumps(body(main_account)),
        headers={"x-accept-fix": "amount-as-string"},
        signer=Signer(cert.key, cert.certificate),
    )
    assert response.status_code == 400
    assert "PSD2 role PSP_PI is required" in error_text(response)


def test_debtor_account_must_be_the_psus_at_this_bank(payer, main_account):
    stranger = initiate(payer, body(main_account, debtorAccount={"iban": "NO9386011117947", "currency": "NOK"}))
    assert stranger.status_code == 400 and error_code(stranger) == "RESOURCE_UNKNOWN"
    other = account(PRIVATE_2, "BSU")
    not_theirs = initiate(payer, body(main_account, debtorAccount={"iban": other.iban, "currency": "NOK"}))
    assert not_theirs.status_code == 403 and paths_of(not_theirs) == ["debtorAccount"]
    wrong_currency = initiate(
        payer, body(main_account, debtorAccount={"iban": main_account.iban, "currency": "EUR"})
    )
    assert wrong_currency.status_code == 400 and paths_of(wrong_currency) == ["debtorAccount.currency"]


def test_logical_duplicates_are_refused_unless_allowed(payer, main_account):
    assert initiate(payer, body(main_account)).status_code == 201
    duplicate = initiate(payer, body(main_account))
    assert duplicate.status_code == 409
    assert error_code(duplicate) == "CONFLICT" and paths_of(duplicate) == ["allowLogicalDuplicate"]
    assert initiate(payer, body(main_account), query="?allowLogicalDuplicate=true").status_code == 201
    other_amount = body(main_account, instructedAmount={"amount": "1250.01", "currency": "EUR"})
    assert initiate(payer, other_amount).status_code == 201
    later = body(main_account, requestedExecutionDate="2030-01-08")
    assert initiate(payer, later).status_code == 201
    assert initiate(payer, body(main_account), query="?allowLogicalDuplicate=yes").status_code == 400
    # A cancelled payment is no longer a duplicate.
    for payment in Payment.objects.filter(execution_date=PINNED.date()):
        payment.status = TransactionStatus.CANC
        payment.save(update_fields=["status"])
    assert initiate(payer, body(main_account)).status_code == 201


def test_replaying_the_same_request_id_returns_the_same_payment(payer, main_account):
    request_id = str(uuid.uuid4())
    first = initiate(payer, body(main_account), headers={"X-Request-ID": request_id})
    again = initiate(payer, body(main_account), headers={"X-Request-ID": request_id, "Date": resent_date()})
    assert first.status_code == again.status_code == 201
    assert first.json()["paymentId"] == again.json()["paymentId"]
    assert Payment.objects.count() == 1
    changed = body(main_account, instructedAmount={"amount": "1.00", "currency": "EUR"})
    conflict = initiate(payer, changed, headers={"X-Request-ID": request_id})
    assert conflict.status_code == 409 and paths_of(conflict) == ["X-Request-ID"]


def test_allow_logical_duplicate_false_or_absent_refuses_a_logical_duplicate(payer, main_account):
    """allowLogicalDuplicate absent means false: a payment like a live one (same debtor account, creditor,
    amount, currency and execution date, within 24 hours) is refused, whichever TPP request made the first."""
    first = initiate(payer, body(main_account), query="?allowLogicalDuplicate=false")
    assert first.status_code == 201
    for query in ("", "?allowLogicalDuplicate=false"):
        refused = initiate(payer, body(main_account), query=query)
        assert refused.status_code == 409, query
        assert error_code(refused) == "CONFLICT" and paths_of(refused) == ["allowLogicalDuplicate"]
        assert first.json()["paymentId"] in error_text(refused)
    assert Payment.objects.count() == 1


def test_a_repeated_request_id_is_refused_in_conflict_mode(payer, main_account, settings):
    settings.BANK_SIM_REQUEST_ID_REPLAY = "conflict"
    request_id = str(uuid.uuid4())
    first = initiate(payer, body(main_account), headers={"X-Request-ID": request_id})
    assert first.status_code == 201
    again = initiate(payer, body(main_account), headers={"X-Request-ID": request_id, "Date": resent_date()})
    assert again.status_code == 409
    assert error_code(again) == "CONFLICT" and paths_of(again) == ["X-Request-ID"]
    assert first.json()["paymentId"] in error_text(again)
    assert Payment.objects.count() == 1


def test_a_repeated_request_id_is_a_new_request_in_new_mode(payer, main_account, settings):
    settings.BANK_SIM_REQUEST_ID_REPLAY = "new"
    request_id = str(uuid.uuid4())
    first = initiate(payer, body(main_account), headers={"X-Request-ID": request_id})
    assert first.status_code == 201
    # The same body again is a logical duplicate of the first payment: refused unless allowed.
    again = initiate(payer, body(main_account), headers={"X-Request-ID": request_id, "Date": resent_date()})
    assert again.status_code == 409 and paths_of(again) == ["allowLogicalDuplicate"]
    allowed = initiate(
        payer, body(main_account), headers={"X-Request-ID": request_id}, query="?allowLogicalDuplicate=true"
    )
    assert allowed.status_code == 201
    other = body(main_account, instructedAmount={"amount": "99.00", "currency": "EUR"})
    third = initiate(payer, other, headers={"X-Request-ID": request_id})
    assert third.status_code == 201
    ids = {first.json()["paymentId"], allowed.json()["paymentId"], third.json()["paymentId"]}
    assert len(ids) == 3
    assert Payment.objects.filter(request_id=request_id).count() == 3


def test_single_sca_with_x_psu_identity(bank, main_account):
    """No PSU-ID beforehand: the PSU-ID is made, the same every time, and comes back from the SCA."""
    pin_clock()
    headers = {"X-PSU-IDENTITY": PRIVATE_1, "PSU-Context": "PRIVATE"}
    first = initiate(bank, body(main_account), headers=headers)
    assert first.status_code == 201, first.content
    psu = PsuIdentity.objects.get(customer__customer_number=PRIVATE_1)
    request_id = str(uuid.uuid4())
    second = initiate(
        bank,
        body(main_account),
        headers={**headers, "X-Request-ID": request_id},
        query="?allowLogicalDuplicate=true",
    )
    replay = initiate(
        bank,
        body(main_account),
        headers={**headers, "X-Request-ID": request_id, "Date": resent_date()},
        query="?allowLogicalDuplicate=true",
    )
    assert second.json()["paymentId"] == replay.json()["paymentId"] != first.json()["paymentId"]
    assert PsuIdentity.objects.filter(customer__customer_number=PRIVATE_1).count() == 1
    started = start_authorisation(bank, first.json())
    assert started.status_code == 201, started.content
    params = approve(started.json()["_links"]["scaRedirect"]["href"], PRIVATE_1)
    assert params["psu-id"] == str(psu.psu_id) and params["context"] == "PRIVATE"
    bank.psu_id = params["psu-id"]  # reusable afterwards
    assert initiate(bank, body(main_account), query="?allowLogicalDuplicate=true").status_code == 201


def test_single_sca_rules(bank, main_account):
    pin_clock()
    no_context = initiate(bank, body(main_account), headers={"X-PSU-IDENTITY": PRIVATE_1})
    assert no_context.status_code == 400 and paths_of(no_context) == ["PSU-Context"]
    corporate_context = initiate(
        bank, body(main_account), headers={"X-PSU-IDENTITY": PRIVATE_1, "PSU-Context": "CORPORATE"}
    )
    assert corporate_context.status_code == 400 and paths_of(corporate_context) == ["PSU-Context"]
    company = initiate(bank, body(main_account), headers={"X-PSU-IDENTITY": CORPORATE_1, "PSU-Context": "PRIVATE"})
    assert company.status_code == 400 and paths_of(company) == ["X-PSU-IDENTITY"]
    unknown = initiate(
        bank, body(main_account), headers={"X-PSU-IDENTITY": "01010112345", "PSU-Context": "PRIVATE"}
    )
    assert unknown.status_code == 401 and error_code(unknown) == "PSU_CREDENTIALS_INVALID"
    malformed = initiate(
        bank, body(main_account), headers={"X-PSU-IDENTITY": "1303931995", "PSU-Context": "PRIVATE"}
    )
    assert malformed.status_code == 400 and paths_of(malformed) == ["X-PSU-IDENTITY"]
    identify(bank, PRIVATE_2)
    mismatch = initiate(bank, body(main_account), headers={"X-PSU-IDENTITY": PRIVATE_1, "PSU-Context": "PRIVATE"})
    assert mismatch.status_code == 400 and paths_of(mismatch) == ["X-PSU-IDENTITY"]


def test_another_tpp_cannot_see_the_payment(payer, main_account, dev_ca):
    created = initiate(payer, body(main_account)).json()
    other = pki.issue_qseal(
        dev_ca,
        x509.Name(
            [
                x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, "Other TPP AS"),
                x509.NameAttribute(x509.NameOID.ORGANIZATION_IDENTIFIER, "PSDNO-FSA-111222333"),
            ]
        ),
    )
    signer = Signer(other.key, other.certificate)
    for href in (created["_links"]["self"]["href"], created["_links"]["status"]["href"]):
        response = payer.get(href, signer=signer, psu=False)
        assert response.status_code == 404 and error_code(response) == "RESOURCE_UNKNOWN"
    assert payer.delete(created["_links"]["self"]["href"], signer=signer, psu=False).status_code == 404


def test_amounts_are_stored_as_decimals(payer, main_account):
    initiate(payer, body(main_account, instructedAmount={"amount": "0.01", "currency": "EUR"}))
    payment = Payment.objects.get()
    assert payment.amount == Decimal("0.01") and isinstance(payment.amount, Decimal)
    assert payment.debit_amount == Decimal("0.12")  # 0.1173 NOK, rounded half up to øre


def test_sca_screen_for_a_payment_is_reachable_only_through_its_link(payer, main_account):
    created = initiate(payer, body(main_account)).json()
    browser = Client()
    assert browser.get("/sca/authorize?state=not-a-token").status_code == 404
    started = start_authorisation(payer, created)
    assert started.status_code == 201


def test_a_corporate_psu_needs_psu_corporate_id(bank):
    """Spec 5.6: a corporate user's request without PSU-Corporate-ID gets 400."""
    pin_clock()
    identify(bank, CORPORATE_1)
    operating = account(CORPORATE_1, "Driftskonto")
    corporate_id, bank.corporate_id = bank.corporate_id, None
    response = initiate(bank, body(operating))
    assert response.status_code == 400 and error_code(response) == "HTTP_HEADER_REQUIRED"
    assert paths_of(response) == ["PSU-Corporate-ID"]
    bank.corporate_id = corporate_id
    assert initiate(bank, body(operating)).status_code == 201


@pytest.mark.parametrize(
    ("header", "bad", "good"),
    [
        ("PSU-Device-ID", "device-1", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
        ("PSU-Geo-Location", "59.91,10.75", "GEO:59.9139,10.7522"),
        ("PSU-HTTP-Method", "FETCH", "POST"),
        ("TPP-Redirect-Preferred", "no", "false"),
    ],
)
def test_optional_headers_with_a_stated_form(payer, main_account, header, bad, good):
    refused = initiate(payer, body(main_account), headers={header: bad})
    assert refused.status_code == 400 and paths_of(refused) == [header]
    assert initiate(payer, body(main_account), headers={header: good}).status_code == 201


def test_execution_date_more_than_a_year_ahead_is_execution_date_invalid(payer, main_account):
    """The clock is pinned at 2030-01-07: 2031-01-07 is the latest execution date."""
    later = initiate(payer, body(main_account, requestedExecutionDate="2031-01-08"))
    assert later.status_code == 400
    assert error_code(later) == "EXECUTION_DATE_INVALID"
    assert paths_of(later) == ["requestedExecutionDate"]
    assert "more than a year ahead" in error_text(later) and "2031-01-07" in error_text(later)
    latest = initiate(payer, body(main_account, requestedExecutionDate="2031-01-07"))
    assert latest.status_code == 201, latest.content


def test_the_latest_execution_date_of_a_29_february():
    import datetime as dt

    from bank_simulator.pis.validation import latest_execution_date

    assert latest_execution_date(dt.date(2028, 2, 29)) == dt.date(2029, 2, 28)
    assert latest_execution_date(dt.date(2030, 1, 7)) == dt.date(2031, 1, 7)
