"""startAuthorisation, the payment SCA screen (dynamic linking), the status engine with its batches and the
clock control, multi-signature, funds, cancellation and the domestic known issue (spec 3, 4.1, 4.3)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.test import Client

from bank_simulator import clock
from bank_simulator.models import Account, Agreement, BookingStatus, ScaSession, Transaction
from bank_simulator.pis.models import Payment, PaymentEvent
from tests.bank_simulator.conftest import (
    CORPORATE_2,
    PRIVATE_1,
    PRIVATE_2,
    error_code,
    redirect_params,
    sca_path,
)
from tests.bank_simulator.pis.helpers import (
    DOMESTIC,
    NO_CREDITOR_BBAN,
    PINNED,
    account,
    approve,
    body,
    identify,
    initiate,
    next_batch,
    open_sca,
    pin_clock,
    run_batches,
    start_authorisation,
    status_of,
)


@pytest.fixture
def payer(bank):
    pin_clock()
    identify(bank, PRIVATE_1)
    return bank


@pytest.fixture
def main_account(db):
    return account(PRIVATE_1, "Brukskonto")


def set_balance(bank, target: Account, amount: str) -> None:
    response = bank.post(
        f"/v1/sandbox/accounts/{target.resource_id}/balances",
        json.dumps({"balanceAmount": {"amount": amount, "currency": target.currency}}),
    )
    assert response.status_code == 200, response.content


def created_payment(bank, data, **kw) -> dict:
    response = initiate(bank, data, **kw)
    assert response.status_code == 201, response.content
    return response.json()


def authorised(bank, data, identity=PRIVATE_1, **kw) -> dict:
    created = created_payment(bank, data, **kw)
    started = start_authorisation(bank, created)
    assert started.status_code == 201, started.content
    approve(started.json()["_links"]["scaRedirect"]["href"], identity)
    return created


def test_start_authorisation_gives_sca_redirect_and_the_screen_shows_the_payment(payer, main_account):
    created = created_payment(payer, body(main_account))
    started = start_authorisation(payer, created)
    assert started.status_code == 201, started.content
    data = started.json()
    assert data["scaStatus"] == "started"
    assert data["_links"]["scaRedirect"]["verbs"] == ["GET"]
    href = data["_links"]["scaRedirect"]["href"]
    assert "/sca/authorize?state=" in href
    # Repeating the call while the SCA is open gives the same redirect.
    assert start_authorisation(payer, created).json()["_links"]["scaRedirect"]["href"] == href
    browser, path, review = open_sca(href, PRIVATE_1)
    # Dynamic linking: amount, currency, creditor name and account are shown for approval.
    assert '<dd id="amount">1 250.00 EUR</dd>' in review
    assert "Müller Maschinenbau GmbH" in review
    assert "DE89370400440532013000" in review
    assert '<dd id="fee">86.66 NOK</dd>' in review
    params = redirect_params(browser.post(path, {"action": "approve"}))
    assert params["psu-id"] == payer.psu_id
    assert params["tpp-session-id"] == payer.session_id
    assert params["context"] == "PRIVATE"
    assert status_of(payer, created) == {"transactionStatus": "PDNG"}
    scastatus = payer.get(data["_links"]["scaStatus"]["href"])
    assert scastatus.json() == {"scaStatus": "finalised"}
    again = start_authorisation(payer, created)
    assert again.status_code == 409 and error_code(again) == "CONFLICT"
    # A finished SCA cannot be used again.
    assert browser.post(path, {"action": "approve"}).status_code == 409


def test_payment_sca_always_asks_for_identification(payer, main_account):
    """Dynamic linking: a valid TPP-session SCA does not skip the identity step for a payment."""
    created = created_payment(payer, body(main_account))
    href = start_authorisation(payer, created).json()["_links"]["scaRedirect"]["href"]
    # The TPP session had an SCA a moment ago (/v1/users in the fixture); a consent would skip identification.
    page = Client().get(sca_path(href))
    assert page.status_code == 200 and 'name="identity"' in page.content.decode()


def test_wrong_person_cannot_approve_and_cancel_keeps_the_payment(payer, main_account):
    created = created_payment(payer, body(main_account))
    href = start_authorisation(payer, created).json()["_links"]["scaRedirect"]["href"]
    browser = Client()
    path = sca_path(href)
    browser.get(path)
    page = browser.post(path, {"identity": PRIVATE_2, "action": "identify"})
    assert page.status_code == 400  # the identity number is not the PSU the payment was made for
    cancelled = redirect_params(browser.post(path, {"action": "cancel"}))
    assert cancelled["code"] == "SCA_INVALID" and cancelled["status"] == "401"
    assert status_of(payer, created)["transactionStatus"] == "RCVD"
    # A new authorisation can be started after the failed one.
    assert start_authorisation(payer, created).status_code == 201


def test_status_moves_only_with_batches_and_settles(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    before = Account.objects.get(pk=main_account.pk).booked_balance
    created = authorised(payer, body(main_account))
    for _ in range(3):  # reads do not move it
        assert status_of(payer, created) == {"transactionStatus": "PDNG"}
    payment = Payment.objects.get()
    assert payment.next_batch_at == dt.datetime(2030, 1, 7, 11, 0, tzinfo=dt.UTC)

    result = next_batch(payer)
    assert result["now"].startswith("2030-01-07T11:00")
    assert status_of(payer, created) == {"transactionStatus": "ACSP", "fundsAvailable": True}
    reservation = Transaction.objects.get(
        account=main_account, booking_status=BookingStatus.PENDING, books_on=None
    )
    assert reservation.amount == Decimal("-14749.16")  # 14 662.50 NOK + 86.66 NOK fee
    assert Account.objects.get(pk=main_account.pk).booked_balance == before  # reserved, not yet debited

    next_batch(payer)
    assert status_of(payer, created) == {"transactionStatus": "ACSC", "fundsAvailable": True}
    assert not Transaction.objects.filter(pk=reservation.pk).exists()
    booked = Transaction.objects.filter(
        account=main_account, booking_status=BookingStatus.BOOKED, booking_date=PINNED.date()
    )
    amounts = sorted(
        t.amount for t in booked if t.counterparty_name in {"Müller Maschinenbau GmbH", "Sandkasse Bank"}
    )
    assert amounts == [Decimal("-14662.50"), Decimal("-86.66")]
    assert Account.objects.get(pk=main_account.pk).booked_balance == before - Decimal("14749.16")
    moves = list(
        PaymentEvent.objects.filter(payment__payment_id=created["paymentId"]).values_list("to_status", flat=True)
    )
    assert moves == ["RCVD", "PDNG", "ACSP", "ACSC"]
    # Final: further batches change nothing, and DELETE is refused.
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == "ACSC"
    refused = payer.delete(created["_links"]["self"]["href"])
    assert refused.status_code == 409 and error_code(refused) == "CONFLICT"


def test_the_settled_payment_appears_in_account_information(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    created = authorised(payer, body(main_account))
    next_batch(payer)
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == "ACSC"
    from tests.bank_simulator.conftest import give_consent

    payer.psu_id = None
    give_consent(payer, PRIVATE_1)
    href = f"/v1/accounts/{main_account.resource_id}/transactions?bookingStatus=booked&dateFrom=2030-01-07"
    listing = payer.get(href)
    assert listing.status_code == 200, listing.content
    names = [t.get("creditorName") for t in listing.json()["transactions"]["booked"]]
    assert "Müller Maschinenbau GmbH" in names


def test_scheduled_batches_run_when_the_clock_passes_them(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    created = authorised(payer, body(main_account))
    run_batches(payer, {"advanceSeconds": 3600})  # 09:00: no batch yet
    assert status_of(payer, created)["transactionStatus"] == "PDNG"
    run_batches(payer, {"advanceSeconds": 2 * 3600 + 60})  # past 11:00
    assert status_of(payer, created)["transactionStatus"] == "ACSP"
    # Part 1's clock control moves the same clock; the 13:00 batch has run by the next read.
    response = payer.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": 2 * 3600}))
    assert response.status_code == 200
    assert status_of(payer, created)["transactionStatus"] == "ACSC"


def test_run_now_is_an_extra_batch(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    created = authorised(payer, body(main_account))
    offset = clock.offset()
    result = run_batches(payer)
    assert clock.offset() == offset  # the clock did not move
    assert result["paymentSteps"] == 1
    assert status_of(payer, created)["transactionStatus"] == "ACSP"


def test_future_execution_date_waits_as_actc(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    created = authorised(payer, body(main_account, requestedExecutionDate="2030-01-09"))
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == "ACTC"
    assert Payment.objects.get().next_batch_at == dt.datetime(2030, 1, 9, 5, 0, tzinfo=dt.UTC)
    for _ in range(4):
        next_batch(payer)  # the rest of the 7th
    assert status_of(payer, created)["transactionStatus"] == "ACTC"
    run_batches(payer, {"advanceSeconds": 2 * 86400})
    assert status_of(payer, created)["transactionStatus"] == "ACSC"


def test_missing_funds_report_accp_then_rjct(payer, main_account):
    set_balance(payer, main_account, "100.00")
    created = authorised(payer, body(main_account))
    next_batch(payer)
    assert status_of(payer, created) == {"transactionStatus": "ACCP", "fundsAvailable": False}
    next_batch(payer)  # 13:00 the same day: checked again, still missing
    assert status_of(payer, created) == {"transactionStatus": "ACCP", "fundsAvailable": False}
    run_batches(payer, {"advanceSeconds": 86400})  # the next day
    assert status_of(payer, created) == {"transactionStatus": "RJCT", "fundsAvailable": False}
    assert Account.objects.get(pk=main_account.pk).booked_balance == Decimal("100.00")


def test_funds_that_arrive_in_time_settle_the_payment(payer, main_account):
    set_balance(payer, main_account, "100.00")
    created = authorised(payer, body(main_account))
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == "ACCP"
    set_balance(payer, main_account, "20000.00")
    next_batch(payer)
    assert status_of(payer, created) == {"transactionStatus": "ACSP", "fundsAvailable": True}


def test_delete_cancels_where_allowed(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    received = created_payment(payer, body(main_account))
    response = payer.delete(received["_links"]["self"]["href"])
    assert response.status_code == 204
    assert status_of(payer, received)["transactionStatus"] == "CANC"
    again = payer.delete(received["_links"]["self"]["href"])
    assert again.status_code == 409
    assert start_authorisation(payer, received).status_code == 409

    pending = authorised(payer, body(main_account, instructedAmount={"amount": "10.00", "currency": "EUR"}))
    assert payer.delete(pending["_links"]["self"]["href"]).status_code == 204
    next_batch(payer)
    assert status_of(payer, pending)["transactionStatus"] == "CANC"  # the batch leaves it alone

    settling = authorised(payer, body(main_account, instructedAmount={"amount": "11.00", "currency": "EUR"}))
    next_batch(payer)
    assert status_of(payer, settling)["transactionStatus"] == "ACSP"
    refused = payer.delete(settling["_links"]["self"]["href"])
    assert refused.status_code == 409 and "ACSP" in refused.json()["tppMessages"][0]["text"]


def test_an_sca_for_a_cancelled_payment_cannot_approve_it(payer, main_account):
    created = created_payment(payer, body(main_account))
    href = start_authorisation(payer, created).json()["_links"]["scaRedirect"]["href"]
    browser, path, _ = open_sca(href, PRIVATE_1)
    assert payer.delete(created["_links"]["self"]["href"]).status_code == 204
    page = browser.post(path, {"action": "approve"})
    assert page.status_code == 400
    assert "no longer waiting for approval" in page.content.decode()
    assert status_of(payer, created)["transactionStatus"] == "CANC"


def test_corporate_agreement_with_two_signers_goes_through_patc(bank):
    """Havbruk Nord AS needs two signers: Private Customer 2 (a user of its agreement) and the company."""
    pin_clock()
    identify(bank, PRIVATE_2, agreement_index=1)  # the corporate context
    company = Agreement.objects.get(owner__customer_number=CORPORATE_2, context="CORPORATE")
    assert bank.corporate_id == str(company.agreement_id) and company.signers_required == 2
    operating = account(CORPORATE_2, "Driftskonto")
    data = body(operating, instructedAmount={"amount": "2500.00", "currency": "EUR"})
    # Without PSU-Corporate-ID the PSU acts in its private context, which does not reach the company's account.
    corporate_id, bank.corporate_id = bank.corporate_id, None
    private = initiate(bank, data)
    assert private.status_code == 403 and private.json()["tppMessages"][0]["path"] == "debtorAccount"
    bank.corporate_id = corporate_id
    created = created_payment(bank, data)
    first = start_authorisation(bank, created).json()
    params = approve(first["_links"]["scaRedirect"]["href"], PRIVATE_2)
    assert params["context"] == "CORPORATE" and params["psu-corporate-id"] == corporate_id
    assert status_of(bank, created)["transactionStatus"] == "PATC"
    # The same startAuthorisation link again, for the next signer; the first one cannot sign twice.
    second = start_authorisation(bank, created, psu=False).json()
    assert second["_links"]["scaRedirect"]["href"] != first["_links"]["scaRedirect"]["href"]
    browser, path, review = open_sca(second["_links"]["scaRedirect"]["href"], PRIVATE_2)
    assert '<dd id="signatures">1 of 2 given</dd>' in review
    twice = browser.post(path, {"action": "approve"})
    assert twice.status_code == 400 and "already approved" in twice.content.decode()
    redirect_params(browser.post(path, {"action": "cancel"}))
    assert status_of(bank, created)["transactionStatus"] == "PATC"
    third = start_authorisation(bank, created, psu=False).json()
    params = approve(third["_links"]["scaRedirect"]["href"], CORPORATE_2)
    assert params["context"] == "CORPORATE"
    assert status_of(bank, created)["transactionStatus"] == "PDNG"
    assert start_authorisation(bank, created).status_code == 409
    next_batch(bank)
    assert status_of(bank, created) == {"transactionStatus": "ACSP", "fundsAvailable": True}


def test_single_signer_corporate_agreement_goes_straight_to_pdng(bank):
    pin_clock()
    identify(bank, PRIVATE_1, agreement_index=1)  # Fjellbygg Entreprenør AS: one signer
    operating = account("18129215603", "Driftskonto")
    created = authorised(bank, body(operating))
    assert status_of(bank, created)["transactionStatus"] == "PDNG"


def test_domestic_payment_cannot_be_read_before_approval(payer, main_account):
    """Spec 3 rule 5 (known issue of the domestic product), reproduced as the bank answers it."""
    data = body(
        main_account,
        instructedAmount={"amount": "300.00", "currency": "NOK"},
        creditorAccount={"bban": NO_CREDITOR_BBAN, "currency": "NOK"},
        creditorAgent=None,
    )
    created = created_payment(payer, data, path=DOMESTIC)
    for href in (created["_links"]["self"]["href"], created["_links"]["status"]["href"]):
        response = payer.get(href)
        assert response.status_code == 404
        assert error_code(response) == "RESOURCE_UNKNOWN"
    started = start_authorisation(payer, created)
    assert started.status_code == 201  # authorisation works; only the reads are affected
    approve(started.json()["_links"]["scaRedirect"]["href"], PRIVATE_1)
    assert status_of(payer, created) == {"transactionStatus": "PDNG"}
    details = payer.get(created["_links"]["self"]["href"])
    assert details.status_code == 200 and details.json()["creditorAccount"]["bban"] == NO_CREDITOR_BBAN
    # The cross-border product has no such issue (tested in test_initiation: RCVD is readable).


def test_batch_control_validates_its_input(payer):
    for payload in ({"advanceSeconds": -1}, {"advanceSeconds": "60"}, {"untilNextBatch": "yes"}, {"other": 1}):
        response = payer.post("/v1/sandbox/batches/run", json.dumps(payload))
        assert response.status_code == 400, payload
        assert error_code(response) == "FORMAT_ERROR"
    both = payer.post("/v1/sandbox/batches/run", json.dumps({"advanceSeconds": 1, "untilNextBatch": True}))
    assert both.status_code == 400
    result = run_batches(payer, {"untilNextBatch": True})
    assert result["now"].startswith("2030-01-07T11:00") and result["nextBatchAt"].startswith("2030-01-07T13:00")


def test_batch_control_is_404_when_the_sandbox_is_off(payer, settings):
    settings.BANK_SIM_SANDBOX = False
    response = payer.post("/v1/sandbox/batches/run", "{}")
    assert response.status_code == 404


def test_openapi_document_describes_the_payment_operations(client):
    document = client.get("/openapi.json").json()
    for path in (
        "/v1/payments/{paymentProduct}",
        "/v1/payments/{paymentProduct}/{paymentId}",
        "/v1/payments/{paymentProduct}/{paymentId}/status",
        "/v1/payments/{paymentProduct}/{paymentId}/authorisations",
        "/v1/sandbox/batches/run",
    ):
        assert path in document["paths"], path
    assert "PaymentInitiation" in document["components"]["schemas"]
    assert set(document["paths"]["/v1/payments/{paymentProduct}/{paymentId}"]) == {"get", "delete"}


def test_sca_session_of_a_payment_has_the_payment_purpose(payer, main_account):
    created = created_payment(payer, body(main_account))
    start_authorisation(payer, created)
    assert ScaSession.objects.latest("id").purpose == "PAYMENT"


def test_second_signer_may_be_started_with_the_first_signers_psu_id(bank):
    """A TPP that repeats the first signer's PSU-ID on the next startAuthorisation is not stuck."""
    pin_clock()
    identify(bank, PRIVATE_2, agreement_index=1)
    created = created_payment(bank, body(account(CORPORATE_2, "Driftskonto")))
    approve(start_authorisation(bank, created).json()["_links"]["scaRedirect"]["href"], PRIVATE_2)
    second = start_authorisation(bank, created)  # PSU-ID and PSU-Corporate-ID of the first signer again
    assert second.status_code == 201
    approve(second.json()["_links"]["scaRedirect"]["href"], CORPORATE_2)
    assert status_of(bank, created)["transactionStatus"] == "PDNG"


