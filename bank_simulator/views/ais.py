"""Account information (spec 4.3): accounts, balances, transactions, transaction details and card accounts."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.conf import settings

from bank_simulator import representations as rep
from bank_simulator import selectors, services
from bank_simulator.access import PSP_AI, ApiRequest, bool_query, endpoint
from bank_simulator.errors import ApiError, format_error
from bank_simulator.models import AccessKind, Account, AccountKind, Consent, ConsentStatus, ScaPurpose
from bank_simulator.views.common import require_session_sca, sca_required

AIS_HEADERS = ("TPP-Redirect-URI",)
AIS = {"roles": frozenset({PSP_AI}), "required": AIS_HEADERS, "corporate_required": True}
UNATTENDED_LIMIT = 4
UNATTENDED_HISTORY = dt.timedelta(days=90)
DEFAULT_PAGE_SIZE = 200  # spec sections 4 and 8; BANK_SIM_MAX_PAGE when that is smaller
BOOKING_STATUSES = ("booked", "pending", "both", "all")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_DIGITS = re.compile(r"^[0-9]{1,9}$")


def _consent_redirect(api: ApiRequest, status: int, code: str, text: str) -> ApiError:
    return sca_required(api, purpose=ScaPurpose.CONSENT, status=status, code=code, text=text)


def require_consent(api: ApiRequest) -> Consent:
    """The PSU's valid consent for the agreement in force, or the error the bank answers instead."""
    if api.psu is None:
        if api.psu_id_given:
            raise _consent_redirect(
                api,
                401,
                "PSU_CREDENTIALS_INVALID",
                "PSU-ID is not known for this TPP; send the PSU to scaRedirect to give consent.",
            )
        raise _consent_redirect(
            api,
            401,
            "CONSENT_UNKNOWN",
            "Account information needs a PSU-ID with a consent; send the PSU to scaRedirect.",
        )
    assert api.agreement is not None  # corporate_required: a corporate PSU has sent PSU-Corporate-ID
    require_session_sca(api, purpose=ScaPurpose.CONSENT)  # with the PSU present, in a session: its own SCA
    consent = api.consent  # the latest one, read with the PSU (selectors.psu_context)
    if consent is None or consent.status == ConsentStatus.REPLACED:
        raise _consent_redirect(
            api,
            401,
            "CONSENT_UNKNOWN",
            "There is no consent for this PSU and agreement; send the PSU to scaRedirect.",
        )
    if consent.status == ConsentStatus.TERMINATED_BY_TPP:
        raise _consent_redirect(
            api,
            401,
            "CONSENT_UNKNOWN",
            "The TPP ended this consent (DELETE /v1/bank-offered-consents); send the PSU to scaRedirect for a "
            "new one.",
        )
    if consent.status == ConsentStatus.REVOKED_BY_PSU:
        raise ApiError(403, "CONSENT_UNKNOWN", "The PSU has revoked the consent with the bank.")
    if consent.status == ConsentStatus.EXPIRED or consent.valid_until <= api.now:
        services.consent_expire(consent=consent, now=api.now)
        raise _consent_redirect(
            api,
            401,
            "CONSENT_EXPIRED",
            "The consent expired 180 days after its SCA; send the PSU to scaRedirect to renew it.",
        )
    return consent


def _account(api: ApiRequest, consent: Consent, resource_id: str, kind: str) -> Account:
    account = selectors.consented_account(consent=consent, resource_id=resource_id, kind=kind)
    if account is None:
        raise ApiError(
            403,
            "CONSENT_INVALID",
            "The consent does not cover this account (or it does not exist).",
            path="resourceId",
        )
    return account


def _check_unattended(api: ApiRequest, account: Account, kind: str) -> None:
    if api.psu_present:
        return
    used = selectors.unattended_count(
        tpp_org_id=api.tpp_org_id, account=account, kind=kind, now=api.now, up_to=UNATTENDED_LIMIT
    )
    if used >= UNATTENDED_LIMIT:
        raise ApiError(
            429,
            "ACCESS_EXCEEDED",
            f"Without PSU-IP-Address (PSU not present) at most {UNATTENDED_LIMIT} {kind} requests per account "
            "are allowed in 24 hours.",
        )


