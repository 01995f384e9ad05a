"""Helpers of the payment tests: valid bodies, PSU identification, the payment SCA screens, the clock."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from django.test import Client

from bank_simulator import services as bank_services
from bank_simulator.models import Account, AccountKind
from tests.bank_simulator.conftest import Bank, redirect_params, run_sca, sca_path

CROSS = "/v1/payments/norwegian-cross-border-credit-transfers"
DOMESTIC = "/v1/payments/norwegian-domestic-credit-transfers"
# A moment on the business clock just after the 08:00 UTC batch slot (the next one is 11:00).
PINNED = dt.datetime(2030, 1, 7, 8, 0, 30, tzinfo=dt.UTC)
CREDITOR_IBAN = "DE89370400440532013000"
CREDITOR_BIC = "COBADEFFXXX"
NO_CREDITOR_BBAN = "12345678903"  # a Norwegian account number with a valid MOD11 check digit


def pin_clock(at: dt.datetime = PINNED) -> None:
    """Business time flows from ``at`` (real time + offset), so batch slots are far from test edges."""
    offset = at - dt.datetime.now(dt.UTC)
    bank_services.clock_set_offset(seconds=int(offset.total_seconds()))
    # The generated history's pending items are due by then: book them now, so balances move only by payments.
    bank_services.transactions_settle_due(today=at.date())


def account(customer_number: str, name: str) -> Account:
    return Account.objects.get(owner__customer_number=customer_number, name=name, kind=AccountKind.ACCOUNT)


def body(debtor: Account, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "instructedAmount": {"amount": "1250.00", "currency": "EUR"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAgent": CREDITOR_BIC,
        "creditorAccount": {"iban": CREDITOR_IBAN, "currency": "EUR"},
        "creditorAddress": {"street": "Hauptstraße", "buildingNumber": "1", "city": "Köln", "country": "DE"},
        "debtorAccount": {"iban": debtor.iban, "currency": debtor.currency},
        "remittanceInformationUnstructured": "Invoice 2030-001",
        "purposeCode": "SUPP",
    }
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def initiate(
    bank: Bank,
    data: dict[str, Any] | str,
    *,
    path: str = CROSS,
    query: str = "",
    headers: dict[str, str] | None = None,
):
    raw = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return bank.post(path + query, raw, headers={"x-accept-fix": "amount-as-string", **(headers or {})})


def identify(bank: Bank, identity: str, *, agreement_index: int = 0) -> dict[str, str]:
    """/v1/users: the PISP learns the PSU-ID (and corporate id) through an SCA."""
    response = bank.get("/v1/users")
    assert response.status_code == 200, response.content
    result = run_sca(
        Client(), response.json()["_links"]["scaRedirect"]["href"], identity, agreement_index=agreement_index
    )
    bank.psu_id = result.params["psu-id"]
    bank.corporate_id = result.params.get("psu-corporate-id")
    return result.params


def start_authorisation(bank: Bank, created: dict[str, Any], **kw: Any):
    return bank.post(created["_links"]["startAuthorisation"]["href"], None, **kw)


def open_sca(href: str, identity: str) -> tuple[Client, str, str]:
    """Identity and the pre-selected context; returns the browser, the path and the review screen's HTML."""
    browser = Client()
    path = sca_path(href)
    page = browser.get(path)
    assert page.status_code == 200, page.content[:300]
    page = browser.post(path, {"identity": identity, "action": "identify"})
    assert page.status_code == 200, page.content[:500]
    html = page.content.decode()
    chosen = re.search(r'name="agreement" value="([^"]+)"\s*checked', html)
    assert chosen, html[:800]
    page = browser.post(path, {"agreement": chosen.group(1), "action": "context"})
    assert page.status_code == 200, page.content[:500]
    return browser, path, page.content.decode()


def approve(href: str, identity: str) -> dict[str, str]:
    browser, path, _review = open_sca(href, identity)
    return redirect_params(browser.post(path, {"action": "approve"}))


def status_of(bank: Bank, created: dict[str, Any]) -> dict[str, Any]:
    response = bank.get(created["_links"]["status"]["href"])
    assert response.status_code == 200, response.content
    return response.json()


def run_batches(bank: Bank, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    response = bank.post("/v1/sandbox/batches/run", json.dumps(payload or {}))
    assert response.status_code == 200, response.content
    return response.json()


def next_batch(bank: Bank) -> dict[str, Any]:
    return run_batches(bank, {"untilNextBatch": True})
