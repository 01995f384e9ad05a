"""Where the spec is silent on SCA: exemption below an amount (BANK_SIM_SCA_EXEMPT_BELOW) and the scaRedirect in
the initiation answer itself (BANK_SIM_SCA_AT_INITIATION)."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from bank_simulator.pis.models import Payment, PaymentSignature, TransactionStatus
from tests.bank_simulator.conftest import CORPORATE_2, PRIVATE_1, resent_date
from tests.bank_simulator.pis.helpers import (
    DOMESTIC,
    NO_CREDITOR_BBAN,
    account,
    approve,
    body,
    identify,
    initiate,
    next_batch,
    pin_clock,
    start_authorisation,
    status_of,
)


@pytest.fixture
def payer(bank):
    pin_clock()
    identify(bank, PRIVATE_1)
    return bank


def _domestic(debtor, amount: str) -> dict:
    return body(
        debtor,
        instructedAmount={"amount": amount, "currency": "NOK"},
        creditorAccount={"bban": NO_CREDITOR_BBAN, "currency": "NOK"},
        creditorAgent=None,
        creditorAddress=None,
        purposeCode=None,
    )


def test_below_the_exemption_amount_no_sca_and_the_payment_moves_on(payer, settings):
    settings.BANK_SIM_SCA_EXEMPT_BELOW = Decimal("500")
    debtor = account(PRIVATE_1, "Brukskonto")
    created = initiate(payer, _domestic(debtor, "499.99"), path=DOMESTIC)
    assert created.status_code == 201, created.content
    assert created.json()["transactionStatus"] == "RCVD"
    started = start_authorisation(payer, created.json())
    assert started.status_code == 201, started.content
    answer = started.json()
    assert answer["scaStatus"] == "exempted"
    assert "scaRedirect" not in answer["_links"]
    assert payer.get(answer["_links"]["scaStatus"]["href"]).json() == {"scaStatus": "exempted"}
    assert status_of(payer, created.json())["transactionStatus"] == "PDNG"  # approved as after an SCA
    payment = Payment.objects.get(payment_id=created.json()["paymentId"])
    assert payment.authorised_at is not None
    assert PaymentSignature.objects.filter(payment=payment).count() == 1
    assert "SCA exempted" in payment.events.get(to_status=TransactionStatus.PDNG).reason
    next_batch(payer)
    assert status_of(payer, created.json())["transactionStatus"] == "ACSP"
    # Starting again is refused: nothing is left to authorise.
    assert start_authorisation(payer, created.json()).status_code == 409


def test_at_or_above_the_exemption_amount_sca_is_needed(payer, settings):
    settings.BANK_SIM_SCA_EXEMPT_BELOW = Decimal("500")
    debtor = account(PRIVATE_1, "Brukskonto")
    created = initiate(payer, _domestic(debtor, "500.00"), path=DOMESTIC).json()
    answer = start_authorisation(payer, created).json()
    assert answer["scaStatus"] == "started" and "scaRedirect" in answer["_links"]
    # EUR is converted at the bank's rate: 50 EUR is more than 500 NOK.
    euros = initiate(payer, body(debtor, instructedAmount={"amount": "50.00", "currency": "EUR"})).json()
    assert "scaRedirect" in start_authorisation(payer, euros).json()["_links"]


def test_without_the_setting_every_payment_needs_sca(payer):
    debtor = account(PRIVATE_1, "Brukskonto")
    created = initiate(payer, _domestic(debtor, "1.00"), path=DOMESTIC).json()
    answer = start_authorisation(payer, created).json()
    assert answer["scaStatus"] == "started" and "scaRedirect" in answer["_links"]


def test_an_agreement_with_two_signers_is_not_exempted(bank, settings):
    """Corporate Customer 2's agreement needs two signatures: an exemption from SCA does not replace them."""
    settings.BANK_SIM_SCA_EXEMPT_BELOW = Decimal("1000000")
    pin_clock()
    identify(bank, CORPORATE_2)
    debtor = account(CORPORATE_2, "Driftskonto")
    created = initiate(bank, _domestic(debtor, "10.00"), path=DOMESTIC)
    assert created.status_code == 201, created.content
    assert Payment.objects.get(payment_id=created.json()["paymentId"]).signers_required == 2
    assert "scaRedirect" in start_authorisation(bank, created.json()).json()["_links"]


def test_sca_at_initiation_puts_the_sca_redirect_in_the_initiation_answer(payer, settings):
    settings.BANK_SIM_SCA_AT_INITIATION = True
    debtor = account(PRIVATE_1, "Brukskonto")
    request_id = str(uuid.uuid4())
    created = initiate(payer, body(debtor), headers={"X-Request-ID": request_id})
    assert created.status_code == 201, created.content
    links = created.json()["_links"]
    assert "startAuthorisation" not in links
    assert set(links) >= {"scaRedirect", "scaStatus", "status", "self"}
    assert payer.get(links["scaStatus"]["href"]).json() == {"scaStatus": "started"}
    # The same request again (same X-Request-ID): the same payment and the same SCA in progress.
    again = initiate(payer, body(debtor), headers={"X-Request-ID": request_id, "Date": resent_date()})
    assert again.json()["_links"]["scaRedirect"] == links["scaRedirect"]
    params = approve(links["scaRedirect"]["href"], PRIVATE_1)
    assert params["psu-id"] == payer.psu_id
    assert status_of(payer, created.json())["transactionStatus"] == "PDNG"


def test_sca_at_initiation_with_an_exemption_answers_an_approved_payment(payer, settings):
    settings.BANK_SIM_SCA_AT_INITIATION = True
    settings.BANK_SIM_SCA_EXEMPT_BELOW = Decimal("500")
    debtor = account(PRIVATE_1, "Brukskonto")
    created = initiate(payer, _domestic(debtor, "100.00"), path=DOMESTIC)
    assert created.status_code == 201, created.content
    answer = created.json()
    assert answer["transactionStatus"] == "PDNG"
    assert "scaRedirect" not in answer["_links"] and "startAuthorisation" not in answer["_links"]
    assert payer.get(answer["_links"]["scaStatus"]["href"]).json() == {"scaStatus": "exempted"}
