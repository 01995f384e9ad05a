"""The tests' fake bank (tests/bankfake.py) behind the portal's own client: what it answers is what the portal
reads, what the portal sends is what it records, its signatures verify with the development bank seal, and a lost
answer is read as xs2a's transport reads one."""

from __future__ import annotations

import pytest

from core import bank as portal_bank
from core.models import BankCall
from tests import bankfake
from xs2a.errors import OutcomeUnknownError, ResponseSignatureError, TransportError, Xs2aError
from xs2a.models import PaymentInitiation
from xs2a.psu import PsuContext

pytestmark = pytest.mark.django_db

PSU = PsuContext(psu_id="6f0f4a8e-2a4b-4c47-9d8b-0c5a6b3e7f10", ip_address="198.51.100.7")
PAYMENT = PaymentInitiation.from_json(
    {
        "instructedAmount": {"amount": "100.00", "currency": "NOK"},
        "creditorName": "Kari Nordmann",
        "creditorAccount": {"bban": "12345678903"},
        "debtorAccount": {"bban": "86011117947"},
    }
)


def test_every_client_the_portal_builds_sends_through_the_fake_and_it_records_the_request(fake_bank):
    fake_bank.add("GET", "/v1/accounts", bankfake.accounts_list(bankfake.account("acc-1", name="Lønn")))

    [account] = portal_bank.bank_client().accounts.list(psu=PSU)
    portal_bank.unattended_bank_client().accounts.balances("acc-1", psu=PsuContext())

    assert (account.resource_id, account.name) == ("acc-1", "Lønn")
    listed, balances = fake_bank.received
    assert (listed.method, listed.path, listed.params) == ("GET", "/v1/accounts", {"withBalance": "false"})
    assert listed.headers["psu-id"] == PSU.psu_id and "signature" in listed.headers
    assert balances.path == "/v1/accounts/acc-1/balances" and "psu-ip-address" not in balances.headers
    assert fake_bank.sent("GET", "/v1/accounts/{accountId}/balances") == [balances]
    assert BankCall.objects.count() == 2  # audited as every call of the portal


def test_queued_answers_are_taken_in_turn_and_the_last_one_repeats(fake_bank):
    path = "/v1/payments/{product}/{paymentId}/status"
    fake_bank.add("GET", path, bankfake.payment_status("ACTC"), bankfake.payment_status("ACSC"))
    payments = portal_bank.bank_client().payments

    read = [
        payments.status(product="domestic-credit-transfers", payment_id="p-1").transaction_status for _ in "123"
    ]

    assert read == ["ACTC", "ACSC", "ACSC"]


def test_the_answers_verify_with_the_development_bank_seal(fake_bank, settings):
    settings.BANK_RESPONSE_CERT = settings.PKI_DIR / "bank-signing.pem"
    portal_bank.bank_client.cache_clear()
    fake_bank.add("POST", "/v1/payments/{product}", bankfake.payment_initiated("p-1"))

    answer = portal_bank.bank_client().payments.initiate(PAYMENT, psu=PSU)

    assert answer.payment_id == "p-1" and answer.status_link == "/v1/payments/domestic-credit-transfers/p-1/status"
    fake_bank.seal = None  # an answer without a signature is refused
    with pytest.raises(ResponseSignatureError):
        portal_bank.bank_client().payments.initiate(PAYMENT, psu=PSU)


def test_a_lost_answer_is_not_delivered_or_may_have_been_sent(fake_bank):
    fake_bank.add("POST", "/v1/payments/{product}", bankfake.lost(sent=False), bankfake.lost())
    payments = portal_bank.bank_client().payments

    with pytest.raises(TransportError) as never_sent:
        payments.initiate(PAYMENT, psu=PSU)
    with pytest.raises(OutcomeUnknownError):
        payments.initiate(PAYMENT, psu=PSU)

    assert not isinstance(never_sent.value, OutcomeUnknownError)
    assert len(fake_bank.sent("POST")) == 2


def test_an_error_answer_carries_the_banks_message(fake_bank):
    fake_bank.add("GET", "/v1/agreements", bankfake.error(401, "CONSENT_INVALID", "No consent."))

    with pytest.raises(Xs2aError) as raised:
        portal_bank.bank_client().consents.agreements(psu=PSU)

    assert "CONSENT_INVALID" in str(raised.value.tpp_messages)


def test_the_override_ends_with_the_test(override_bank):
    fake = override_bank(bankfake.FakeBank())
    assert portal_bank._test_bank is not None and portal_bank._test_bank.adapter is fake