def _record_unattended(api: ApiRequest, account: Account, kind: str) -> None:
    if not api.psu_present:
        services.unattended_access_record(tpp_org_id=api.tpp_org_id, account=account, kind=kind, now=api.now)


def _list(api: ApiRequest, kind: str, key: str) -> tuple[int, dict[str, Any]]:
    with_balance = bool_query(api, "withBalance")
    consent = require_consent(api)
    today = api.now.date()
    accounts = selectors.consented_accounts(consent=consent, kind=kind)
    items = [
        rep.account_json(
            a,
            fixes=api.fixes,
            balances=selectors.account_balances(account=a, today=today) if with_balance else None,
        )
        for a in accounts
    ]
    return 200, {key: items}


def _detail(api: ApiRequest, resource_id: str, kind: str, key: str) -> tuple[int, dict[str, Any]]:
    with_balance = bool_query(api, "withBalance")
    consent = require_consent(api)
    account = _account(api, consent, resource_id, kind)
    balances = selectors.account_balances(account=account, today=api.now.date()) if with_balance else None
    return 200, {key: rep.account_json(account, fixes=api.fixes, balances=balances)}


def _balances(api: ApiRequest, resource_id: str, kind: str) -> tuple[int, dict[str, Any]]:
    consent = require_consent(api)
    account = _account(api, consent, resource_id, kind)
    _check_unattended(api, account, AccessKind.BALANCES)
    today = api.now.date()
    balances = selectors.account_balances(account=account, today=today)
    if balances.due:  # pending items whose day has come book first
        services.transactions_settle_due(today=today, account=account)
        account.refresh_from_db(fields=["booked_balance"])
        balances = selectors.account_balances(account=account, today=today)
    _record_unattended(api, account, AccessKind.BALANCES)
    return 200, rep.balances_json(account, balances)


def _date_param(api: ApiRequest, name: str) -> dt.date | None:
    raw = api.http.GET.get(name)
    if raw is None:
        return None
    try:
        if not _DATE.match(raw):
            raise ValueError
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise format_error(name, f"{name} must be an ISO 8601 date (YYYY-MM-DD).") from None


def _int_param(api: ApiRequest, name: str, default: int, low: int, high: int) -> int:
    raw = api.http.GET.get(name)
    if raw is None:
        return default
    if not _DIGITS.match(raw) or not low <= int(raw) <= high:
        raise format_error(name, f"{name} must be a whole number from {low} to {high}.")
    return int(raw)


