"""Sandbox mock data (spec 1 and 4.2; docs/bank-interface.md, reference 1); 404 when BANK_SIM_SANDBOX is off."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from django.http import JsonResponse
from stdnum.no import fodselsnummer, orgnr

from bank_simulator import clock, selectors, services
from bank_simulator import representations as rep
from bank_simulator.access import ApiRequest, bool_query, endpoint
from bank_simulator.errors import ApiError, format_error
from bank_simulator.models import Account, AccountKind, Agreement, BookingStatus, Customer, CustomerType
from bank_simulator.services import DomainError, MockTransaction

SANDBOX = {"roles": None, "sandbox": True}
_CURRENCY = re.compile(r"^[A-Z]{3}$")


def _domain(error: DomainError) -> ApiError:
    return format_error(error.field or "body", str(error))


def _object(api: ApiRequest) -> dict[str, Any]:
    if not isinstance(api.body, dict):
        raise format_error("body", "A JSON object is expected.")
    return api.body


def _string(
    data: dict[str, Any], name: str, *, required: bool = True, max_length: int = 140, path: str | None = None
) -> str:
    value = data.get(name)
    if value is None:
        if required:
            raise format_error(path or name, f"{path or name} is required.")
        return ""
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > max_length:
        raise format_error(path or name, f"{path or name} must be a string of at most {max_length} characters.")
    return value


def _amount(
    data: Any, path: str, *, currency_required: bool = True, allow_negative: bool = False
) -> tuple[Decimal, str]:
    if not isinstance(data, dict):
        raise format_error(path, f"{path} must be an object with amount and currency.")
    raw = data.get("amount")
    currency = data.get("currency")
    if not isinstance(currency, str) or not _CURRENCY.match(currency):
        raise format_error(f"{path}.currency", "currency must be an ISO 4217 code.")
    if not isinstance(raw, str):
        raise format_error(f"{path}.amount", "amount must be a decimal number written as a string.")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise format_error(f"{path}.amount", "amount must be a decimal number written as a string.") from None
    if not value.is_finite() or not re.fullmatch(r"-?[0-9]{1,18}(\.[0-9]+)?", raw):
        raise format_error(f"{path}.amount", "amount must be a decimal number written as a string.")
    units = rep.minor_units(currency)
    if -value.as_tuple().exponent > units:  # type: ignore[operator]
        raise format_error(f"{path}.amount", f"{currency} amounts have at most {units} fraction digits.")
    if value < 0 and not allow_negative:
        raise format_error(f"{path}.amount", "amount must not be negative.")
    return value, currency


def _customer(customer_id: str) -> Customer:
    customer = Customer.objects.filter(customer_id=customer_id).first()
    if customer is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such sandbox customer.", path="customerId")
    return customer


def _mock_account(resource_id: str, kind: str | None = None) -> Account:
    qs = Account.objects.filter(resource_id=resource_id)
    if kind:
        qs = qs.filter(kind=kind)
    account = qs.first()
    if account is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such mock account.", path="mockAccountId")
    return account


@endpoint(**SANDBOX)
def initialize(api: ApiRequest) -> tuple[int, Any]:
    customers = services.sandbox_initialize(now=api.now)
    return 200, {"customers": [rep.customer_json(c, with_accounts=True, with_agreements=True) for c in customers]}


@endpoint(**SANDBOX)
def customers_list(api: ApiRequest) -> JsonResponse:
    with_accounts = bool_query(api, "withAccounts")
    with_agreements = bool_query(api, "withAgreements")
    rows = selectors.customers_list(with_accounts=with_accounts, with_agreements=with_agreements)
    return JsonResponse(
        [rep.customer_json(c, with_accounts=with_accounts, with_agreements=with_agreements) for c in rows],
        safe=False,
    )


@endpoint(**SANDBOX, body="json")
def customer_create(api: ApiRequest) -> tuple[int, Any]:
    data = _object(api)
    customer_type = _string(data, "customerType", max_length=10)
    if customer_type not in CustomerType.values:
        raise format_error("customerType", "customerType must be PRIVATE or CORPORATE.")
    number = _string(data, "customerNumber", max_length=11)
    ascii_digits = re.fullmatch(r"[0-9]{9,11}", number) is not None
    valid = ascii_digits and (
        fodselsnummer.is_valid(number) or (customer_type == CustomerType.CORPORATE and orgnr.is_valid(number))
    )
    if not valid:
        raise format_error(
            "customerNumber",
            "customerNumber must be a valid Norwegian national identity number (or organisation number for "
            "a corporate customer).",
        )
    name = _string(data, "customerName", max_length=140)
    try:
        customer = services.customer_create(
            customer_number=number, customer_type=customer_type, name=name, now=api.now
        )
    except DomainError as error:
        if error.field == "customerNumber":
            raise ApiError(409, "CONFLICT", str(error), path="customerNumber") from None
        raise _domain(error) from None
    return 201, rep.customer_json(customer, with_accounts=True, with_agreements=True)


@endpoint(**SANDBOX)
def customer_detail(api: ApiRequest, customer_id: str) -> tuple[int, Any]:
    customer = _customer(customer_id)
    return 200, rep.customer_json(customer, with_accounts=True, with_agreements=True)


@endpoint(**SANDBOX)
def customer_consents_revoke(api: ApiRequest, customer_id: str) -> tuple[int, Any]:
    """The PSU withdraws its consents directly with the bank (spec 5.7); TPPs then get 403 CONSENT_UNKNOWN."""
    customer = _customer(customer_id)
    return 200, {"revokedConsents": services.consents_revoke(customer=customer, now=api.now)}


@endpoint(**SANDBOX, body="json")
def agreement_create(api: ApiRequest) -> tuple[int, Any]:
    data = _object(api)
    customer = _customer(_string(data, "customerId", max_length=64))
    name = _string(data, "name", max_length=140)
    signers = data.get("signersRequired", 1)
    if not isinstance(signers, int) or isinstance(signers, bool):
        raise format_error("signersRequired", "signersRequired must be a whole number.")
    user_ids = data.get("userCustomerIds", [])
    if not isinstance(user_ids, list) or not all(isinstance(u, str) for u in user_ids):
        raise format_error("userCustomerIds", "userCustomerIds must be a list of customerId strings.")
    users = [_customer(u) for u in user_ids]
    try:
        agreement = services.agreement_create(
            customer=customer, name=name, now=api.now, signers_required=signers, users=users
        )
    except DomainError as error:
        raise _domain(error) from None
    return 201, rep.agreement_json(agreement)


@endpoint(**SANDBOX, body="json")
def agreement_engagements(api: ApiRequest, agreement_id: str) -> tuple[int, Any]:
    """Add a company's account to the agreement: done explicitly (docs/bank-interface.md, reference 1)."""
    agreement = Agreement.objects.filter(agreement_id=_uuid_or_404(agreement_id)).first()
    if agreement is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such agreement.", path="agreementId")
    data = _object(api)
    account = _mock_account(_string(data, "accountId", max_length=64))
    try:
        services.agreement_add_account(agreement=agreement, account=account)
    except DomainError as error:
        raise _domain(error) from None
    return 200, rep.agreement_json(agreement)


