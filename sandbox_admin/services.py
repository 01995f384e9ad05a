"""Writes to the sandbox bank's mock data (spec 4.3; docs/bank-interface.md, reference 1), made by a staff member.

Each function sends one operation through the audited bank client (``bank_audit_context(user=actor)``) and turns
any bank error into a ``SandboxError`` carrying the bank's text. The portal's database is not written: the mock
data lives at the bank only. Logs name the opaque customerId, never the customerNumber (a national identity
number).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _

from core.bank import bank_audit_context, bank_client
from payments.services.polling import polls_after_bank_batches
from sandbox_admin.errors import SandboxError, sandbox_error
from xs2a.errors import Xs2aError
from xs2a.models import Account, Agreement, CardTransaction, SandboxClock, SandboxCustomer, Transaction

log = logging.getLogger(__name__)


def sandbox_customer_create(
    *, actor, customer_type: str, customer_number: str, customer_name: str
) -> SandboxCustomer:
    """POST /v1/sandbox/customers. A private customer gets its agreement from the bank at once."""
    body = {"customerType": customer_type, "customerNumber": customer_number, "customerName": customer_name}
    try:
        with bank_audit_context(user=actor):
            customer = bank_client().sandbox.create_customer(body)
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the customer")) from exc
    log.info("sandbox customer created", extra={"customer_id": customer.customer_id, "type": customer_type})
    return customer


def sandbox_agreement_create(
    *, actor, customer_id: str, name: str, signers_required: int, user_customer_ids: list[str]
) -> Agreement:
    """POST /v1/sandbox/agreements: a corporate agreement of the company ``customer_id``."""
    body = {
        "customerId": customer_id,
        "name": name,
        "signersRequired": signers_required,
        "userCustomerIds": list(user_customer_ids),
    }
    try:
        with bank_audit_context(user=actor):
            agreement = bank_client().sandbox.create_agreement(body)
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the agreement")) from exc
    log.info("sandbox agreement created", extra={"customer_id": customer_id})
    return agreement


def sandbox_agreement_engage(*, actor, agreement_id: str, account_id: str) -> Agreement:
    """POST /v1/sandbox/agreements/{id}/engagements: a company's account joins one of its agreements."""
    try:
        with bank_audit_context(user=actor):
            return bank_client().sandbox.add_engagements(agreement_id, {"accountId": account_id})
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the engagement")) from exc


@dataclass(frozen=True)
class AccountCreated:
    account: Account
    agreement_id: str | None  # the agreement it was added to, when asked and the bank agreed
    engagement_error: SandboxError | None  # the account exists, but the bank refused to add it to the agreement


def sandbox_account_create(
    *,
    actor,
    customer_id: str,
    account_type: str,
    currency: str,
    name: str,
    product: str = "",
    balance: Decimal | None = None,
    credit_limit: Decimal | None = None,
    agreement_id: str | None = None,
) -> AccountCreated:
    """POST /v1/sandbox/accounts, then (a company's account) the engagement in ``agreement_id``.

    A company's account is in no agreement until added to one (docs/bank-interface.md, reference 1); these are
    two bank calls, and when the second is refused the account exists without it: the result says so.
    """
    body: dict[str, Any] = {
        "customerId": customer_id,
        "accountType": account_type,
        "currency": currency,
        "name": name,
    }
    if product:
        body["product"] = product
    if balance is not None:
        body["balance"] = {"amount": balance, "currency": currency}
    if credit_limit is not None:
        body["creditLimit"] = {"amount": credit_limit, "currency": currency}
    try:
        with bank_audit_context(user=actor):
            account = bank_client().sandbox.create_account(body)
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the account")) from exc
    log.info("sandbox account created", extra={"customer_id": customer_id, "account_type": account_type})
    if not agreement_id:
        return AccountCreated(account=account, agreement_id=None, engagement_error=None)
    try:
        sandbox_agreement_engage(actor=actor, agreement_id=agreement_id, account_id=account.resource_id)
    except SandboxError as exc:
        return AccountCreated(account=account, agreement_id=None, engagement_error=exc)
    return AccountCreated(account=account, agreement_id=agreement_id, engagement_error=None)


