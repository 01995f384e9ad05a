"""KID on domestic payments: sent as remittanceInformationStructuredArray [{reference, referenceType: KID}], its
MOD10 or MOD11 check digit checked (400 KID_INVALID), required by a creditor that collects by KID (400
KID_MISSING), kept with the payment and shown on its transactions."""

from __future__ import annotations

import pytest

from bank_simulator.identifiers import kid, kid_is_valid, kid_mod11_check
from bank_simulator.pis import tables
from bank_simulator.pis.models import Payment
from tests.bank_simulator.conftest import PRIVATE_1, error_code
from tests.bank_simulator.pis.helpers import (
    DOMESTIC,
    NO_CREDITOR_BBAN,
    account,
    body,
    identify,
    initiate,
    pin_clock,
)

MOD10_KID = kid("2026114")  # 20261145
MOD11_KID = "1234567890" + kid_mod11_check("1234567890")  # 12345678903


@pytest.fixture
def payer(bank):
    pin_clock()
    identify(bank, PRIVATE_1)
    return bank


def domestic(debtor, creditor=NO_CREDITOR_BBAN, **overrides):
    return body(
        debtor,
        instructedAmount={"amount": "499.00", "currency": "NOK"},
        creditorAccount={"bban": creditor, "currency": "NOK"},
        creditorAgent=None,
        creditorAddress=None,
        purposeCode=None,
        **overrides,
    )


def with_kid(reference):
    return {"remittanceInformationStructuredArray": [{"reference": reference, "referenceType": "KID"}]}


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (MOD10_KID, True),
        (MOD11_KID, True),
        ("20261146", False),  # MOD10 digit off by one (and not a MOD11 one either)
        ("1", False),
        ("12345678901234567890123455", False),  # 26 digits
        ("12a4", False),
        ("0000000000", True),
        ("000006-", True),  # MOD11 gives 10: written "-"
        ("000007-", False),
    ],
)
def test_the_kid_check(value, valid):
    assert kid_is_valid(value) is valid


def test_a_valid_kid_is_kept_with_the_payment(payer, db):
    response = initiate(payer, domestic(account(PRIVATE_1, "Brukskonto"), **with_kid(MOD10_KID)), path=DOMESTIC)
    assert response.status_code == 201, response.content
    payment = Payment.objects.get(payment_id=response.json()["paymentId"])
    assert payment.submitted["remittanceInformationStructuredArray"] == [
        {"reference": MOD10_KID, "referenceType": "KID"}
    ]


@pytest.mark.parametrize("reference", ["20261146", "12ab", "1", 20261145])
def test_a_bad_kid_is_kid_invalid(payer, db, reference):
    response = initiate(payer, domestic(account(PRIVATE_1, "Brukskonto"), **with_kid(reference)), path=DOMESTIC)
    assert response.status_code == 400 and error_code(response) == "KID_INVALID"
    assert response.json()["tppMessages"][0]["path"] == "remittanceInformationStructuredArray[0].reference"


def test_a_biller_that_collects_by_kid_needs_one(payer, db):
    biller = next(iter(tables.KID_CREDITOR_ACCOUNTS))
    debtor = account(PRIVATE_1, "Brukskonto")
    missing = initiate(payer, domestic(debtor, creditor=biller), path=DOMESTIC)
    assert missing.status_code == 400 and error_code(missing) == "KID_MISSING"
    assert missing.json()["tppMessages"][0]["path"] == "remittanceInformationStructuredArray"
    given = initiate(payer, domestic(debtor, creditor=biller, **with_kid(MOD11_KID)), path=DOMESTIC)
    assert given.status_code == 201, given.content
