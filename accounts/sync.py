"""Transactions of an account kept in step with the bank (issue 6): read the pages, then store them.

Rules kept here:

- Incremental: from the cursor (``BankAccount.transactions_synced_to``, the last date fully synced) less an
  overlap of TRANSACTIONS_OVERLAP days, so late bookings dated a few days back are still seen. Without the PSU
  (unattended) never further back than the bank allows (90 days; UNATTENDED_HISTORY_DAYS keeps a day's margin).
- Every page is read through the bank client's page iterator (``client.accounts.transaction_pages``): the bank's
  own page size (no ``limit`` is asked), its ``next`` links followed, a link to another host or back to an earlier
  page refused. ``before_page`` runs before each further page: the unattended refresh reserves one call of its
  budget there and stops the sync (raising) when the budget is spent. This module speaks no HTTP.
- Nothing is stored until every page has been read; then one short transaction (the account rows locked by the
  statement that moves the cursors, so two syncs of one account do not interleave; several accounts' reads in one
  go: accounts/refresh.py) upserts booked rows by
  ``transactionId``, replaces pending rows by their booked counterpart (same id, else same fingerprint of amount,
  date and text), removes pending rows the bank no longer lists, and moves the cursor. A failed or cut-short
  sync leaves the cursor where it was, and a repeated sync changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Case, DateField, F, Q, Value, When

from accounts.models import AccountKind, BankAccount, Transaction, TransactionStatus
from xs2a import models as bank_models
from xs2a.client import Xs2aClient
from xs2a.errors import UnexpectedResponseError
from xs2a.psu import PsuContext

#: Days before the cursor read again on every sync (late bookings, pending items that booked back-dated).
TRANSACTIONS_OVERLAP = timedelta(days=7)
#: How far back an unattended sync reads: the bank refuses older than 90 days without the PSU; one day margin
#: for the bank's "today" being a day ahead of ours.
UNATTENDED_HISTORY_DAYS = 89
#: How far back the first sync with the PSU present reads.
PRESENT_HISTORY_DAYS = 395
#: A sync reading more pages than this stops (a bank looping its links must not spend calls forever): at the
#: bank's default page of 200, 50 000 transactions.
MAX_PAGES = 250


class SyncInterrupted(UnexpectedResponseError):
    """The page iterator was stopped before the last page (its ``before_page`` said so): nothing is stored."""


@dataclass(frozen=True)
class SyncWindow:
    date_from: date
    date_to: date


@dataclass(frozen=True)
class Item:
    """One transaction as read from the bank, in the portal's shape."""

    status: str
    transaction_id: str
    booking_date: date | None
    value_date: date | None
    amount: Decimal
    currency: str
    counterparty_name: str
    counterparty_account: str
    remittance: str
    kid: str
    end_to_end_id: str
    raw: dict[str, Any]
    fingerprint: str

    def fields(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "transaction_id": self.transaction_id,
            "booking_date": self.booking_date,
            "value_date": self.value_date,
            "amount": self.amount,
            "currency": self.currency,
            "counterparty_name": self.counterparty_name,
            "counterparty_account": self.counterparty_account,
            "remittance": self.remittance,
            "kid": self.kid,
            "end_to_end_id": self.end_to_end_id,
            "raw": self.raw,
            "fingerprint": self.fingerprint,
        }


@dataclass(frozen=True)
class SyncResult:
    new: int
    updated: int
    removed: int


# --- the window ----------------------------------------------------------------------------------------------


def sync_window(*, account: BankAccount, present: bool, today: date) -> SyncWindow:
    """The dates to read: from the cursor less the overlap to today.

    Without the PSU never further back than the bank allows. With the PSU present, while the stored history does
    not reach PRESENT_HISTORY_DAYS back (a first sync, or one made unattended), the whole history is read once.
    """
    oldest = today - timedelta(days=PRESENT_HISTORY_DAYS if present else UNATTENDED_HISTORY_DAYS)
    cursor = account.transactions_synced_to
    covered_from = account.transactions_synced_from
    if cursor is None or (present and (covered_from is None or covered_from > oldest)):
        return SyncWindow(date_from=oldest, date_to=today)
    return SyncWindow(date_from=max(oldest, min(cursor, today) - TRANSACTIONS_OVERLAP), date_to=today)


# --- reading -----------------------------------------------------------------------------------------------