def sandbox_mock_transaction_create(
    *,
    actor,
    account_id: str,
    amount: Decimal,
    currency: str,
    booking_status: str,
    booking_date: dt.date | None = None,
    counterparty_name: str = "",
    debtor_iban: str = "",
    creditor_iban: str = "",
    remittance: str = "",
    kid: str = "",
    end_to_end_id: str = "",
) -> Transaction | CardTransaction:
    """POST /v1/sandbox/accounts/{id}/transactions. The bank decides the sign: money out when the account is the
    debtor, else money in; it refuses when another of its accounts is the debtor."""
    if amount <= 0:
        raise ValueError("amount must be positive: the debtor and creditor give the direction")
    body: dict[str, Any] = {
        "transactionAmount": {"amount": amount, "currency": currency},
        "bookingStatus": booking_status,
    }
    optional = {
        "bookingDate": booking_date.isoformat() if booking_date else "",
        "counterpartyName": counterparty_name,
        "remittanceInformationUnstructured": remittance,
        "kid": kid,
        "endToEndIdentification": end_to_end_id,
    }
    body.update({key: value for key, value in optional.items() if value})
    if debtor_iban:
        body["debtorAccount"] = {"iban": debtor_iban}
    if creditor_iban:
        body["creditorAccount"] = {"iban": creditor_iban}
    try:
        with bank_audit_context(user=actor):
            created = bank_client().sandbox.create_mock_transaction(account_id, body)
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the transaction")) from exc
    log.info("sandbox mock transaction created", extra={"booking_status": booking_status})
    return created


def sandbox_reset(*, actor) -> list[SandboxCustomer]:
    """POST /v1/sandbox/initialize: back to the known state (docs/bank-interface.md, reference 1).

    Created customers are gone.
    """
    try:
        with bank_audit_context(user=actor):
            customers = bank_client().sandbox.initialize()
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the reset")) from exc
    log.warning("sandbox reset to its known state", extra={"customers": len(customers)})
    return customers


class ClockMove:
    """What the clock buttons ask the bank for: the seconds to move its clock forward before its batches run
    (``NEXT_BATCH``: up to the next scheduled batch; ``NOW``: no move, the due batches and one extra now)."""

    NOW = "now"
    HOUR = "hour"
    NEXT_BATCH = "next-batch"
    DAY = "day"
    SECONDS = {HOUR: 3600, DAY: 86400}


@dataclass(frozen=True)
class BatchesRun:
    clock: SandboxClock  # the bank's time after the move, its payment steps and its next batch
    polled: list[int]  # the portal's payments whose status is being read again at once


def sandbox_batches_run(*, actor, move: str) -> BatchesRun:
    """POST /v1/sandbox/batches/run: the bank's clock moves as ``move`` says (ClockMove) and its batches run;
    then the portal reads at once the status of every payment in flight (an open payment page follows), instead
    of waiting for the next batch time on the real clock."""
    if move not in (ClockMove.NOW, ClockMove.HOUR, ClockMove.NEXT_BATCH, ClockMove.DAY):
        raise ValueError(f"unknown clock move {move!r}")
    try:
        with bank_audit_context(user=actor):
            clock = bank_client().sandbox.run_batches(
                advance_seconds=ClockMove.SECONDS.get(move), until_next_batch=move == ClockMove.NEXT_BATCH
            )
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the batch run")) from exc
    polled = polls_after_bank_batches()
    log.info(
        "sandbox batches run",
        extra={"move": move, "payment_steps": clock.payment_steps, "payments_polled": len(polled)},
    )
    return BatchesRun(clock=clock, polled=polled)
