"""Odd optional fields cost nothing (docs/bank-interface.md, "Odd optional fields"): an optional field the client
cannot read is kept raw and reads as None, logged once per field and never with its value; the item and its list
are kept. Required fields stay strict. A date written as a date-time reads as its date part."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from tests.bankfake import Answer
from xs2a import errors, models
from xs2a.psu import PsuContext

PSU = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1")
PATH = "/v1/accounts/enc!!a=/transactions"
NAME = "Kari Nordmann"  # a personal value: it must never reach the log


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test starts as a new process would: no field warned about yet."""
    monkeypatch.setattr(models, "_warned", set())


def _item(tid: str, **fields) -> dict:
    return {"transactionId": tid, "transactionAmount": {"amount": "-10.00", "currency": "NOK"}, **fields}


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "xs2a" and r.levelno == logging.WARNING]


def test_every_item_is_kept_when_optional_fields_cannot_be_read(bank, client, caplog):
    odd = {
        "t1": {"bookingDate": "2026-11-30T00:00:00", "valueDate": "2026-11-30T23:30:00+01:00"},
        "t2": {"bookingDate": "30.11.2026", "valueDate": "2026-11-29"},
        "t3": {"originalAmount": {"amount": "ti kroner", "currency": "EUR"}},
        "t4": {"creditorName": {"first": NAME}, "creditorAccount": "NO9386011117947"},
        "t7": {"debtorAccount": {"iban": ["NO93", "8601"], "currency": "NOK"}},
        "t5": {"remittanceInformationUnstructuredArray": ["Faktura", {"line": 2}]},
        "t6": {"bookingDate": "2026-11-28"},
    }
    page = {"transactions": {"booked": [_item(t, **f) for t, f in odd.items()], "pending": [_item("p1")]}}
    bank.add("GET", PATH, Answer(200, page))
    with caplog.at_level(logging.WARNING, logger="xs2a"):
        listed = client.accounts.transactions("enc!!a=", psu=PSU)

    by_id = {t.transaction_id: t for t in listed.booked}
    assert list(by_id) == list(odd) and [t.transaction_id for t in listed.pending] == ["p1"], "nothing lost"
    assert by_id["t1"].booking_date == date(2026, 11, 30), "a date-time's date part, not moved to UTC"
    assert by_id["t1"].value_date == date(2026, 11, 30) and by_id["t1"].unread == {}
    assert by_id["t2"].booking_date is None and by_id["t2"].unread == {"bookingDate": "30.11.2026"}
    assert by_id["t2"].value_date == date(2026, 11, 29)
    assert by_id["t3"].original_amount is None
    assert by_id["t3"].unread == {"originalAmount": {"amount": "ti kroner", "currency": "EUR"}}
    assert by_id["t3"].transaction_amount == models.Amount(Decimal("-10.00"), "NOK")
    assert by_id["t4"].creditor_name is None and by_id["t4"].unread["creditorName"] == {"first": NAME}
    assert by_id["t4"].creditor_account is None and by_id["t4"].unread["creditorAccount"] == "NO9386011117947"
    assert by_id["t7"].debtor_account == models.AccountReference(currency="NOK")
    assert by_id["t7"].debtor_account.unread == {"iban": ["NO93", "8601"]} and by_id["t7"].unread == {}
    assert by_id["t5"].remittance_information_unstructured_array == []
    assert by_id["t5"].unread == {"remittanceInformationUnstructuredArray": ["Faktura", {"line": 2}]}
    assert by_id["t6"].booking_date == date(2026, 11, 28) and by_id["t6"].unread == {}
    for tid, fields in odd.items():
        assert by_id[tid].raw == _item(tid, **fields), "the bank's record as received"

    logged = _warnings(caplog)
    assert len(logged) == 8, logged  # one per field and kind: bookingDate read as a date part (t1), unread (t2)
    assert all("ti kroner" not in m and NAME not in m and "30.11.2026" not in m for m in logged)
    assert any("booked[].creditorName" in m and "expected a string" in m for m in logged)