def _uuid_or_404(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such agreement.", path="agreementId") from None


def _sandbox_account_json(account: Account, api: ApiRequest) -> dict[str, Any]:
    data = rep.account_json(account, fixes=api.fixes)
    data["customerId"] = account.owner.customer_id
    data["agreements"] = [str(a.agreement_id) for a in account.agreements.all()]
    return data


@endpoint(**SANDBOX, body="json")
def account_create(api: ApiRequest) -> tuple[int, Any]:
    data = _object(api)
    customer = _customer(_string(data, "customerId", max_length=64))
    kind = _string(data, "accountType", required=False, max_length=10) or AccountKind.ACCOUNT
    if kind not in AccountKind.values:
        raise format_error("accountType", "accountType must be ACCOUNT or CARD.")
    currency = _string(data, "currency", max_length=3)
    if not _CURRENCY.match(currency):
        raise format_error("currency", "currency must be an ISO 4217 code.")
    name = _string(data, "name", max_length=70)
    product = _string(data, "product", required=False, max_length=70) or (
        "Kredittkort" if kind == AccountKind.CARD else "Brukskonto"
    )
    balance = Decimal("0")
    if "balance" in data:
        balance, balance_currency = _amount(data["balance"], "balance", allow_negative=True)
        if balance_currency != currency:
            raise format_error("balance.currency", "The balance currency must be the account currency.")
    credit_limit = Decimal("0")
    if "creditLimit" in data:
        credit_limit, limit_currency = _amount(data["creditLimit"], "creditLimit")
        if limit_currency != currency:
            raise format_error("creditLimit.currency", "The credit limit currency must be the account currency.")
    try:
        account = services.account_create(
            customer=customer,
            kind=kind,
            currency=currency,
            name=name,
            product=product,
            now=api.now,
            balance=balance,
            credit_limit=credit_limit,
        )
    except DomainError as error:
        raise _domain(error) from None
    return 201, _sandbox_account_json(account, api)


def _reference_iban(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, dict) or not isinstance(value.get("iban", ""), str):
        raise format_error(name, f"{name} must be an account reference with an iban.")
    iban = value.get("iban", "")
    if len(iban) > 34:
        raise format_error(f"{name}.iban", "iban is at most 34 characters.")
    return iban


@endpoint(**SANDBOX, body="json")
def mock_transaction_create(api: ApiRequest, resource_id: str) -> tuple[int, Any]:
    account = _mock_account(resource_id)
    data = _object(api)
    amount, currency = _amount(data.get("transactionAmount"), "transactionAmount")
    if amount == 0:
        raise format_error("transactionAmount.amount", "amount must not be zero.")
    status = _string(data, "bookingStatus", required=False, max_length=10) or BookingStatus.BOOKED
    if status not in BookingStatus.values:
        raise format_error("bookingStatus", "bookingStatus must be booked or pending.")
    raw_date = _string(data, "bookingDate", required=False, max_length=10)
    try:
        booking_date = dt.date.fromisoformat(raw_date) if raw_date else api.now.date()
    except ValueError:
        raise format_error("bookingDate", "bookingDate must be an ISO 8601 date (YYYY-MM-DD).") from None
    kid = _string(data, "kid", required=False, max_length=25)
    if kid and not kid.isdigit():
        raise ApiError(400, "KID_INVALID", "kid must hold digits only.", path="kid")
    mock = MockTransaction(
        amount=amount,
        currency=currency,
        debtor_iban=_reference_iban(data, "debtorAccount"),
        creditor_iban=_reference_iban(data, "creditorAccount"),
        counterparty_name=_string(data, "counterpartyName", required=False, max_length=70),
        remittance=_string(data, "remittanceInformationUnstructured", required=False, max_length=140),
        kid=kid,
        end_to_end_id=_string(data, "endToEndIdentification", required=False, max_length=35),
        booking_status=status,
        booking_date=booking_date,
    )
    try:
        created = services.transaction_create_mock(account=account, data=mock, now=api.now)
    except DomainError as error:
        raise _domain(error) from None
    if account.kind == AccountKind.CARD:
        return 201, rep.card_transaction_json(created, account)
    return 201, rep.transaction_json(created, account, details=True)


def _balance_update(api: ApiRequest, resource_id: str, kind: str) -> tuple[int, Any]:
    account = _mock_account(resource_id, kind)
    data = _object(api)
    value, currency = _amount(data.get("balanceAmount"), "balanceAmount", allow_negative=True)
    if currency != account.currency:
        raise format_error("balanceAmount.currency", f"The balance currency must be {account.currency}.")
    services.account_set_balance(account=account, amount=value)
    balances = selectors.account_balances(account=account, today=api.now.date())
    return 200, rep.balances_json(account, balances)


@endpoint(**SANDBOX, body="json")
def account_balance_update(api: ApiRequest, resource_id: str) -> tuple[int, Any]:
    return _balance_update(api, resource_id, AccountKind.ACCOUNT)


@endpoint(**SANDBOX, body="json")
def card_account_balance_update(api: ApiRequest, resource_id: str) -> tuple[int, Any]:
    return _balance_update(api, resource_id, AccountKind.CARD)


def _offset() -> int:
    return int(clock.offset().total_seconds())


@endpoint(**SANDBOX)
def clock_read(api: ApiRequest) -> tuple[int, Any]:
    return 200, {"now": api.now.isoformat(), "offsetSeconds": _offset()}


@endpoint(**SANDBOX, body="json")
def clock_advance(api: ApiRequest) -> tuple[int, Any]:
    """Move the bank's business clock forward (consent expiry, pending bookings, part 2's batches)."""
    data = _object(api)
    seconds = data.get("advanceSeconds")
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= 5 * 366 * 86400:
        raise format_error("advanceSeconds", "advanceSeconds must be a whole number from 0 to five years.")
    new_now = services.clock_advance(seconds=seconds, now=api.now)
    return 200, {"now": new_now.isoformat(), "offsetSeconds": _offset()}
