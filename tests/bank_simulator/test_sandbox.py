"""Sandbox mock-data operations and the known state (spec 1 and 4.2; docs/bank-interface.md, reference 1)."""

from __future__ import annotations

import ast
import io
import json
import uuid
from decimal import Decimal
from pathlib import Path

from django.core.management import call_command
from django.test import Client

from bank_simulator.models import Account, Agreement, Customer, PsuIdentity, Transaction
from tests.bank_simulator.conftest import (
    CORPORATE_1,
    CORPORATE_2,
    PRIVATE_1,
    PRIVATE_2,
    Bank,
    accounts_of,
    error_code,
    give_consent,
    sca_path,
)

NEW_PRIVATE = "01019000164"


def _customers(bank, query: str = "") -> list[dict]:
    response = bank.get(f"/v1/sandbox/customers{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_known_state_has_the_four_customers_of_facts(bank):
    customers = {c["customerNumber"]: c for c in _customers(bank, "?withAccounts=true&withAgreements=true")}
    assert set(customers) == {PRIVATE_1, PRIVATE_2, CORPORATE_1, CORPORATE_2}
    for number in (PRIVATE_1, PRIVATE_2):
        assert customers[number]["customerType"] == "PRIVATE"
        assert len(customers[number]["accounts"]) == 2
        assert len(customers[number]["cardAccounts"]) == 1
    for number in (CORPORATE_1, CORPORATE_2):
        assert customers[number]["customerType"] == "CORPORATE"
        assert len(customers[number]["accounts"]) == 2
        assert customers[number]["cardAccounts"] == []
        agreement = customers[number]["agreements"][0]
        assert set(agreement["engagements"]) == set(customers[number]["accounts"])
        assert agreement["_links"]["self"]["verbs"] == ["GET"]


def test_listing_is_lighter_without_accounts_and_agreements(bank):
    customer = _customers(bank)[0]
    assert customer["accounts"] == [] and customer["agreements"] == [] and customer["cardAccounts"] == []
    assert customer["_links"]["self"]["href"].startswith("/v1/sandbox/customers/")
    assert bank.get("/v1/sandbox/customers?withAccounts=yes").status_code == 400


def test_every_known_customer_has_a_year_of_history(bank):
    for account in Account.objects.filter(owner__customer_number__in=[PRIVATE_1, CORPORATE_1]):
        days = Transaction.objects.filter(account=account).dates("booking_date", "month")
        assert len(days) >= 12, account.name


def test_create_private_customer_gets_an_agreement_and_can_consent(bank):
    body = json.dumps({"customerNumber": NEW_PRIVATE, "customerType": "PRIVATE", "customerName": "Nina Ny"})
    created = bank.post("/v1/sandbox/customers", body)
    assert created.status_code == 201, created.content
    customer = created.json()
    assert customer["agreements"] and customer["agreements"][0]["context"] == "PRIVATE"
    account = bank.post(
        "/v1/sandbox/accounts",
        json.dumps(
            {
                "customerId": customer["customerId"],
                "currency": "NOK",
                "name": "Ny konto",
                "balance": {"amount": "1500.00", "currency": "NOK"},
            }
        ),
    )
    assert account.status_code == 201, account.content
    detail = bank.get(customer["_links"]["self"]["href"]).json()
    assert detail["accounts"] == [account.json()["resourceId"]]
    give_consent(bank, NEW_PRIVATE)
    balances = bank.get(accounts_of(bank)["Ny konto"]["_links"]["balances"]["href"]).json()["balances"]
    assert {b["balanceType"]: b["balanceAmount"]["amount"] for b in balances}["interimBooked"] == "1500.00"
    duplicate = bank.post("/v1/sandbox/customers", body)
    assert duplicate.status_code == 409
    assert error_code(duplicate) == "CONFLICT"


def test_corporate_account_must_be_added_to_an_agreement(bank):
    company = bank.post(
        "/v1/sandbox/customers",
        json.dumps({"customerNumber": "923609016", "customerType": "CORPORATE", "customerName": "Ny Bedrift AS"}),
    ).json()
    assert company["agreements"] == []
    agreement = bank.post(
        "/v1/sandbox/agreements",
        json.dumps({"customerId": company["customerId"], "name": "Ny Bedrift - nettbank"}),
    ).json()
    account = bank.post(
        "/v1/sandbox/accounts",
        json.dumps({"customerId": company["customerId"], "currency": "NOK", "name": "Driftskonto"}),
    ).json()
    assert account["agreements"] == []
    response = bank.post(
        agreement["_links"]["engagements"]["href"], json.dumps({"accountId": account["resourceId"]})
    )
    assert response.status_code == 200
    assert response.json()["engagements"] == [account["resourceId"]]
    # An account of someone else cannot be added.
    foreign = Account.objects.filter(owner__customer_number=PRIVATE_1).first()
    response = bank.post(
        agreement["_links"]["engagements"]["href"], json.dumps({"accountId": foreign.resource_id})
    )
    assert response.status_code == 400
    # Agreements are for corporate customers only.
    private = Customer.objects.get(customer_number=PRIVATE_1)
    response = bank.post("/v1/sandbox/agreements", json.dumps({"customerId": private.customer_id, "name": "x"}))
    assert response.status_code == 400


def test_mock_transactions_and_debtor_rule(bank):
    main = Account.objects.get(owner__customer_number=PRIVATE_1, name="Brukskonto")
    other = Account.objects.get(owner__customer_number=PRIVATE_2, product="Brukskonto")
    before = main.booked_balance
    url = f"/v1/sandbox/accounts/{main.resource_id}/transactions"
    debit = bank.post(
        url,
        json.dumps(
            {
                "transactionAmount": {"amount": "250.00", "currency": "NOK"},
                "debtorAccount": {"iban": main.iban},
                "creditorAccount": {"iban": "NO9386011117947"},
                "counterpartyName": "Rema 1000",
                "kid": "12345674",
            }
        ),
    )
    assert debit.status_code == 201, debit.content
    assert debit.json()["transactionAmount"] == {"amount": "-250.00", "currency": "NOK"}
    credit = bank.post(
        url,
        json.dumps(
            {
                "transactionAmount": {"amount": "1000.00", "currency": "NOK"},
                "debtorAccount": {"iban": "NO9386011117947"},
                "counterpartyName": "Bestemor",
            }
        ),
    )
    assert credit.status_code == 201
    main.refresh_from_db()
    assert main.booked_balance == before - Decimal("250") + Decimal("1000")
    refused = bank.post(
        url,
        json.dumps(
            {
                "transactionAmount": {"amount": "10.00", "currency": "NOK"},
                "debtorAccount": {"iban": other.iban},
            }
        ),
    )
    assert refused.status_code == 400
    assert refused.json()["tppMessages"][0]["path"] == "debtorAccount"
    wrong_digits = bank.post(url, json.dumps({"transactionAmount": {"amount": "10.001", "currency": "NOK"}}))
    assert wrong_digits.status_code == 400
    as_number = bank.post(url, json.dumps({"transactionAmount": {"amount": 10, "currency": "NOK"}}))
    assert as_number.status_code == 400
    unknown = bank.post(
        "/v1/sandbox/accounts/enc!!none==/transactions",
        json.dumps({"transactionAmount": {"amount": "1.00", "currency": "NOK"}}),
    )
    assert unknown.status_code == 404


def test_balance_updates_for_accounts_and_card_accounts(bank):
    main = Account.objects.get(owner__customer_number=PRIVATE_1, name="Brukskonto")
    card = Account.objects.get(owner__customer_number=PRIVATE_1, kind="CARD")
    response = bank.post(
        f"/v1/sandbox/accounts/{main.resource_id}/balances",
        json.dumps({"balanceAmount": {"amount": "42.50", "currency": "NOK"}}),
    )
    assert response.status_code == 200
    assert {b["balanceType"]: b["balanceAmount"]["amount"] for b in response.json()["balances"]}[
        "interimBooked"
    ] == "42.50"
    response = bank.post(
        f"/v1/sandbox/card-accounts/{card.resource_id}/balances",
        json.dumps({"balanceAmount": {"amount": "-1200.00", "currency": "NOK"}}),
    )
    assert response.status_code == 200
    assert response.json()["cardAccount"]["maskedPan"] == card.masked_pan
    response = bank.post(
        f"/v1/sandbox/accounts/{main.resource_id}/balances",
        json.dumps({"balanceAmount": {"amount": "1.00", "currency": "EUR"}}),
    )
    assert response.status_code == 400


def test_initialize_resets_to_the_known_state(bank):
    bank.post(
        "/v1/sandbox/customers",
        json.dumps({"customerNumber": NEW_PRIVATE, "customerType": "PRIVATE", "customerName": "Nina Ny"}),
    )
    ids_before = set(Transaction.objects.filter(booking_status="booked").values_list("transaction_id", flat=True))
    response = bank.post("/v1/sandbox/initialize", None)
    assert response.status_code == 200, response.content
    assert response.status_code == 200
    assert {c["customerNumber"] for c in response.json()["customers"]} == {
        PRIVATE_1,
        PRIVATE_2,
        CORPORATE_1,
        CORPORATE_2,
    }
    assert not Customer.objects.filter(customer_number=NEW_PRIVATE).exists()
    ids_after = set(Transaction.objects.filter(booking_status="booked").values_list("transaction_id", flat=True))
    assert ids_after == ids_before  # same seed, same day: the same history with the same ids


def test_sandbox_flag_off_makes_sandbox_operations_404(bank, settings):
    settings.BANK_SIM_SANDBOX = False
    for method, path in [
        ("GET", "/v1/sandbox/customers"),
        ("POST", "/v1/sandbox/initialize"),
        ("POST", "/v1/sandbox/customers"),
        ("GET", "/v1/sandbox/clock"),
    ]:
        response = bank.request(method, path, json_body="{}" if method == "POST" else None)
        assert response.status_code == 404
        assert error_code(response) == "NOT_FOUND"
    assert bank.get("/v1/users").status_code == 200  # the production API is still there


def test_clock_advances_only_forward(bank):
    before = bank.get("/v1/sandbox/clock").json()
    response = bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": 3600}))
    assert response.json()["offsetSeconds"] == before["offsetSeconds"] + 3600
    assert bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": -5})).status_code == 400


def test_sandbox_initialize_command_if_empty(db):
    out = io.StringIO()
    call_command("sandbox_initialize", "--if-empty", stdout=out)
    assert "left as it is" in out.getvalue()
    Customer.objects.all().delete()
    call_command("sandbox_initialize", "--if-empty", stdout=out)
    assert Customer.objects.count() == 4
    assert "4 customers" in out.getvalue()


def test_sca_screen_is_html_for_the_psu(bank):
    href = bank.post("/v1/bank-offered-consents", "{}").json()["_links"]["scaRedirect"]["href"]
    page = Client().get(sca_path(href))
    assert page["Content-Type"].startswith("text/html")
    assert page["X-Frame-Options"] == "DENY"
    assert "National identity number" in page.content.decode()


def test_the_simulator_imports_nothing_of_the_portal():
    root = Path(__file__).resolve().parents[2] / "bank_simulator"
    forbidden = {
        "xs2a",
        "tpp_portal",
        "core",
        "users",
        "connections",
        "accounts",
        "payments",
        "staff",
        "sandbox_admin",
    }
    for source in root.rglob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            assert not {n.split(".")[0] for n in names} & forbidden, f"{source}: {names}"


def test_malformed_agreement_id_is_404(bank):
    response = bank.post("/v1/sandbox/agreements/" + "-" * 36 + "/engagements", json.dumps({"accountId": "x"}))
    assert response.status_code == 404
    assert error_code(response) == "RESOURCE_UNKNOWN"


# --- identifiers: random, kept per TPP and customer, kept across resets -------------------------------------


def test_psu_ids_and_agreement_ids_are_random_uuids(bank):
    private = give_consent(bank, PRIVATE_1).params
    corporate = give_consent(Bank(Client(), bank.signer), CORPORATE_1).params
    for value in (private["psu-id"], corporate["psu-id"], corporate["psu-corporate-id"]):
        assert uuid.UUID(value).version == 4, value  # not uuid5 of a seed, a customer number or a TPP name
    assert {uuid.UUID(str(a)).version for a in Agreement.objects.values_list("agreement_id", flat=True)} == {4}


def test_a_psu_id_is_not_derived_from_the_tpp_and_the_customer(bank):
    """A bank without a record of this TPP and customer gives another PSU-ID (a derived one would repeat)."""
    first = give_consent(bank, PRIVATE_1).params["psu-id"]
    PsuIdentity.objects.all().delete()
    again = give_consent(Bank(Client(), bank.signer), PRIVATE_1).params["psu-id"]
    assert again != first
    assert give_consent(Bank(Client(), bank.signer), PRIVATE_1).params["psu-id"] == again  # then it persists


def _identifiers() -> dict[str, object]:
    return {
        "customers": sorted(Customer.objects.values_list("customer_number", "customer_id")),
        "agreements": sorted(
            (
                a.owner.customer_number,
                a.context,
                str(a.agreement_id),
                sorted(u.customer_number for u in a.users.all()),
            )
            for a in Agreement.objects.select_related("owner").prefetch_related("users")
        ),
        "accounts": sorted(Account.objects.values_list("resource_id", "iban")),
        "psus": sorted(
            (p.tpp_org_id, p.customer.customer_number, str(p.psu_id))
            for p in PsuIdentity.objects.select_related("customer")
        ),
    }


def test_a_reset_keeps_the_known_customers_identifiers_and_is_idempotent(bank):
    private = give_consent(bank, PRIVATE_1).params
    company = Bank(Client(), bank.signer)
    corporate = give_consent(company, CORPORATE_1).params
    created = bank.post(
        "/v1/sandbox/customers",
        json.dumps({"customerNumber": NEW_PRIVATE, "customerType": "PRIVATE", "customerName": "Nina Ny"}),
    ).json()
    before = _identifiers()
    assert bank.post("/v1/sandbox/initialize", None).status_code == 200
    after = _identifiers()
    assert not Customer.objects.filter(customer_id=created["customerId"]).exists()  # manual customers go
    known = {k: [row for row in v if NEW_PRIVATE not in str(row)] for k, v in before.items()}
    assert after == known
    assert bank.post("/v1/sandbox/initialize", None).status_code == 200
    assert _identifiers() == after  # a second reset changes nothing
    # The TPP's identifiers still name the same PSU and agreement: the consent is gone, the PSU is known.
    response = company.get("/v1/accounts", headers={"TPP-Session-ID": None})  # the reset ended its session too
    assert response.status_code == 401 and error_code(response) == "CONSENT_UNKNOWN"
    assert give_consent(bank, PRIVATE_1).params["psu-id"] == private["psu-id"]
    again = give_consent(company, CORPORATE_1).params
    assert (again["psu-id"], again["psu-corporate-id"]) == (corporate["psu-id"], corporate["psu-corporate-id"])


def test_latency_is_added_to_every_answer_but_the_health_check(bank, settings, monkeypatch):
    import time

    from bank_simulator import middleware

    slept: list[float] = []
    monkeypatch.setattr(middleware.time, "sleep", slept.append)
    assert bank.get("/v1/sandbox/customers").status_code == 200
    assert slept == []  # default 0: no wait
    settings.BANK_SIM_LATENCY_MS = 150
    assert bank.get("/v1/sandbox/customers").status_code == 200
    href = bank.post("/v1/bank-offered-consents", "{}").json()["_links"]["scaRedirect"]["href"]
    assert slept == [0.15, 0.15]
    assert Client().get(sca_path(href)).status_code == 200  # the SCA screens too
    assert Client().get("/healthz").status_code == 200
    assert slept == [0.15, 0.15, 0.15]
    monkeypatch.undo()  # the real sleep again
    started = time.monotonic()
    assert bank.get("/v1/sandbox/customers").status_code == 200
    assert time.monotonic() - started >= 0.15
