"""What the review page (and the payment's page) lists of a payment's frozen body (the same bytes are what is
signed and sent): every field the bank receives, in plain words: codes by their names, the execution date as a
date, the account paid from with its name where the user's consent covers it. The pages group account numbers
for reading (payment_format's ``account_number``); the values here are the body's own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from payments.models import Payment
from payments.spec import purpose_code_name, regulatory_code_name


@dataclass(frozen=True)
class InstructionFacts:
    amount: str
    currency: str
    creditor_name: str
    creditor_account: str
    creditor_account_currency: str  # only where it differs from the payment's currency
    creditor_agent: str
    creditor_address: dict | None
    debtor_account: str
    debtor_currency: str
    debtor_name: str  # the account's name at the bank, with its company's, where the user's consent covers it
    remittance: str
    kid: str
    purpose: str
    execution_date: date | None
    regulatory_code: str
    regulatory_information: str


def _kid(body: dict) -> str:
    for entry in body.get("remittanceInformationStructuredArray") or []:
        if isinstance(entry, dict) and entry.get("referenceType") == "KID":
            return entry.get("reference", "")
    return ""


def _date(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def _account_name(account: Any) -> str:
    if account is None or not account.name:
        return ""
    company = account.company
    return f"{account.name} ({company})" if company and company != account.name else account.name


def instruction_facts(payment: Payment, *, debtor_account: Any = None) -> InstructionFacts:
    """The review page's list of ``payment``'s body; ``debtor_account`` is the user's BankAccount it is paid
    from, where a consent covers it (None: the number alone)."""
    try:
        body = json.loads(payment.body_json or "{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    amount = body.get("instructedAmount") or {}
    creditor = body.get("creditorAccount") or {}
    debtor = body.get("debtorAccount") or {}
    currency = amount.get("currency", "")
    creditor_currency = creditor.get("currency", "")
    purpose = body.get("purposeCode", "")
    regulatory_code = body.get("regulatoryReportingCode", "")
    return InstructionFacts(
        amount=amount.get("amount", ""),
        currency=currency,
        creditor_name=body.get("creditorName", ""),
        creditor_account=creditor.get("iban") or creditor.get("bban", ""),
        creditor_account_currency=creditor_currency if creditor_currency != currency else "",
        creditor_agent=body.get("creditorAgent", ""),
        creditor_address=body.get("creditorAddress"),
        debtor_account=debtor.get("iban") or debtor.get("bban", ""),
        debtor_currency=debtor.get("currency", ""),
        debtor_name=_account_name(debtor_account),
        remittance=body.get("remittanceInformationUnstructured", ""),
        kid=_kid(body),
        purpose=purpose_code_name(purpose) if purpose else "",
        execution_date=_date(body.get("requestedExecutionDate")),
        regulatory_code=regulatory_code_name(regulatory_code) if regulatory_code else "",
        regulatory_information=body.get("regulatoryReportingInformation", ""),
    )
