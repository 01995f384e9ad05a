"""Steps of a payment's life through the portal against the running sandbox bank, shared by the live tests and
the benchmark of status polling: a payment drafted from the form, sent from the review page, approved at the
bank's SCA screens, and the bank's batches run."""

from __future__ import annotations

from accounts.models import BankAccount
from core.bank import bank_client
from payments.models import Payment
from tests.live_bank import BankBrowser, callback_target

PRIVATE_2 = "12085592767"  # Private Customer 2: also a user of Havbruk Nord AS's agreement
CORPORATE_2 = "20079518612"  # Havbruk Nord AS: its agreement needs two signers


def account_named(user, name: str) -> BankAccount:
    return BankAccount.objects.get(connection__user=user, name=name)


def cross_border(debtor_key: str, **changes) -> dict[str, str]:
    """The form of a cross-border payment: 150 000 NOK to a German IBAN with regulatory code 29."""
    data = {
        "debtor_account": debtor_key,
        "amount": "150000",
        "currency": "NOK",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": "DE89 3704 0044 0532 0130 00",
        "creditor_agent": "COBADEFFXXX",
        "creditor_country": "DE",
        "creditor_city": "München",
        "remittance_information": "Invoice 2026-114",
        "regulatory_reporting_code": "29",
        "regulatory_reporting_information": "Engineering services",
    }
    data.update(changes)
    return data


def draft(client, data: dict, url: str = "/payments/new/") -> Payment:
    response = client.post(url, data)
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    return Payment.objects.get(pk=int(response["Location"].strip("/").split("/")[1]))


def send(client, payment: Payment) -> str:
    """Post the review page; returns the bank's SCA address the portal sends the browser to."""
    sent = client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})
    assert sent.status_code == 302, sent
    return sent["Location"]


def approve_at_bank(client, location: str, *, identity: str, context: str = "PRIVATE"):
    """The PSU approves at the bank's screens; the bank's redirect back is followed in the portal."""
    path, params = callback_target(BankBrowser().authorise(location, identity=identity, context=context))
    assert path == "/bank/callback"
    return client.get(path, params)


def run_batches() -> dict:
    """The sandbox control that runs the bank's batches now (the ones due, then one extra)."""
    ran = bank_client().request("POST", "/v1/sandbox/batches/run", json_body={})
    assert ran.status == 200, ran.body
    return ran.json()