def test_a_field_is_logged_once_for_the_process_not_once_per_item(bank, client, caplog):
    items = [_item(f"t{n}", bookingDate="2026-11-30T00:00:00", valueDate=f"{n:02d}.11.2026") for n in range(1, 6)]
    bank.add("GET", PATH, Answer(200, {"transactions": {"booked": items}}))
    with caplog.at_level(logging.WARNING, logger="xs2a"):
        first = client.accounts.transactions("enc!!a=", psu=PSU)
        second = client.accounts.transactions("enc!!a=", psu=PSU)
    assert len(first.booked) == len(second.booked) == 5
    assert [t.booking_date for t in first.booked] == [date(2026, 11, 30)] * 5
    assert [t.unread for t in second.booked] == [{"valueDate": f"{n:02d}.11.2026"} for n in range(1, 6)]
    logged = _warnings(caplog)
    assert len(logged) == 2, logged  # bookingDate (read as a date part) and valueDate (unread), each once
    assert not any("11.2026" in m for m in logged)


def test_balances_with_an_offset_less_last_change_are_kept(bank, client, caplog):
    balances = {
        "balances": [
            {
                "balanceAmount": {"amount": "1200.50", "currency": "NOK"},
                "balanceType": "interimAvailable",
                "lastChangeDateTime": "2026-11-30T08:15:00",
                "referenceDate": "2026-11-30T00:00:00",
            },
            {
                "balanceAmount": {"amount": "1000.00", "currency": "NOK"},
                "balanceType": "closingBooked",
                "lastChangeDateTime": "2026-11-29T23:59:59.123+01:00",
                "referenceDate": "2026-11-29",
            },
        ]
    }
    bank.add("GET", "/v1/accounts/enc!!a=/balances", Answer(200, balances))
    with caplog.at_level(logging.WARNING, logger="xs2a"):
        read = client.accounts.balances("enc!!a=", psu=PSU)
    naive, aware = read.balances
    assert naive.balance_amount.amount == Decimal("1200.50") and naive.reference_date == date(2026, 11, 30)
    assert naive.last_change_date_time is None and naive.unread == {"lastChangeDateTime": "2026-11-30T08:15:00"}
    assert aware.last_change_date_time == datetime(2026, 11, 29, 22, 59, 59, 123000, tzinfo=UTC)
    assert aware.last_change_date_time.utcoffset() == timedelta(hours=1)
    assert any("lastChangeDateTime" in m and "offset" in m for m in _warnings(caplog))


def test_a_sandbox_bank_that_sends_every_date_time_without_an_offset_loses_no_item(bank, client):
    """As the sandbox bank answers with BANK_SIM_DATETIMES=naive: date-times without an offset, dates as
    date-times at midnight."""
    booked = [
        _item(f"b{n}", bookingDate=f"2026-11-{n:02d}T00:00:00", valueDate=f"2026-11-{n:02d}T00:00:00")
        for n in range(1, 11)
    ]
    pending = [{**_item("p1", valueDate="2026-12-01T00:00:00"), "entryDate": "2026-12-01T10:00:00"}]
    page = {"account": {"iban": "NO9386011117947"}, "transactions": {"booked": booked, "pending": pending}}
    bank.add("GET", PATH, Answer(200, page))
    listed = client.accounts.transactions("enc!!a=", psu=PSU)
    assert [t.booking_date for t in listed.booked] == [date(2026, 11, n) for n in range(1, 11)]
    assert [t.value_date for t in listed.booked] == [date(2026, 11, n) for n in range(1, 11)]
    assert listed.pending[0].value_date == date(2026, 12, 1)
    assert listed.pending[0].extra["entryDate"] == "2026-12-01T10:00:00", "a field the client does not read"


