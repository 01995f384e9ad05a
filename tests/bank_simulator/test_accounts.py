"""Account information: accounts, balances, transactions, details, card accounts, unattended limits."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

import pytest

from bank_simulator.models import (
    Account,
    Agreement,
    AgreementContext,
    BookingStatus,
    Consent,
    ConsentStatus,
    PsuIdentity,
    Transaction,
)
from tests.bank_simulator.conftest import CORPORATE_2, PRIVATE_2, accounts_of, error_code, give_consent

AMOUNT = re.compile(r"^-?\d+\.\d{2}$")


def _main(bank) -> dict:
    return accounts_of(bank)["Brukskonto"]


def _transactions(bank, account: dict, query: str = "", **kw):
    response = bank.get(f"{account['_links']['self']['href']}/transactions{query}", **kw)
    assert response.status_code == 200, response.content
    return response.json()


def test_account_shape(private_bank):
    account = _main(private_bank)
    assert set(account) >= {"resourceId", "iban", "bban", "currency", "name", "product", "cashAccountType", "bic"}
    assert account["iban"].startswith("NO") and len(account["iban"]) == 15
    assert account["_links"]["transactions"]["href"].endswith("/transactions?bookingStatus=both")
    assert account["cashAccountType"] == "CURRENT"
    fixed = private_bank.get("/v1/accounts", headers={"x-accept-fix": "cash-account-type-iso"}).json()
    assert {a["cashAccountType"] for a in fixed["accounts"]} == {"CACC"}


def test_account_names_up_to_70_characters(bank):
    give_consent(bank, PRIVATE_2)
    names = [a["name"] for a in bank.get("/v1/accounts").json()["accounts"]]
    longest = max(names, key=len)
    assert 60 < len(longest) <= 70
    assert longest == "Felles brukskonto for husholdning, ferie og faste utgifter i Tromsø"


def test_balances_are_strings_in_the_account_currency(bank):
    give_consent(bank, CORPORATE_2)
    accounts = accounts_of(bank)
    eur = accounts["Valutakonto EUR"]
    assert eur["currency"] == "EUR"
    body = bank.get(eur["_links"]["balances"]["href"]).json()
    assert body["account"]["currency"] == "EUR"
    types = {b["balanceType"] for b in body["balances"]}
    assert types == {"closingBooked", "interimBooked", "interimAvailable", "expected"}
    for balance in body["balances"]:
        assert balance["balanceAmount"]["currency"] == "EUR"
        assert AMOUNT.match(balance["balanceAmount"]["amount"])
    with_balance = bank.get("/v1/accounts?withBalance=true").json()["accounts"]
    assert all(b["balanceAmount"]["currency"] == a["currency"] for a in with_balance for b in a["balances"])


def test_expected_balance_adds_pending_items(private_bank):
    account = _main(private_bank)
    balances = {
        b["balanceType"]: Decimal(b["balanceAmount"]["amount"])
        for b in private_bank.get(account["_links"]["balances"]["href"]).json()["balances"]
    }
    row = Account.objects.get(resource_id=account["resourceId"])
    pending = sum(t.amount for t in row.transactions.filter(booking_status=BookingStatus.PENDING))
    assert pending < 0
    assert balances["interimBooked"] == row.booked_balance.quantize(Decimal("0.01"))
    assert balances["expected"] == (row.booked_balance + pending).quantize(Decimal("0.01"))


def test_default_page_is_200_and_links_state_it(private_bank):
    account = _main(private_bank)
    body = _transactions(private_bank, account)
    lists = body["transactions"]
    assert len(lists["booked"]) + len(lists["pending"]) == 200
    assert "limit=200" in lists["_links"]["next"]["href"]
    assert "offset=200" in lists["_links"]["next"]["href"]
    assert "bookingStatus=both" in lists["_links"]["next"]["href"]
    # Following next gives the following items, none twice.
    second = private_bank.get(lists["_links"]["next"]["href"]).json()["transactions"]
    first_ids = {t["transactionId"] for t in lists["booked"] + lists["pending"]}
    second_ids = {t["transactionId"] for t in second["booked"] + second["pending"]}
    assert second_ids and not first_ids & second_ids


def test_booking_status_filters(private_bank):
    account = _main(private_bank)
    booked = _transactions(private_bank, account, "?bookingStatus=booked")["transactions"]
    pending = _transactions(private_bank, account, "?bookingStatus=pending")["transactions"]
    both = _transactions(private_bank, account, "?bookingStatus=both&limit=1000")["transactions"]
    everything = _transactions(private_bank, account, "?bookingStatus=all&limit=1000")["transactions"]
    assert booked["pending"] == [] and booked["booked"]
    assert pending["booked"] == [] and pending["pending"]
    assert all("valueDate" not in t for t in pending["pending"])
    assert (
        len(both["booked"]) + len(both["pending"])
        == Transaction.objects.filter(account__resource_id=account["resourceId"]).count()
    )
    assert (both["booked"], both["pending"]) == (everything["booked"], everything["pending"])
    response = private_bank.get(f"{account['_links']['self']['href']}/transactions?bookingStatus=information")
    assert response.status_code == 400
    assert error_code(response) == "FORMAT_ERROR"


def test_dates_limit_and_offset(private_bank):
    account = _main(private_bank)
    today = dt.datetime.now(dt.UTC).date()
    start, end = today - dt.timedelta(days=60), today - dt.timedelta(days=30)
    body = _transactions(private_bank, account, f"?bookingStatus=booked&dateFrom={start}&dateTo={end}&limit=1000")
    days = [dt.date.fromisoformat(t["bookingDate"]) for t in body["transactions"]["booked"]]
    assert days and all(start <= d <= end for d in days)
    assert days == sorted(days, reverse=True)
    page = _transactions(
        private_bank, account, f"?bookingStatus=booked&dateFrom={start}&dateTo={end}&limit=5&offset=5"
    )
    assert [t["transactionId"] for t in page["transactions"]["booked"]] == [
        t["transactionId"] for t in body["transactions"]["booked"][5:10]
    ]
    assert "previous" in page["transactions"]["_links"]
    for query, path in [
        ("?dateFrom=2024-13-01", "dateFrom"),
        ("?limit=0", "limit"),
        ("?offset=-1", "offset"),
        (f"?dateFrom={end}&dateTo={start}", "dateFrom"),
    ]:
        response = private_bank.get(f"{account['_links']['self']['href']}/transactions{query}")
        assert response.status_code == 400
        assert response.json()["tppMessages"][0]["path"] == path


def test_booked_ids_are_stable_and_items_carry_kid_and_end_to_end(private_bank):
    account = _main(private_bank)
    first = _transactions(private_bank, account, "?bookingStatus=booked&limit=1000")["transactions"]["booked"]
    again = _transactions(private_bank, account, "?bookingStatus=booked&limit=1000")["transactions"]["booked"]
    assert [t["transactionId"] for t in first] == [t["transactionId"] for t in again]
    assert len({t["transactionId"] for t in first}) == len(first)
    assert any("kid" in t for t in first)
    assert any("endToEndIdentification" in t for t in first)
    salary = next(t for t in first if t.get("remittanceInformationUnstructured", "").startswith("Lønn"))
    assert Decimal(salary["transactionAmount"]["amount"]) > 0 and salary["debtorName"] == "Helse Bergen HF"
    assert all(AMOUNT.match(t["transactionAmount"]["amount"]) for t in first)
    purchase = next(t for t in first if t.get("proprietaryBankTransactionCode") == "R_741")
    assert Decimal(purchase["transactionAmount"]["amount"]) < 0 and purchase["creditorName"]


def test_transaction_details(private_bank):
    account = _main(private_bank)
    booked = _transactions(private_bank, account, "?bookingStatus=booked&limit=60")["transactions"]["booked"]
    with_kid = next(t for t in booked if "kid" in t)
    details = private_bank.get(with_kid["_links"]["transactionDetails"]["href"])
    assert details.status_code == 200
    item = details.json()["transactionsDetails"]
    assert item["transactionId"] == with_kid["transactionId"]
    assert item["remittanceInformationStructuredArray"] == [{"reference": with_kid["kid"], "referenceType": "KID"}]
    missing = private_bank.get(f"{account['_links']['self']['href']}/transactions/enc!!nothing==")
    assert missing.status_code == 404


def test_pending_items_book_later_under_a_different_id(private_bank):
    account = _main(private_bank)
    pending = _transactions(private_bank, account, "?bookingStatus=pending")["transactions"]["pending"]
    assert pending
    response = private_bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": 4 * 86400}))
    assert response.status_code == 200
    private_bank.session_id = None  # days later the SCA's hour is over: read outside its TPP-Session-ID
    after = _transactions(private_bank, account, "?bookingStatus=both&limit=1000")["transactions"]
    assert after["pending"] == []
    booked_ids = {t["transactionId"] for t in after["booked"]}
    pending_ids = {t["transactionId"] for t in pending}
    assert not booked_ids & pending_ids
    amounts = sorted(t["transactionAmount"]["amount"] for t in pending)
    recent = [
        t
        for t in after["booked"]
        if t.get("valueDate") in {p["bookingDate"] for p in pending}
        and t["transactionAmount"]["amount"] in amounts
    ]
    assert len(recent) >= len(pending)


def test_card_accounts_and_card_transactions(private_bank):
    cards = private_bank.get("/v1/card-accounts").json()["cardAccounts"]
    card = cards[0]
    assert card["maskedPan"].startswith("5168") and "*" in card["maskedPan"]
    body = private_bank.get(card["_links"]["transactions"]["href"] + "&limit=1000").json()
    booked = body["cardTransactions"]["booked"]
    assert body["cardAccount"]["maskedPan"] == card["maskedPan"]
    abroad = [t for t in booked if "originalAmount" in t]
    assert abroad, "some purchases abroad carry the original amount"
    for item in abroad:
        assert item["transactionAmount"]["currency"] == "NOK"
        assert item["originalAmount"]["currency"] != "NOK"
    balances = private_bank.get(card["_links"]["balances"]["href"]).json()
    assert balances["cardAccount"]["currency"] == "NOK"
    # A card account id is not an account id.
    assert private_bank.get(f"/v1/accounts/{card['resourceId']}/balances").status_code == 403


def test_unattended_access_is_limited_to_4_per_account_per_24_hours(private_bank):
    account = _main(private_bank)
    private_bank.psu_ip = None
    href = account["_links"]["balances"]["href"]
    for _ in range(4):
        assert private_bank.get(href).status_code == 200
    response = private_bank.get(href)
    assert response.status_code == 429
    assert error_code(response) == "ACCESS_EXCEEDED"
    # Transactions have their own four; the PSU present is not counted.
    for _ in range(4):
        assert private_bank.get(f"{account['_links']['self']['href']}/transactions").status_code == 200
    assert private_bank.get(f"{account['_links']['self']['href']}/transactions").status_code == 429
    private_bank.psu_ip = "203.0.113.9"
    assert private_bank.get(href).status_code == 200
    # The window is rolling: a day later the TPP may read again.
    private_bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": 86401}))
    private_bank.psu_ip = None
    assert private_bank.get(href).status_code == 200


def test_a_private_psu_reads_under_its_own_agreements_consent_only(private_bank):
    """The PSU's latest private consent is taken only when its agreement is the PSU's own: a newer consent row
    on another customer's private agreement (which no screen of the bank can make) is never the one in force."""
    account = _main(private_bank)
    own = Consent.objects.filter(psu__psu_id=private_bank.psu_id).latest("id")
    other_agreement = Agreement.objects.exclude(owner=own.psu.customer).filter(context=AgreementContext.PRIVATE)[0]
    Consent.objects.create(  # covers no account: read under it, every account would be refused
        psu=PsuIdentity.objects.get(psu_id=private_bank.psu_id),
        agreement=other_agreement,
        status=ConsentStatus.VALID,
        sca_completed_at=own.sca_completed_at,
        valid_until=own.valid_until,
    )
    private_bank.psu_ip = None
    response = private_bank.get(account["_links"]["balances"]["href"])
    assert response.status_code == 200, response.content
    assert response.json()["account"]["iban"] == account["iban"]


