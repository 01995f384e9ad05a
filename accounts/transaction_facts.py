"""What the page of one transaction (accounts/views.py transaction_detail) shows of the bank's record: the
parties, the dates, the references and every other field the bank sent, as text."""

from __future__ import annotations

import dataclasses
from datetime import date
from decimal import Decimal
from typing import Any

from accounts.models import Transaction

#: Fields of the bank's records never shown to the user: opaque ids (not references anyone can use) and links.
_HIDDEN_FIELDS = frozenset({"transactionId", "cardTransactionId", "resourceId", "_links"})


@dataclasses.dataclass(frozen=True)
class Party:
    """The payer or the recipient of a transaction as the bank names them."""

    name: str = ""
    account: str = ""


@dataclasses.dataclass(frozen=True)
class TransactionFacts:
    """What the transaction page shows, in the page's words: the transaction list's record, and over it the
    bank's details record where the bank gave one (its fields win; some are only there)."""

    debtor: Party | None
    creditor: Party | None
    booking_date: date | None
    value_date: date | None
    message: str
    kid: str
    references: list[str]  # structured remittance references other than a KID
    end_to_end_id: str
    entry_reference: str  # the bank's own reference of the entry, where it gives one
    original_amount: tuple[Decimal, str] | None
    bank_information: list[str]  # additionalInformation / additionalInformationProprietaryN
    bank_transaction_code: str
    record: list[tuple[str, str]]  # everything the bank sent, as (field, value), opaque ids and links left out


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _account_text(reference: Any) -> str:
    if not isinstance(reference, dict):
        return ""
    for key in ("iban", "bban", "maskedPan", "pan", "msisdn"):
        text = _text(reference.get(key))
        if text:
            return text
    return ""


def _day(value: Any, fallback: date | None) -> date | None:
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            pass
    return fallback


def _record_pairs(raw: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A bank record as (field, value) pairs, nested fields as ``a.b``, lists as ``a[0]``."""
    pairs: list[tuple[str, str]] = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            if (not prefix and key in _HIDDEN_FIELDS) or key == "_links":
                continue
            pairs.extend(_record_pairs(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(raw, list):
        for index, value in enumerate(raw):
            pairs.extend(_record_pairs(value, f"{prefix}[{index}]"))
    elif raw is not None and raw != "":
        pairs.append((prefix, str(raw)))
    return pairs


def _party(record: dict[str, Any], role: str) -> Party | None:
    name = _text(record.get(f"{role}Name"))
    account = _account_text(record.get(f"{role}Account"))
    return Party(name=name, account=account) if name or account else None


def transaction_facts(*, transaction: Transaction, details: dict[str, Any] | None) -> TransactionFacts:
    """The facts of one transaction for its page, from the stored row and the bank's details record."""
    tx = transaction
    listed = tx.raw if isinstance(tx.raw, dict) else {}
    record = {**listed, **(details or {})}
    debtor, creditor = _party(record, "debtor"), _party(record, "creditor")
    if debtor is None and creditor is None and (tx.counterparty_name or tx.counterparty_account):
        counterparty = Party(name=tx.counterparty_name, account=tx.counterparty_account)
        if tx.amount < 0:
            creditor = counterparty
        else:
            debtor = counterparty
    lines = [line for line in record.get("remittanceInformationUnstructuredArray") or [] if _text(line)]
    message = "\n".join(_text(line) for line in lines) or _text(record.get("remittanceInformationUnstructured"))
    kid = ""
    references: list[str] = []
    structured = record.get("remittanceInformationStructuredArray") or []
    if record.get("remittanceInformationStructured"):
        structured = [*structured, record["remittanceInformationStructured"]]
    for item in structured if isinstance(structured, list) else []:
        reference = _text(item.get("reference")) if isinstance(item, dict) else _text(item)
        kind = _text(item.get("referenceType")).upper() if isinstance(item, dict) else ""
        if reference and kind == "KID" and not kid:
            kid = reference
        elif reference and reference not in references:
            references.append(reference)
    kid = kid or tx.kid or _text(record.get("kid") or record.get("KID"))
    original = record.get("originalAmount")
    original_amount = None
    if isinstance(original, dict) and _text(original.get("currency")):
        try:
            original_amount = (Decimal(str(original.get("amount"))), _text(original.get("currency")))
        except ArithmeticError:
            original_amount = None
    information = [_text(record.get("additionalInformation"))] + [
        _text(record[key]) for key in sorted(record) if key.startswith("additionalInformationProprietary")
    ]
    codes = [_text(record.get("proprietaryBankTransactionCode")), _text(record.get("bankTransactionCode"))]
    return TransactionFacts(
        debtor=debtor,
        creditor=creditor,
        booking_date=_day(record.get("bookingDate"), tx.booking_date),
        value_date=_day(record.get("valueDate"), tx.value_date),
        message=message or tx.remittance,
        kid=kid,
        references=references,
        end_to_end_id=_text(record.get("endToEndIdentification")) or tx.end_to_end_id,
        entry_reference=_text(record.get("entryReference")),
        original_amount=original_amount,
        bank_information=[text for text in information if text],
        bank_transaction_code=" / ".join(code for code in codes if code),
        record=_record_pairs(record),
    )
