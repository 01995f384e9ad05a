"""Account information: accounts and card accounts, their balances, transactions (page by page, or all pages
merged) and transaction details. ``client.accounts`` and ``client.card_accounts`` are the two resources of the
same shape (``/v1/accounts...`` and ``/v1/card-accounts...``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any, ClassVar, Generic, TypeVar

from xs2a import models
from xs2a.errors import InvalidRequestError
from xs2a.links import path_from_template
from xs2a.pagination import DEFAULT_MAX_PAGES, BeforePage, Pages, merge_pages
from xs2a.psu import PsuContext
from xs2a.services.base import Service, text_bool

__all__ = ["BOOKING_STATUSES", "AccountsService", "CardAccountsService", "transactions_query"]

BOOKING_STATUSES = frozenset({"booked", "pending", "both", "all", "information"})

L = TypeVar("L", models.TransactionList, models.CardTransactionList)


def transactions_query(
    booking_status: str, date_from: date | None, date_to: date | None, limit: int | None, offset: int | None
) -> dict[str, str]:
    """The query of a transaction listing. No ``limit`` unless asked: the bank's default page (200) is used and
    its ``next`` links followed."""
    if booking_status not in BOOKING_STATUSES:
        raise InvalidRequestError(
            f"bookingStatus {booking_status!r}: expected one of {', '.join(sorted(BOOKING_STATUSES))}"
        )
    query = {"bookingStatus": booking_status}
    if date_from is not None:
        query["dateFrom"] = date_from.isoformat()
    if date_to is not None:
        query["dateTo"] = date_to.isoformat()
    if date_from and date_to and date_from > date_to:
        raise InvalidRequestError("dateFrom is after dateTo")
    if limit is not None:
        if limit < 1:
            raise InvalidRequestError("limit must be positive")
        query["limit"] = str(limit)
    if offset is not None:
        if offset < 0:
            raise InvalidRequestError("offset must not be negative")
        query["offset"] = str(offset)
    return query


class _AccountResource(Service, Generic[L]):
    """What accounts and card accounts share: balances and the transaction listing."""

    ROOT: ClassVar[str]
    TRANSACTIONS_KEY: ClassVar[str]
    _page: Callable[[Any], L]
    _item_id: Callable[[Any], str | None]

    def _path(self, account_id: str, suffix: str = "") -> str:
        return path_from_template(self.ROOT + "/{account_id}", account_id=account_id) + suffix

    def balances(self, account_id: str, *, psu: PsuContext) -> models.AccountBalances:
        """GET .../{account_id}/balances."""
        return self._requester.call(
            "GET", self._path(account_id, "/balances"), reader=models.AccountBalances.from_json, psu=psu
        )

    def transaction_pages(
        self,
        account_id: str,
        *,
        psu: PsuContext,
        booking_status: str = "both",
        date_from: date | None = None,
        date_to: date | None = None,
        limit: int | None = None,
        offset: int | None = None,
        before_page: BeforePage | None = None,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> Pages[L]:
        """The account's transactions page by page (``xs2a.pagination.Pages``): one GET per page as the
        iteration reaches it, following the bank's ``next`` links; ``before_page`` before each further page."""
        return Pages(
            self._requester,
            path=self._path(account_id, "/transactions"),
            query=transactions_query(booking_status, date_from, date_to, limit, offset),
            psu=psu,
            reader=type(self)._page,
            what=self.TRANSACTIONS_KEY,
            before_page=before_page,
            max_pages=max_pages,
        )

    def transactions(
        self,
        account_id: str,
        *,
        psu: PsuContext,
        booking_status: str = "both",
        date_from: date | None = None,
        date_to: date | None = None,
        limit: int | None = None,
        offset: int | None = None,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> L:
        """Every page of the account's transactions as one record: booked items once per id, pending items
        (repeated on every page by the bank, spec 4.3 known issue) once per identical record."""
        pages = self.transaction_pages(
            account_id,
            psu=psu,
            booking_status=booking_status,
            date_from=date_from,
            date_to=date_to,
            limit=limit,
            offset=offset,
            max_pages=max_pages,
        )
        return merge_pages(pages, type(self)._item_id)


class AccountsService(_AccountResource[models.TransactionList]):
    """``client.accounts``: /v1/accounts, balances, transactions, transaction details."""

    ROOT = "/v1/accounts"
    TRANSACTIONS_KEY = "transactions"
    _page = models.TransactionList.from_json
    _item_id = staticmethod(lambda item: item.transaction_id)

    def list(self, *, psu: PsuContext, with_balance: bool = False) -> list[models.Account]:
        """GET /v1/accounts: the accounts the PSU consented to."""
        return self._requester.call(
            "GET",
            self.ROOT,
            reader=lambda d: models.read_list(d, "accounts", models.Account.from_json, "accounts"),
            query={"withBalance": text_bool(with_balance)},
            psu=psu,
        )

    def get(self, account_id: str, *, psu: PsuContext, with_balance: bool = False) -> models.Account:
        """GET /v1/accounts/{account_id}."""
        return self._requester.call(
            "GET",
            self._path(account_id),
            reader=lambda d: models.Account.from_json(d.get("account") if isinstance(d, dict) else d),
            query={"withBalance": text_bool(with_balance)},
            psu=psu,
        )

    def transaction_details(self, account_id: str, transaction_id: str, *, psu: PsuContext) -> models.Transaction:
        """GET /v1/accounts/{account_id}/transactions/{transaction_id}."""
        path = path_from_template(
            "/v1/accounts/{account_id}/transactions/{transaction_id}",
            account_id=account_id,
            transaction_id=transaction_id,
        )
        return self._requester.call(
            "GET",
            path,
            reader=lambda d: models.Transaction.from_json(
                d["transactionsDetails"] if isinstance(d, dict) and "transactionsDetails" in d else d,
                "transactionsDetails",
            ),
            psu=psu,
        )


class CardAccountsService(_AccountResource[models.CardTransactionList]):
    """``client.card_accounts``: /v1/card-accounts, balances, transactions."""

    ROOT = "/v1/card-accounts"
    TRANSACTIONS_KEY = "cardTransactions"
    _page = models.CardTransactionList.from_json
    _item_id = staticmethod(lambda item: item.card_transaction_id)

    def list(self, *, psu: PsuContext) -> list[models.CardAccount]:
        """GET /v1/card-accounts: the card accounts the PSU consented to."""
        return self._requester.call(
            "GET",
            self.ROOT,
            reader=lambda d: models.read_list(d, "cardAccounts", models.CardAccount.from_json, "cardAccounts"),
            psu=psu,
        )