def test_unattended_transactions_older_than_90_days_are_refused(private_bank):
    account = _main(private_bank)
    base = f"{account['_links']['self']['href']}/transactions"
    old = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=120)).isoformat()
    assert private_bank.get(f"{base}?dateFrom={old}").status_code == 200  # PSU present
    private_bank.psu_ip = None
    response = private_bank.get(f"{base}?dateFrom={old}")
    assert response.status_code == 403
    assert response.json()["tppMessages"][0]["path"] == "dateFrom"
    body = private_bank.get(f"{base}?bookingStatus=booked&limit=1000").json()
    oldest = min(dt.date.fromisoformat(t["bookingDate"]) for t in body["transactions"]["booked"])
    assert oldest >= dt.datetime.now(dt.UTC).date() - dt.timedelta(days=90)


@pytest.mark.parametrize("known_issue", [False, True])
def test_production_known_issue_pending_not_filtered(private_bank, settings, known_issue):
    settings.BANK_SIM_KNOWN_ISSUE_PENDING_UNFILTERED = known_issue
    account = _main(private_bank)
    total_pending = Transaction.objects.filter(
        account__resource_id=account["resourceId"], booking_status=BookingStatus.PENDING
    ).count()
    assert total_pending > 1
    long_ago = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=200)).isoformat()
    month_ago = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=170)).isoformat()
    body = _transactions(
        private_bank, account, f"?bookingStatus=both&dateFrom={long_ago}&dateTo={month_ago}&limit=1"
    )
    pending = body["transactions"]["pending"]
    if known_issue:
        assert len(pending) == total_pending  # neither the dates nor the limit filter them
        assert len(body["transactions"]["booked"]) == 1
    else:
        assert pending == []
    # Card accounts are unaffected.
    card = private_bank.get("/v1/card-accounts").json()["cardAccounts"][0]
    card_body = private_bank.get(
        f"{card['_links']['self']['href']}/transactions?bookingStatus=pending&dateFrom={long_ago}&dateTo={month_ago}"
    ).json()
    assert card_body["cardTransactions"]["pending"] == []