def fetch_pages(
    *,
    client: Xs2aClient,
    account: BankAccount,
    psu: PsuContext,
    window: SyncWindow,
    before_page: Callable[[int], bool | None] | None = None,
) -> list[Item]:
    """Every transaction of the window, all pages read (booked first, then pending; each once).

    ``before_page(number)`` runs before each further page (2, 3, ...); an exception it raises stops the sync,
    and so does False (SyncInterrupted). Raises ``xs2a.errors.Xs2aError`` when the bank refuses or fails.
    """
    service = client.card_accounts if account.kind == AccountKind.CARD else client.accounts
    pages = service.transaction_pages(
        account.resource_id,
        psu=psu,
        booking_status="both",
        date_from=window.date_from,
        before_page=before_page,
        max_pages=MAX_PAGES,
    )
    booked: dict[str, Item] = {}
    booked_without_id: list[Item] = []
    pending: dict[str, Item] = {}  # the bank repeats pending items on every page (spec 4.3, known issue)
    for page in pages:
        for record in page.booked:
            item = _item(record, TransactionStatus.BOOKED)
            if item.transaction_id:
                booked[item.transaction_id] = item
            else:
                booked_without_id.append(item)
        for record in page.pending:
            item = _item(record, TransactionStatus.PENDING)
            pending[item.transaction_id or _canonical(item.raw)] = item
    if not pages.complete:
        raise SyncInterrupted(f"the transactions were read up to page {pages.count} only; nothing is stored")
    return [*booked.values(), *booked_without_id, *pending.values()]


def _canonical(raw: Any) -> str:
    return json.dumps(raw, sort_keys=True, default=str)


def _jsonable(raw: Any) -> Any:
    """The bank's record for the JSON column (Decimals as strings, as the bank sent them)."""
    return json.loads(json.dumps(raw, default=str))


def _text(value: str | None, length: int) -> str:
    return " ".join((value or "").split())[:length]