def test_optional_payment_fields_that_cannot_be_read_keep_the_answer(bank, client):
    path = "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z=/status"
    bank.add("GET", path, Answer(200, {"transactionStatus": "ACCP", "fundsAvailable": "maybe"}))
    status = client.payments.status(payment_id="enc!!Z=", psu=PSU)
    assert status.transaction_status == "ACCP" and status.funds_available is None
    assert status.unread == {"fundsAvailable": "maybe"}
    answer = models.PaymentInitiationResponse.from_json(
        {
            "paymentId": "enc!!Z=",
            "transactionStatus": "RCVD",
            "transactionFees": {"amount": "1,50", "currency": "NOK"},
            "transactionFeeIndicator": "yes",
        }
    )
    assert answer.transaction_fees is None and answer.transaction_fee_indicator is None
    assert answer.unread == {
        "transactionFees": {"amount": "1,50", "currency": "NOK"},
        "transactionFeeIndicator": "yes",
    }


@pytest.mark.parametrize(
    "item",
    [
        {"transactionId": "t1"},  # no transactionAmount
        {"transactionId": "t1", "transactionAmount": {"amount": "ti", "currency": "NOK"}},
        {"transactionId": "t1", "transactionAmount": {"amount": "1.00"}},  # no currency
        {"transactionId": "t1", "transactionAmount": {"amount": True, "currency": "NOK"}},
    ],
)
def test_a_required_field_that_cannot_be_read_still_refuses_the_answer(bank, client, item):
    bank.add("GET", PATH, Answer(200, {"transactions": {"booked": [_item("t0"), item]}}))
    with pytest.raises(errors.UnexpectedResponseError, match="transactionAmount"):
        client.accounts.transactions("enc!!a=", psu=PSU)


def test_required_fields_of_other_records_stay_strict():
    with pytest.raises(models.ModelError, match="balanceType"):
        models.Balance.from_json({"balanceAmount": {"amount": "1.00", "currency": "NOK"}, "balanceType": ["x"]})
    with pytest.raises(models.ModelError, match="now: a date-time needs an offset"):
        models.SandboxClock.from_json({"now": "2026-11-30T08:00:00", "offsetSeconds": 0})
    with pytest.raises(models.ModelError, match="now: required"):
        models.SandboxClock.from_json({"offsetSeconds": 0})
    clock = models.SandboxClock.from_json({"now": "2026-11-30T08:00:00Z", "nextBatchAt": "2026-11-30T10:00:00"})
    assert clock.now == datetime(2026, 11, 30, 8, tzinfo=UTC) and clock.next_batch_at is None
    assert clock.unread == {"nextBatchAt": "2026-11-30T10:00:00"}
    with pytest.raises(models.ModelError, match="_links"):
        models.TransactionList.from_json({"transactions": {"booked": [], "_links": {"next": ["x"]}}})


def test_a_date_time_date_is_the_banks_calendar_date_at_any_hour_and_offset():
    for text, day in [
        ("2026-11-30T00:00:00", date(2026, 11, 30)),
        ("2026-11-30T23:59:59+01:00", date(2026, 11, 30)),  # 22:59 UTC: still the 30th at the bank
        ("2026-11-30T00:30:00+02:00", date(2026, 11, 30)),  # the 29th in UTC
        ("2026-11-30T12:00:00Z", date(2026, 11, 30)),
        ("2026-11-30 08:00:00", date(2026, 11, 30)),
    ]:
        balance = models.Balance.from_json(
            {"balanceAmount": {"amount": "1", "currency": "NOK"}, "balanceType": "expected", "referenceDate": text}
        )
        assert balance.reference_date == day and balance.unread == {}, text
    assert datetime(2026, 11, 30, 0, 30, tzinfo=timezone(timedelta(hours=2))).astimezone(UTC).day == 29


def test_unread_values_are_written_back_with_the_record():
    reference = models.AccountReference.from_json({"iban": "NO9386011117947", "currency": {"code": "NOK"}})
    assert reference.currency is None and reference.unread == {"currency": {"code": "NOK"}}
    assert reference.to_json() == {"iban": "NO9386011117947", "currency": {"code": "NOK"}}