def test_odd_query_values_are_format_errors_not_crashes(private_bank):
    base = f"{_main(private_bank)['_links']['self']['href']}/transactions"
    for query in ("?limit=%C2%B2", "?offset=%D9%A1", "?dateFrom=%D9%A1%D9%A1%D9%A1%D9%A1-01-01"):
        response = private_bank.get(base + query)
        assert response.status_code == 400, query
        assert error_code(response) == "FORMAT_ERROR"
    response = private_bank.get(base + "?bookingStatus=%F0%9F%98%80")
    assert response.status_code == 400
    assert "U+1F600" in response.json()["tppMessages"][0]["text"]


# --- listing pages, balances and the unattended window, through the API -------------------------------------


def _walk(bank, first_href: str) -> tuple[list[str], list[str], int]:
    """Follow ``next`` from ``first_href``: (pending ids, booked ids, pages), in the order served."""
    pending, booked, pages, href = [], [], 0, first_href
    while href:
        lists = bank.get(href).json()["transactions"]
        pending += [t.get("transactionId", t["bookingDate"]) for t in lists["pending"]]
        booked += [t["transactionId"] for t in lists["booked"]]
        pages += 1
        href = lists["_links"].get("next", {}).get("href")
        assert pages < 500
    return pending, booked, pages