def fingerprint(*, amount: Decimal, currency: str, day: date | None, text: str) -> str:
    """What a pending item and its booked counterpart have in common when the bank gives them different ids:
    the amount, the currency, the transaction's date and its text (whitespace and case ignored)."""
    normal = amount.normalize() if amount else Decimal(0)
    payload = "|".join(
        [
            format(normal, "f"),
            currency.upper(),
            day.isoformat() if day else "",
            " ".join(text.split()).casefold(),
        ]
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _item(record: bank_models.Transaction | bank_models.CardTransaction, status: str) -> Item:
    """The portal's shape of a transaction the client read (its ``raw``: the bank's record as received)."""
    raw = record.raw
    if isinstance(record, bank_models.CardTransaction):
        card = record
        details = _text(card.transaction_details, 10_000)
        day = card.transaction_date or card.booking_date
        return Item(
            status=status,
            transaction_id=(card.card_transaction_id or "")[:200],
            booking_date=card.booking_date,
            value_date=card.transaction_date,
            amount=card.transaction_amount.amount,
            currency=card.transaction_amount.currency[:3],
            counterparty_name=details[:140],
            counterparty_account="",
            remittance=details,
            kid="",
            end_to_end_id="",
            raw=_jsonable(raw),
            fingerprint=fingerprint(
                amount=card.transaction_amount.amount,
                currency=card.transaction_amount.currency,
                day=day,
                text=details,
            ),
        )
    amount = record.transaction_amount.amount
    outgoing = amount < 0
    name = record.creditor_name if outgoing else record.debtor_name
    reference = record.creditor_account if outgoing else record.debtor_account
    remittance = record.remittance_information_unstructured or " ".join(
        record.remittance_information_unstructured_array
    )
    kid = record.extra.get("kid") or record.extra.get("KID") or ""
    text = _text(remittance, 10_000)
    return Item(
        status=status,
        transaction_id=(record.transaction_id or "")[:200],
        booking_date=record.booking_date,
        value_date=record.value_date,
        amount=amount,
        currency=record.transaction_amount.currency[:3],
        counterparty_name=_text(name, 140),
        counterparty_account=((reference.iban or reference.bban or "") if reference else "")[:34],
        remittance=text,
        kid=str(kid)[:35],
        end_to_end_id=(record.end_to_end_identification or "")[:35],
        raw=_jsonable(raw),
        fingerprint=fingerprint(
            amount=amount,
            currency=record.transaction_amount.currency,
            day=record.value_date or record.booking_date,
            text=text or _text(name, 140),
        ),
    )


# --- storing -----------------------------------------------------------------------------------------------

_COMPARED = (
    "status",
    "transaction_id",
    "booking_date",
    "value_date",
    "amount",
    "currency",
    "counterparty_name",
    "counterparty_account",
    "remittance",
    "kid",
    "end_to_end_id",
    "raw",
    "fingerprint",
)


def cursor_fields(*, window: SyncWindow, now: datetime) -> dict[str, Any]:
    """The account row's fields after a complete read of ``window``: the cursor, the refresh time and the start of
    the stored history, for the caller's UPDATE (which also locks the row).

    The history start is judged on the row's current values (SQL evaluates every right-hand side on the row as it
    was): a read that joins the stored history (the cursor at or after the read's first day) extends it to the
    earlier of the two starts, one after a gap starts anew. A row without a history (NULL) compares as unknown,
    so it starts anew too.
    """
    joins = Q(transactions_synced_to__gte=window.date_from, transactions_synced_from__lt=window.date_from)
    return {
        "transactions_synced_to": window.date_to,
        "transactions_refreshed_at": now,
        "transactions_synced_from": Case(
            When(joins, then=F("transactions_synced_from")),
            default=Value(window.date_from),
            output_field=DateField(),
        ),
    }


def _stored(*, account_ids: Iterable[int], ids: set[str]) -> list[Transaction]:
    """In one read, of the accounts ``account_ids``: the rows the answers name, every pending row, and booked rows
    without an id."""
    wanted = Q(transaction_id__in=[*sorted(ids), ""]) | Q(status=TransactionStatus.PENDING)
    return list(Transaction.objects.filter(wanted, account_id__in=sorted(account_ids)).order_by("pk"))


def _apply(row: Transaction, item: Item, now: datetime) -> bool:
    """Copy ``item`` onto ``row``; True when anything changed."""
    changed = False
    for name, value in item.fields().items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed = True
    if changed:
        row.updated_at = now
    return changed


@dataclass
class _Plan:
    """What storing one account's read comes to: rows to insert, rows changed, pending rows to remove."""

    created: list[Transaction]
    changed: list[Transaction]
    stale: list[int]


def _plan(
    *, account: BankAccount, items: list[Item], rows: list[Transaction], window: SyncWindow, now: datetime
) -> _Plan:
    """Match a complete read of ``window`` against the account's stored ``rows`` (read by :func:`_stored`)."""
    ids = {i.transaction_id for i in items if i.transaction_id}
    by_id = {t.transaction_id: t for t in rows if t.transaction_id and t.transaction_id in ids}
    loose: dict[str, list[Transaction]] = defaultdict(list)  # pending rows, and booked rows without an id
    for row in rows:
        if not row.transaction_id or row.transaction_id not in by_id:
            if row.status == TransactionStatus.PENDING or not row.transaction_id:
                loose[row.fingerprint].append(row)

    touched: set[int] = set()
    created: list[Transaction] = []
    changed: dict[int, Transaction] = {}

    def match(item: Item) -> Transaction | None:
        row = by_id.get(item.transaction_id) if item.transaction_id else None
        if row is not None:
            return row
        for candidate in loose.get(item.fingerprint, []):
            if candidate.pk in touched:
                continue
            if item.status == TransactionStatus.PENDING and candidate.status == TransactionStatus.BOOKED:
                continue  # a pending item never replaces a booked one
            if item.status == TransactionStatus.BOOKED and candidate.status == TransactionStatus.BOOKED:
                if candidate.booking_date != item.booking_date:
                    continue
            return candidate
        return None

    # Booked first: a booked item takes over its pending row before a pending item could claim it.
    for item in sorted(items, key=lambda i: i.status != TransactionStatus.BOOKED):
        row = match(item)
        if row is None:
            created.append(Transaction(account=account, first_seen_at=now, updated_at=now, **item.fields()))
            continue
        touched.add(row.pk)
        if row.status == TransactionStatus.BOOKED and item.status == TransactionStatus.PENDING:
            continue  # the bank still lists the pending item of a booked one: keep the booked
        if _apply(row, item, now):
            changed[row.pk] = row
    # Pending items the bank no longer lists (cancelled, or booked under another id and text) go; the bank lists
    # every pending item of the window, so only those dated inside it (or undated) are judged.
    stale = [
        row.pk
        for row in rows
        if row.status == TransactionStatus.PENDING
        and row.pk not in touched
        and (row.booking_date is None or row.booking_date >= window.date_from)
    ]
    return _Plan(created=created, changed=list(changed.values()), stale=stale)


@dataclass(frozen=True)
class Entry:
    """A complete read of one account's ``window`` (every page), to store."""

    account: BankAccount
    items: list[Item]
    window: SyncWindow


def store_transactions(*, entries: Iterable[Entry], now: datetime) -> dict[int, SyncResult]:
    """Upsert complete reads of several accounts, in a few statements whatever their number: one read of the
    stored rows, then one delete, one insert and one update at most. Inside the caller's transaction, which has
    locked the accounts' rows and moved their cursors (:func:`cursor_fields`) in it, so that two syncs of one
    account do not interleave and a failure leaves the cursors where they were."""
    entries = list(entries)
    if not entries:
        return {}
    ids = {i.transaction_id for e in entries for i in e.items if i.transaction_id}
    by_account: dict[int, list[Transaction]] = defaultdict(list)
    for row in _stored(account_ids=[e.account.pk for e in entries], ids=ids):
        by_account[row.account_id].append(row)
    results: dict[int, SyncResult] = {}
    created: list[Transaction] = []
    changed: list[Transaction] = []
    stale: list[int] = []
    for entry in entries:
        plan = _plan(
            account=entry.account,
            items=entry.items,
            rows=by_account[entry.account.pk],
            window=entry.window,
            now=now,
        )
        created += plan.created
        changed += plan.changed
        stale += plan.stale
        results[entry.account.pk] = SyncResult(
            new=len(plan.created), updated=len(plan.changed), removed=len(plan.stale)
        )
    if stale:
        Transaction.objects.filter(pk__in=stale).delete()
    Transaction.objects.bulk_create(created)
    if changed:
        Transaction.objects.bulk_update(changed, [*_COMPARED, "updated_at"])
    return results
