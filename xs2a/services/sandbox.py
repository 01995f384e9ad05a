"""The sandbox's mock-data operations (everything under /v1/sandbox; not part of the production interface),
kept apart from the production operations: ``client.sandbox``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xs2a import models
from xs2a.links import path_from_template
from xs2a.services.base import Service, text_bool

__all__ = ["SandboxService"]


def _customers(data: Any) -> list[models.SandboxCustomer]:
    return models.read_list(data, "customers", models.SandboxCustomer.from_json, "customers")


class SandboxService(Service):
    """``client.sandbox``: customers, accounts, agreements, mock transactions, initialisation (spec 4.2, 4.3;
    docs/bank-interface.md, reference 1), the business clock and the payment batches."""

    def clock(self) -> models.SandboxClock:
        """GET /v1/sandbox/clock: the bank's business time and its offset from the real clock."""
        return self._requester.call("GET", "/v1/sandbox/clock", reader=models.SandboxClock.from_json)

    def run_batches(
        self, *, advance_seconds: int | None = None, until_next_batch: bool = False
    ) -> models.SandboxClock:
        """POST /v1/sandbox/batches/run. Without arguments: the batches that are due, then one extra batch now;
        ``advance_seconds``: the clock moves forward and every batch passed runs; ``until_next_batch``: the clock
        moves to the next scheduled batch, which runs."""
        if advance_seconds is not None and until_next_batch:
            raise ValueError("advance_seconds or until_next_batch, not both")
        body: dict[str, Any] = {}
        if advance_seconds is not None:
            body["advanceSeconds"] = advance_seconds
        if until_next_batch:
            body["untilNextBatch"] = True
        return self._requester.call(
            "POST", "/v1/sandbox/batches/run", reader=models.SandboxClock.from_json, json_body=body
        )

    def customers(
        self, *, with_accounts: bool = False, with_agreements: bool = False
    ) -> list[models.SandboxCustomer]:
        """GET /v1/sandbox/customers."""
        query = {"withAccounts": text_bool(with_accounts), "withAgreements": text_bool(with_agreements)}
        return self._requester.call("GET", "/v1/sandbox/customers", reader=_customers, query=query)

    def customer(self, customer_id: str) -> models.SandboxCustomer:
        """GET /v1/sandbox/customers/{customer_id}."""
        path = path_from_template("/v1/sandbox/customers/{customer_id}", customer_id=customer_id)
        return self._requester.call("GET", path, reader=models.SandboxCustomer.from_json)

    def create_customer(self, customer: Mapping[str, Any]) -> models.SandboxCustomer:
        """POST /v1/sandbox/customers. The customerNumber (a national identity or organisation number) is kept
        out of the audit record."""
        number = str(customer.get("customerNumber") or "")
        return self._requester.call(
            "POST",
            "/v1/sandbox/customers",
            reader=models.SandboxCustomer.from_json,
            json_body=dict(customer),
            redact=[number],
        )

    def initialize(self) -> list[models.SandboxCustomer]:
        """POST /v1/sandbox/initialize: resets the sandbox to its known state (removes created customers)."""
        return self._requester.call(
            "POST", "/v1/sandbox/initialize", reader=lambda d: [] if d is None else _customers(d)
        )

    def create_account(self, account: Mapping[str, Any]) -> models.Account:
        """POST /v1/sandbox/accounts."""
        return self._requester.call(
            "POST",
            "/v1/sandbox/accounts",
            reader=lambda d: models.Account.from_json(d.get("account", d) if isinstance(d, dict) else d),
            json_body=dict(account),
        )

    def create_agreement(self, agreement: Mapping[str, Any]) -> models.Agreement:
        """POST /v1/sandbox/agreements."""
        return self._requester.call(
            "POST", "/v1/sandbox/agreements", reader=models.Agreement.from_json, json_body=dict(agreement)
        )

    def add_engagements(self, agreement_id: str, engagements: Mapping[str, Any]) -> models.Agreement:
        """POST /v1/sandbox/agreements/{agreement_id}/engagements."""
        path = path_from_template("/v1/sandbox/agreements/{agreement_id}/engagements", agreement_id=agreement_id)
        return self._requester.call("POST", path, reader=models.Agreement.from_json, json_body=dict(engagements))

    def create_mock_transaction(
        self, account_id: str, transaction: Mapping[str, Any]
    ) -> models.Transaction | models.CardTransaction:
        """POST /v1/sandbox/accounts/{account_id}/transactions (rejected when another account is the debtor)."""
        path = path_from_template("/v1/sandbox/accounts/{account_id}/transactions", account_id=account_id)
        return self._requester.call(
            "POST",
            path,
            reader=lambda d: (
                models.CardTransaction.from_json(d)
                if isinstance(d, dict) and "cardTransactionId" in d
                else models.Transaction.from_json(d)
            ),
            json_body=dict(transaction),
        )
