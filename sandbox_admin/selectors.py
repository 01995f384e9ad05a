"""Reads of the sandbox bank's mock data (spec 4.2; docs/bank-interface.md, reference 1), audited for ``actor``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import BankAccount
from core.bank import bank_audit_context, bank_client
from sandbox_admin.errors import SandboxError, sandbox_error
from xs2a.errors import ResourceUnknownError, Xs2aError
from xs2a.models import SandboxClock, SandboxCustomer


@dataclass(frozen=True)
class CustomerListing:
    """One answer of GET /v1/sandbox/customers and how long it took (the bank says the flags make it slower)."""

    customers: list[SandboxCustomer]
    with_accounts: bool
    with_agreements: bool
    duration_ms: float  # wall time of the call as the portal saw it, retries included
    listed_at: datetime


@dataclass(frozen=True)
class KnownAccount:
    """What the portal knows of a sandbox account from its own records: the bank's sandbox answers give only
    the account's id (spec 2.8); its number and name come from the account as a customer's connection read it."""

    number: str  # the IBAN, else the BBAN, else the masked card number
    name: str


def known_accounts(customers: list[SandboxCustomer]) -> dict[str, KnownAccount]:
    """The accounts of ``customers`` (their accounts, card accounts and agreements' engagements) the portal has
    read, by the bank's id: one query, whatever the number of customers."""
    ids = set()
    for customer in customers:
        ids.update(customer.accounts, customer.card_accounts)
        for agreement in customer.agreements:
            ids.update(agreement.engagements)
    known: dict[str, KnownAccount] = {}
    rows = BankAccount.objects.filter(resource_id__in=sorted(ids)).order_by("-created_at", "-id")
    for row in rows.values("resource_id", "iban", "bban", "masked_pan", "name"):
        number = row["iban"] or row["bban"] or row["masked_pan"]
        if row["resource_id"] not in known and (number or row["name"]):  # the latest reading with something
            known[row["resource_id"]] = KnownAccount(number=number, name=row["name"])
    return known


class CustomerNotFound(SandboxError):
    pass


def sandbox_customers_list(*, actor, with_accounts: bool, with_agreements: bool) -> CustomerListing:
    try:
        with bank_audit_context(user=actor):
            client = bank_client()
            started = time.perf_counter()
            customers = client.sandbox.customers(with_accounts=with_accounts, with_agreements=with_agreements)
            duration_ms = (time.perf_counter() - started) * 1000
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the list")) from exc
    return CustomerListing(
        customers=customers,
        with_accounts=with_accounts,
        with_agreements=with_agreements,
        duration_ms=duration_ms,
        listed_at=timezone.now(),
    )


def sandbox_customer_get(*, actor, customer_id: str) -> SandboxCustomer:
    """One customer with its agreements, accounts and card accounts; ``CustomerNotFound`` if the bank has none."""
    try:
        with bank_audit_context(user=actor):
            return bank_client().sandbox.customer(customer_id)
    except ResourceUnknownError as exc:
        raise CustomerNotFound("The bank has no such sandbox customer.", request_id=exc.request_id) from exc
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the customer")) from exc


def sandbox_clock_read(*, actor) -> SandboxClock:
    """The bank's business time (GET /v1/sandbox/clock)."""
    try:
        with bank_audit_context(user=actor):
            return bank_client().sandbox.clock()
    except Xs2aError as exc:
        raise sandbox_error(exc, what=_("the clock")) from exc