def test_sandbox_initialize_removes_payments(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    authorised(payer, body(main_account))
    next_batch(payer)  # a reservation exists
    assert Payment.objects.count() == 1
    response = payer.post("/v1/sandbox/initialize", None)
    assert response.status_code == 200, response.content
    assert not Payment.objects.exists() and not PaymentEvent.objects.exists()


def test_payment_batches_command_runs_due_batches(payer, main_account):
    from io import StringIO

    from django.core.management import call_command

    from bank_simulator import services as bank_services

    set_balance(payer, main_account, "50000.00")
    authorised(payer, body(main_account))
    out = StringIO()
    call_command("payment_batches", stdout=out)
    assert "0 payment steps" in out.getvalue()  # 08:00:30, nothing due before 11:00
    bank_services.clock_advance(seconds=3 * 3600, now=clock.now())  # part 1's clock, no payment request
    call_command("payment_batches", stdout=out)
    assert "1 payment steps" in out.getvalue()
    assert Payment.objects.get().status == "ACSP"


def test_a_creditor_account_of_this_bank_is_credited_at_settlement(payer, main_account):
    set_balance(payer, main_account, "50000.00")
    savings = account(PRIVATE_2, "BSU")
    before = Account.objects.get(pk=savings.pk).booked_balance
    data = body(
        main_account,
        instructedAmount={"amount": "300.00", "currency": "NOK"},
        creditorName="Ola Kristian Ødegård",
        creditorAccount={"iban": savings.iban, "currency": "NOK"},
        creditorAgent=None,
    )
    created = authorised(payer, data, path=DOMESTIC)
    next_batch(payer)
    assert Account.objects.get(pk=savings.pk).booked_balance == before  # not before settlement
    next_batch(payer)
    assert status_of(payer, created)["transactionStatus"] == "ACSC"
    assert Account.objects.get(pk=savings.pk).booked_balance == before + Decimal("300.00")
    credit = Transaction.objects.get(account=savings, amount=Decimal("300.00"), booking_date=PINNED.date())
    assert credit.counterparty_name == "Kari Nordmann" and credit.counterparty_iban == main_account.iban


def test_payment_screen_escapes_what_the_tpp_sent(payer, main_account):
    created = created_payment(payer, body(main_account, creditorName="<script>alert(1)</script> AS"))
    href = start_authorisation(payer, created).json()["_links"]["scaRedirect"]["href"]
    _browser, _path, review = open_sca(href, PRIVATE_1)
    assert "<script>alert(1)</script>" not in review
    assert "&lt;script&gt;alert(1)&lt;/script&gt; AS" in review


def test_every_status_change_is_in_the_timeline(payer, main_account):
    set_balance(payer, main_account, "100.00")
    created = authorised(payer, body(main_account))
    next_batch(payer)
    run_batches(payer, {"advanceSeconds": 86400})
    events = list(PaymentEvent.objects.filter(payment__payment_id=created["paymentId"]).order_by("id"))
    assert [(e.from_status, e.to_status) for e in events][:3] == [("", "RCVD"), ("RCVD", "PDNG"), ("PDNG", "ACCP")]
    assert (events[-1].from_status, events[-1].to_status) == ("ACCP", "RJCT")
    assert all(e.at.tzinfo is not None for e in events)
    assert "funds still missing" in events[-1].reason


def test_batch_times_come_from_the_setting(payer, main_account, settings):
    """BANK_SIM_BATCH_TIMES=06:30,18:00: the payment waits for 18:00 (the clock is at 08:00 UTC), not 11:00."""
    settings.BANK_SIM_BATCH_TIMES = (dt.time(6, 30), dt.time(18, 0))
    set_balance(payer, main_account, "50000.00")
    created = authorised(payer, body(main_account))
    run_batches(payer, {"advanceSeconds": 5 * 3600})  # 13:00: no batch at 11:00 or 13:00 any more
    assert status_of(payer, created)["transactionStatus"] == "PDNG"
    result = run_batches(payer, {"untilNextBatch": True})
    assert result["now"].startswith("2030-01-07T18:00")
    assert status_of(payer, created)["transactionStatus"] == "ACSP"
    assert result["nextBatchAt"] == "2030-01-08T06:30:00+00:00"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("05:00,08:00,11:00,13:00,15:00", [(5, 0), (8, 0), (11, 0), (13, 0), (15, 0)]),
        ("18:00, 06:30", [(6, 30), (18, 0)]),
        ("25:00", None),
        ("6:30", None),
        ("06:30,06:30", None),
        ("", None),
    ],
)
def test_batch_times_setting_is_checked(monkeypatch, raw, expected):
    """A wrong value is recorded as a configuration error naming the variable (the settings raise them all
    together at their end)."""
    from bank_simulator import settings as bank_settings

    problems: list[str] = []
    monkeypatch.setattr(bank_settings, "_problems", problems)
    monkeypatch.setenv("BANK_SIM_BATCH_TIMES_TEST", raw)
    times = bank_settings._batch_times("BANK_SIM_BATCH_TIMES_TEST", "")
    if expected is None:
        assert times == () and len(problems) == 1 and problems[0].startswith("BANK_SIM_BATCH_TIMES_TEST: ")
    else:
        assert problems == []
        assert [(t.hour, t.minute) for t in times] == expected