@pytest.mark.parametrize("limit", [1, 3, 7])
def test_small_pages_add_up_to_the_whole_listing(private_bank, limit):
    """Pending items first, then booked, newest first: pages of any size cross from one list to the other
    without losing or repeating an item."""
    account = _main(private_bank)
    base = f"{account['_links']['self']['href']}/transactions"
    whole = private_bank.get(f"{base}?bookingStatus=both&limit=1000").json()["transactions"]
    expected_pending = [t.get("transactionId", t["bookingDate"]) for t in whole["pending"]]
    expected_booked = [t["transactionId"] for t in whole["booked"]]
    assert expected_pending and len(expected_booked) > 3
    today = dt.datetime.now(dt.UTC).date()
    since = (today - dt.timedelta(days=20)).isoformat()
    recent = private_bank.get(f"{base}?bookingStatus=both&dateFrom={since}&limit=1000").json()["transactions"]
    recent_booked = [t["transactionId"] for t in recent["booked"]]
    pending, booked, pages = _walk(private_bank, f"{base}?bookingStatus=both&dateFrom={since}&limit={limit}")
    assert booked == recent_booked and len(pending) == len(recent["pending"])
    assert pages == -(-(len(recent["pending"]) + len(recent_booked)) // limit)
    days = [dt.date.fromisoformat(t["bookingDate"]) for t in whole["booked"]]
    assert days == sorted(days, reverse=True)


def test_balances_follow_todays_bookings_and_the_credit_limit(private_bank):
    account = _main(private_bank)
    href = account["_links"]["balances"]["href"]

    def balances() -> dict[str, Decimal]:
        items = private_bank.get(href).json()["balances"]
        return {b["balanceType"]: Decimal(b["balanceAmount"]["amount"]) for b in items}

    before = balances()
    row = Account.objects.get(resource_id=account["resourceId"])
    today = dt.datetime.now(dt.UTC).date().isoformat()
    created = private_bank.post(
        f"/v1/sandbox/accounts/{account['resourceId']}/transactions",
        json.dumps(
            {
                "transactionAmount": {"amount": "125.50", "currency": "NOK"},
                "creditorAccount": {"iban": row.iban},
                "debtorName": "Innbetaler",
                "bookingDate": today,
            }
        ),
    )
    assert created.status_code == 201, created.content
    after = balances()
    assert after["interimBooked"] == before["interimBooked"] + Decimal("125.50")
    assert after["closingBooked"] == before["closingBooked"]  # booked today: not in yesterday's closing
    assert after["expected"] == before["expected"] + Decimal("125.50")
    assert after["interimAvailable"] == after["expected"] + row.credit_limit
    card = private_bank.get("/v1/card-accounts").json()["cardAccounts"][0]
    card_row = Account.objects.get(resource_id=card["resourceId"])
    assert card_row.credit_limit > 0
    card_balances = private_bank.get(card["_links"]["balances"]["href"]).json()["balances"]
    by_type = {b["balanceType"]: Decimal(b["balanceAmount"]["amount"]) for b in card_balances}
    assert by_type["interimAvailable"] == by_type["expected"] + card_row.credit_limit


def test_the_unattended_window_is_24_hours(private_bank):
    account = _main(private_bank)
    private_bank.psu_ip = None
    href = account["_links"]["balances"]["href"]
    for _ in range(4):
        assert private_bank.get(href).status_code == 200
    private_bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": 86400 - 120}))
    assert private_bank.get(href).status_code == 429  # 23 h 58 min later: the four are still in the window
    private_bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": 121}))
    assert private_bank.get(href).status_code == 200


def test_the_largest_page_is_a_setting(private_bank, settings):
    account = _main(private_bank)
    base = f"{account['_links']['self']['href']}/transactions"
    assert private_bank.get(f"{base}?limit=1000").status_code == 200  # the default largest page
    too_big = private_bank.get(f"{base}?limit=1001")
    assert too_big.status_code == 400 and too_big.json()["tppMessages"][0]["path"] == "limit"
    settings.BANK_SIM_MAX_PAGE = 50
    refused = private_bank.get(f"{base}?limit=51")
    assert refused.status_code == 400 and error_code(refused) == "FORMAT_ERROR"
    assert "from 1 to 50" in refused.json()["tppMessages"][0]["text"]
    lists = _transactions(private_bank, account, "?limit=50")["transactions"]
    assert len(lists["booked"]) + len(lists["pending"]) == 50
    # Without limit the page is 200, or the largest page when that is smaller; the links say which.
    lists = _transactions(private_bank, account)["transactions"]
    assert len(lists["booked"]) + len(lists["pending"]) == 50
    assert "limit=50" in lists["_links"]["next"]["href"]


def test_openapi_states_the_largest_page(client, settings):
    settings.BANK_SIM_MAX_PAGE = 300
    document = client.get("/openapi.json").json()
    parameters = document["paths"]["/v1/accounts/{resourceId}/transactions"]["get"]["parameters"]
    (limit,) = [p for p in parameters if p["name"] == "limit"]
    assert limit["schema"]["maximum"] == 300
