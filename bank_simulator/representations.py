"""JSON shapes of the bank's answers (docs/bank-interface.md, reference 2; elsewhere Berlin Group 1.3's).

Amounts are decimal strings with the currency's ISO 4217 minor units (x-accept-fix amount-as-string is the
default since 2020). Links are relative to the base address and carry ``href`` and ``verbs``.
"""

from __future__ import annotations

import datetime as dt
import functools
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

import iso4217
from django.conf import settings
from django.http import HttpRequest

from bank_simulator.models import Account, Agreement, Customer, Transaction
from bank_simulator.selectors import Balances

# The bank's own cashAccountType labels, sent unless the client asks for ISO 20022 (x-accept-fix
# cash-account-type-iso).
_PROPRIETARY_CASH_ACCOUNT_TYPES = {"CACC": "CURRENT", "SVGS": "SAVINGS", "CARD": "CARD"}


@functools.lru_cache(maxsize=256)
def minor_units(currency: str) -> int:
    try:
        exponent = iso4217.Currency(currency).exponent
    except (ValueError, KeyError):
        return 2
    return 2 if exponent is None else int(exponent)


def amount(value: Decimal, currency: str) -> dict[str, str]:
    units = minor_units(currency)
    quantum = Decimal(1).scaleb(-units)
    return {"amount": str(value.quantize(quantum)), "currency": currency}


def link(href: str, *verbs: str) -> dict[str, Any]:
    return {"href": href, "verbs": list(verbs or ("GET",))}


def path_id(resource_id: str) -> str:
    return quote(resource_id, safe="!=-_.~")


def account_path(account: Account) -> str:
    prefix = "/v1/card-accounts/" if account.kind == "CARD" else "/v1/accounts/"
    return prefix + path_id(account.resource_id)


def account_reference(account: Account) -> dict[str, str]:
    if account.kind == "CARD":
        return {"maskedPan": account.masked_pan, "currency": account.currency}
    return {"bban": account.bban, "iban": account.iban, "currency": account.currency}


def account_json(account: Account, *, fixes: frozenset[str], balances: Balances | None = None) -> dict[str, Any]:
    base = account_path(account)
    if account.kind == "CARD":
        data: dict[str, Any] = {
            "resourceId": account.resource_id,
            "maskedPan": account.masked_pan,
            "currency": account.currency,
            "name": account.name,
            "product": account.product,
            "status": "enabled",
            "creditLimit": amount(account.credit_limit, account.currency),
        }
    else:
        cash_type = account.cash_account_type
        if "cash-account-type-iso" not in fixes:
            cash_type = _PROPRIETARY_CASH_ACCOUNT_TYPES.get(cash_type, cash_type)
        data = {
            "resourceId": account.resource_id,
            "bban": account.bban,
            "iban": account.iban,
            "currency": account.currency,
            "name": account.name,
            "product": account.product,
            "cashAccountType": cash_type,
            "bic": account.bic,
        }
    if balances is not None:
        data["balances"] = balances_list(balances, account.currency)
    data["_links"] = {
        "self": link(base),
        "balances": link(base + "/balances"),
        "transactions": link(base + "/transactions?bookingStatus=both"),
    }
    return data


def balances_list(balances: Balances, currency: str) -> list[dict[str, Any]]:
    day = balances.reference_date.isoformat()
    return [
        {
            "balanceAmount": amount(balances.closing_booked, currency),
            "balanceType": "closingBooked",
            "referenceDate": day,
        },
        {
            "balanceAmount": amount(balances.interim_booked, currency),
            "balanceType": "interimBooked",
            "referenceDate": day,
        },
        {
            "balanceAmount": amount(balances.interim_available, currency),
            "balanceType": "interimAvailable",
            "referenceDate": day,
        },
        {"balanceAmount": amount(balances.expected, currency), "balanceType": "expected", "referenceDate": day},
    ]


def balances_json(account: Account, balances: Balances) -> dict[str, Any]:
    key = "cardAccount" if account.kind == "CARD" else "account"
    return {key: account_reference(account), "balances": balances_list(balances, account.currency)}


def _counterparty(item: Transaction, data: dict[str, Any]) -> None:
    reference: dict[str, str] = {}
    if item.counterparty_iban:
        reference["iban"] = item.counterparty_iban
    if item.counterparty_bban:
        reference["bban"] = item.counterparty_bban
    role = "creditor" if item.amount < 0 else "debtor"
    if item.counterparty_name:
        data[f"{role}Name"] = item.counterparty_name
    if reference:
        data[f"{role}Account"] = reference