def _transactions(api: ApiRequest, resource_id: str, kind: str) -> tuple[int, dict[str, Any]]:
    booking_status = api.http.GET.get("bookingStatus", "both")
    if booking_status not in BOOKING_STATUSES:
        raise format_error("bookingStatus", "bookingStatus must be booked, pending, both or all.")
    date_from = _date_param(api, "dateFrom")
    date_to = _date_param(api, "dateTo")
    if date_from and date_to and date_from > date_to:
        raise format_error("dateFrom", "dateFrom is after dateTo.")
    largest = settings.BANK_SIM_MAX_PAGE
    limit = _int_param(api, "limit", min(DEFAULT_PAGE_SIZE, largest), 1, largest)
    offset = _int_param(api, "offset", 0, 0, 10**7)
    consent = require_consent(api)
    account = _account(api, consent, resource_id, kind)
    today = api.now.date()
    if not api.psu_present:
        oldest = today - UNATTENDED_HISTORY
        if date_from and date_from < oldest:
            raise ApiError(
                403,
                "FORBIDDEN",
                "Transactions older than 90 days can be read only with the PSU present (PSU-IP-Address).",
                path="dateFrom",
            )
        date_from = date_from or oldest
    _check_unattended(api, account, AccessKind.TRANSACTIONS)
    services.transactions_settle_due(today=today, account=account)  # pending items whose day has come book first
    page = selectors.transaction_page(
        account=account,
        booking_status=booking_status,
        date_from=date_from,
        date_to=date_to,
        limit=limit,
        offset=offset,
        pending_unfiltered=settings.BANK_SIM_KNOWN_ISSUE_PENDING_UNFILTERED and kind == AccountKind.ACCOUNT,
    )
    _record_unattended(api, account, AccessKind.TRANSACTIONS)
    query = {"bookingStatus": booking_status}
    if api.http.GET.get("dateFrom"):
        query["dateFrom"] = api.http.GET["dateFrom"]
    if date_to:
        query["dateTo"] = date_to.isoformat()
    base = f"{rep.account_path(account)}/transactions"
    links = rep.page_links(base, query, offset=offset, limit=limit, more=page.more)
    if kind == AccountKind.CARD:
        lists = {
            "booked": [rep.card_transaction_json(t, account) for t in page.booked],
            "pending": [rep.card_transaction_json(t, account) for t in page.pending],
            "_links": links,
        }
        return 200, {"cardAccount": rep.account_reference(account), "cardTransactions": lists}
    lists = {
        "booked": [rep.transaction_json(t, account) for t in page.booked],
        "pending": [rep.transaction_json(t, account) for t in page.pending],
        "_links": links,
    }
    return 200, {"account": rep.account_reference(account), "transactions": lists}


# --- accounts ---------------------------------------------------------------------------------------------


@endpoint(**AIS)
def accounts(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    return _list(api, AccountKind.ACCOUNT, "accounts")


@endpoint(**AIS)
def account_detail(api: ApiRequest, resource_id: str) -> tuple[int, dict[str, Any]]:
    return _detail(api, resource_id, AccountKind.ACCOUNT, "account")


@endpoint(**AIS)
def account_balances(api: ApiRequest, resource_id: str) -> tuple[int, dict[str, Any]]:
    return _balances(api, resource_id, AccountKind.ACCOUNT)


@endpoint(**AIS)
def account_transactions(api: ApiRequest, resource_id: str) -> tuple[int, dict[str, Any]]:
    return _transactions(api, resource_id, AccountKind.ACCOUNT)


@endpoint(**AIS)
def transaction_detail(api: ApiRequest, resource_id: str, transaction_id: str) -> tuple[int, dict[str, Any]]:
    consent = require_consent(api)
    account = _account(api, consent, resource_id, AccountKind.ACCOUNT)
    item = account.transactions.filter(transaction_id=transaction_id).first()
    if item is None:
        raise ApiError(404, "RESOURCE_UNKNOWN", "No such transaction on this account.", path="transactionId")
    if not api.psu_present and item.booking_date < api.now.date() - UNATTENDED_HISTORY:
        raise ApiError(
            403,
            "FORBIDDEN",
            "Transactions older than 90 days can be read only with the PSU present.",
            path="transactionId",
        )
    return 200, {"transactionsDetails": rep.transaction_json(item, account, details=True)}


# --- card accounts ----------------------------------------------------------------------------------------


@endpoint(**AIS)
def card_accounts(api: ApiRequest) -> tuple[int, dict[str, Any]]:
    return _list(api, AccountKind.CARD, "cardAccounts")


@endpoint(**AIS)
def card_account_detail(api: ApiRequest, resource_id: str) -> tuple[int, dict[str, Any]]:
    return _detail(api, resource_id, AccountKind.CARD, "cardAccount")


@endpoint(**AIS)
def card_account_balances(api: ApiRequest, resource_id: str) -> tuple[int, dict[str, Any]]:
    return _balances(api, resource_id, AccountKind.CARD)


@endpoint(**AIS)
def card_account_transactions(api: ApiRequest, resource_id: str) -> tuple[int, dict[str, Any]]:
    return _transactions(api, resource_id, AccountKind.CARD)