def transaction_json(item: Transaction, account: Account, *, details: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {"transactionId": item.transaction_id}
    if item.end_to_end_id:
        data["endToEndIdentification"] = item.end_to_end_id
    data["bookingDate"] = item.booking_date.isoformat()
    if item.value_date:
        data["valueDate"] = item.value_date.isoformat()
    data["transactionAmount"] = amount(item.amount, item.currency)
    _counterparty(item, data)
    if item.remittance_lines:
        data["remittanceInformationUnstructured"] = " ".join(item.remittance_lines)[:140]
        data["remittanceInformationUnstructuredArray"] = list(item.remittance_lines)
    if item.kid:
        data["kid"] = item.kid
    if item.bank_transaction_code:
        data["proprietaryBankTransactionCode"] = item.bank_transaction_code
    if details:
        if item.kid:
            data["remittanceInformationStructuredArray"] = [{"reference": item.kid, "referenceType": "KID"}]
        data.update(item.additional_information)
        if item.original_amount is not None:
            data["originalAmount"] = amount(item.original_amount, item.original_currency)
    if item.booking_status == "booked":
        data["_links"] = {
            "transactionDetails": link(f"{account_path(account)}/transactions/{path_id(item.transaction_id)}")
        }
    return data


def card_transaction_json(item: Transaction, account: Account) -> dict[str, Any]:
    """A card transaction: transactionAmount in the card account's currency, originalAmount as paid abroad."""
    data: dict[str, Any] = {
        "cardTransactionId": item.transaction_id,
        "transactionDate": item.booking_date.isoformat(),
        "bookingDate": item.booking_date.isoformat(),
        "transactionAmount": amount(item.amount, item.currency),
        "maskedPan": account.masked_pan,
        "transactionDetails": item.counterparty_name or " ".join(item.remittance_lines),
        "proprietaryBankTransactionCode": item.bank_transaction_code,
    }
    if item.original_amount is not None:
        data["originalAmount"] = amount(item.original_amount, item.original_currency)
    return data


def page_links(base: str, query: dict[str, str], *, offset: int, limit: int, more: bool) -> dict[str, Any]:
    def href(at: int) -> str:
        return f"{base}?{urlencode({**query, 'limit': str(limit), 'offset': str(at)})}"

    links: dict[str, Any] = {"account": link(base.rsplit("/transactions", 1)[0]), "first": link(href(0))}
    if offset > 0:
        links["previous"] = link(href(max(0, offset - limit)))
    if more:
        links["next"] = link(href(offset + limit))
    return links


def agreement_json(agreement: Agreement, *, with_engagements: bool = True) -> dict[str, Any]:
    base = f"/v1/sandbox/agreements/{agreement.agreement_id}"
    return {
        "id": str(agreement.agreement_id),
        "name": agreement.name,
        "context": agreement.context,
        "signersRequired": agreement.signers_required,
        "engagements": [a.resource_id for a in agreement.accounts.all()] if with_engagements else [],
        "_links": {"self": link(base), "engagements": link(base + "/engagements", "POST")},
    }


def customer_json(customer: Customer, *, with_accounts: bool, with_agreements: bool) -> dict[str, Any]:
    accounts = list(customer.accounts.all()) if with_accounts else []
    return {
        "customerId": customer.customer_id,
        "customerNumber": customer.customer_number,
        "customerType": customer.customer_type,
        "customerName": customer.name,
        "agreements": [agreement_json(a) for a in customer.agreements.all()] if with_agreements else [],
        "accounts": [a.resource_id for a in accounts if a.kind == "ACCOUNT"],
        "cardAccounts": [a.resource_id for a in accounts if a.kind == "CARD"],
        "_links": {"self": link(f"/v1/sandbox/customers/{path_id(customer.customer_id)}")},
    }


# --- the bank profile's way of writing answers (BANK_SIM_LINKS, BANK_SIM_DATETIMES) ----------------------------

_DATE_FIELDS = frozenset({"bookingDate", "valueDate", "transactionDate", "referenceDate"})
_LOCAL = ZoneInfo("Europe/Oslo")  # what a naive date-time of this bank means


def as_configured(body: Any, *, request: HttpRequest, now: dt.datetime) -> Any:
    """The answer as the bank profile writes it. The views write links below the base path (``/v1/...``) and
    dates as dates; root-relative links get the base path before them, absolute ones the request's scheme and
    host too; naive date-times write each date at midnight and give each balance a lastChangeDateTime (business
    time), all without a UTC offset, in the bank's local time. The defaults leave the answer as it is."""
    base = settings.BANK_SIM_BASE_PATH
    prefix = {"root-relative": base, "absolute": f"{request.scheme}://{request.get_host()}{base}"}.get(
        settings.BANK_SIM_LINKS, ""
    )
    stamp = None
    if settings.BANK_SIM_DATETIMES == "naive":
        stamp = now.astimezone(_LOCAL).replace(tzinfo=None).isoformat(timespec="seconds")
    if not prefix and stamp is None:
        return body
    return _rewrite(body, prefix, stamp)


def _rewrite(value: Any, prefix: str, stamp: str | None, *, in_links: bool = False) -> Any:
    if isinstance(value, list):
        return [_rewrite(item, prefix, stamp, in_links=in_links) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if in_links and key == "href" and isinstance(item, str) and item.startswith("/"):
            item = prefix + item
        elif stamp is not None and key in _DATE_FIELDS and isinstance(item, str) and len(item) == 10:
            item = f"{item}T00:00:00"
        else:
            item = _rewrite(item, prefix, stamp, in_links=in_links or key == "_links")
        out[key] = item
    if stamp is not None and "balanceType" in out and "lastChangeDateTime" not in out:
        out["lastChangeDateTime"] = stamp
    return out
