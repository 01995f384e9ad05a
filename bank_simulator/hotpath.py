"""Reads (and the one write) of every account-information request, as single SQL statements (SQLite and
PostgreSQL).

The ORM builds each query in Python for about half a millisecond on a small machine; the balance read, the
simulator's benchmark, would spend most of its time there. These selectors fetch in one statement what the ORM
needed four for (PSU, customer, agreement, latest consent and the clock offset), and return ordinary model
instances, so callers do not know the difference. The unattended allowance (count and record) and the
transaction listing (counts and pages) are here for the same reason: the portal's background refresh reads
balances and transactions of thousands of accounts without the PSU. ``tests/bank_simulator`` run every path
through them.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime

from bank_simulator.models import (
    Account,
    Agreement,
    AgreementContext,
    BookingStatus,
    Consent,
    Customer,
    PsuIdentity,
    SimulatorClock,
    Transaction,
    UnattendedAccess,
)

_PSU = PsuIdentity._meta.db_table
_CUSTOMER = Customer._meta.db_table
_AGREEMENT = Agreement._meta.db_table
_AGREEMENT_USERS = Agreement.users.through._meta.db_table
_CONSENT = Consent._meta.db_table
_CONSENT_ACCOUNTS = Consent.accounts.through._meta.db_table
_ACCOUNT = Account._meta.db_table
_TRANSACTION = Transaction._meta.db_table
_CLOCK = SimulatorClock._meta.db_table
_UNATTENDED = UnattendedAccess._meta.db_table

_SELECT = f"""
SELECT p.id, p.psu_id, c.id, c.customer_id, c.customer_number, c.customer_type, c.name,
       a.id, a.agreement_id, a.context, a.name, a.owner_id, a.signers_required,
       k.id, k.consent_id, k.status, k.sca_completed_at, k.valid_until,
       (SELECT offset_seconds FROM {_CLOCK} WHERE id = 1)
FROM {_PSU} p
JOIN {_CUSTOMER} c ON c.id = p.customer_id
"""  # noqa: S608 - fixed table names, bound values
_CONSENT_JOIN = f"""
LEFT JOIN {_CONSENT} k ON k.id = (SELECT MAX(id) FROM {_CONSENT} WHERE psu_id = p.id AND agreement_id = a.id)
WHERE p.psu_id = %s AND p.tpp_org_id = %s
"""  # noqa: S608 - fixed table names, bound values
_PRIVATE_SQL = (
    _SELECT
    + f"LEFT JOIN {_AGREEMENT} a ON a.owner_id = c.id AND a.context = '{AgreementContext.PRIVATE}'"
    + _CONSENT_JOIN
)
_CORPORATE_SQL = (
    _SELECT  # noqa: S608 - fixed table names, bound values
    + f"""LEFT JOIN {_AGREEMENT} a ON a.agreement_id = %s AND a.context = '{AgreementContext.CORPORATE}'
        AND EXISTS (SELECT 1 FROM {_AGREEMENT_USERS} u WHERE u.agreement_id = a.id AND u.customer_id = c.id)"""  # noqa: S608 - fixed table names, bound values
    + _CONSENT_JOIN
)
_OFFSET_SQL = f"SELECT offset_seconds FROM {_CLOCK} WHERE id = 1"  # noqa: S608 - fixed table names, bound values

_ACCOUNT_FIELDS = [f for f in Account._meta.concrete_fields]
_ACCOUNT_SQL = (
    "SELECT "  # noqa: S608 - fixed table names, bound values
    + ", ".join(f"acc.{f.column}" for f in _ACCOUNT_FIELDS)
    + f""" FROM {_ACCOUNT} acc JOIN {_CONSENT_ACCOUNTS} ca ON ca.account_id = acc.id
    WHERE ca.consent_id = %s AND acc.resource_id = %s AND acc.kind = %s"""
)
_BALANCE_SQL = f"""
SELECT
  SUM(CASE WHEN booking_status = '{BookingStatus.PENDING}' THEN amount ELSE 0 END),
  SUM(CASE WHEN booking_status = '{BookingStatus.BOOKED}' AND booking_date >= %s THEN amount ELSE 0 END),
  SUM(CASE WHEN booking_status = '{BookingStatus.PENDING}' AND books_on <= %s THEN 1 ELSE 0 END)
FROM {_TRANSACTION}
WHERE account_id = %s AND (booking_status = '{BookingStatus.PENDING}' OR booking_date >= %s)
"""  # noqa: S608 - fixed table names, bound values


def _uuid_param(value: uuid.UUID) -> Any:
    return value.hex if connection.vendor == "sqlite" else value


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _datetime(value: Any) -> dt.datetime:
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError(f"not a datetime: {value!r}")
        value = parsed
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _decimal(value: Any) -> Decimal:
    if value is None:
        return Decimal("0")
    if isinstance(value, float):  # SQLite sums NUMERIC columns as floating point
        return Decimal(repr(value)).quantize(Decimal("0.00001"))
    return Decimal(value)


@dataclass
class PsuContext:
    psu: PsuIdentity
    agreement: Agreement | None
    consent: Consent | None
    offset: dt.timedelta


def clock_offset() -> dt.timedelta:
    with connection.cursor() as cursor:
        cursor.execute(_OFFSET_SQL)
        row = cursor.fetchone()
    return dt.timedelta(seconds=row[0] if row else 0)


def psu_context(*, psu_id: str, tpp_org_id: str, corporate_id: str | None) -> PsuContext | None:
    """The PSU of PSU-ID at this TPP with its customer, the agreement in force and its latest consent.

    The agreement is the private one of a private customer, or the corporate agreement of PSU-Corporate-ID when
    the customer is one of its users (None when it is not). None when the PSU-ID is unknown for this TPP.
    """
    params: list[Any] = [_uuid_param(uuid.UUID(psu_id)), tpp_org_id]
    sql = _PRIVATE_SQL
    if corporate_id:
        sql = _CORPORATE_SQL
        params.insert(0, _uuid_param(uuid.UUID(corporate_id)))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    customer = Customer(id=row[2], customer_id=row[3], customer_number=row[4], customer_type=row[5], name=row[6])
    psu = PsuIdentity(id=row[0], psu_id=_uuid(row[1]), tpp_org_id=tpp_org_id, customer=customer)
    agreement = None
    if row[7] is not None:
        agreement = Agreement(
            id=row[7],
            agreement_id=_uuid(row[8]),
            context=row[9],
            name=row[10],
            owner_id=row[11],
            signers_required=row[12],
        )
    consent = None
    if row[13] is not None and agreement is not None:
        consent = Consent(
            id=row[13],
            consent_id=_uuid(row[14]),
            status=row[15],
            sca_completed_at=_datetime(row[16]),
            valid_until=_datetime(row[17]),
            psu=psu,
            agreement=agreement,
        )
    return PsuContext(psu, agreement, consent, dt.timedelta(seconds=row[18] or 0))


def consented_account(*, consent: Consent, resource_id: str, kind: str) -> Account | None:
    with connection.cursor() as cursor:
        cursor.execute(_ACCOUNT_SQL, [consent.pk, resource_id, kind])
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip((f.attname for f in _ACCOUNT_FIELDS), row, strict=True))
    for name in ("credit_limit", "booked_balance"):
        values[name] = _decimal(values[name])
    values["created_at"] = _datetime(values["created_at"])
    return Account(**values)


@dataclass(frozen=True)
class BalanceSums:
    pending: Decimal  # every pending item
    booked_today: Decimal  # booked on or after ``today``
    due: int  # pending items whose booking day has come (to be settled first)


def balance_sums(*, account: Account, today: dt.date) -> BalanceSums:
    day = today.isoformat() if connection.vendor == "sqlite" else today
    with connection.cursor() as cursor:
        cursor.execute(_BALANCE_SQL, [day, day, account.pk, day])
        pending, booked_today, due = cursor.fetchone()
    return BalanceSums(_decimal(pending), _decimal(booked_today), int(due or 0))


# --- the unattended allowance and the transaction listing --------------------------------------------------------

_UNATTENDED_COUNT_SQL = f"""
SELECT COUNT(*) FROM {_UNATTENDED} WHERE tpp_org_id = %s AND account_id = %s AND kind = %s AND at > %s
"""  # noqa: S608 - fixed table names, bound values
_UNATTENDED_INSERT_SQL = f"INSERT INTO {_UNATTENDED} (tpp_org_id, account_id, kind, at) VALUES (%s, %s, %s, %s)"  # noqa: S608 - fixed table names, bound values
_DUE_SQL = f"""
SELECT COUNT(*) FROM {_TRANSACTION}
WHERE account_id = %s AND booking_status = '{BookingStatus.PENDING}' AND books_on <= %s
"""  # noqa: S608 - fixed table names, bound values
_TRANSACTION_COLUMNS = ", ".join(f.column for f in Transaction._meta.concrete_fields)
_NEWEST_FIRST = "ORDER BY booking_date DESC, sequence DESC, id DESC"


def unattended_count(*, tpp_org_id: str, account: Account, kind: str, since: dt.datetime) -> int:
    """Requests of ``kind`` without the PSU by this TPP on ``account`` after ``since``."""
    with connection.cursor() as cursor:
        cursor.execute(
            _UNATTENDED_COUNT_SQL, [tpp_org_id, account.pk, kind, connection.ops.adapt_datetimefield_value(since)]
        )
        return cursor.fetchone()[0]


def unattended_insert(*, tpp_org_id: str, account: Account, kind: str, at: dt.datetime) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            _UNATTENDED_INSERT_SQL, [tpp_org_id, account.pk, kind, connection.ops.adapt_datetimefield_value(at)]
        )


def due_count(*, account: Account, today: dt.date) -> int:
    """Pending items of ``account`` whose booking day has come (``services.transactions_settle_due`` books
    them)."""
    with connection.cursor() as cursor:
        cursor.execute(_DUE_SQL, [account.pk, connection.ops.adapt_datefield_value(today)])
        return cursor.fetchone()[0]


def _dated(date_from: dt.date | None, date_to: dt.date | None) -> tuple[str, list[Any]]:
    sql, params = "", []
    if date_from:
        sql, params = sql + " AND booking_date >= %s", [*params, connection.ops.adapt_datefield_value(date_from)]
    if date_to:
        sql, params = sql + " AND booking_date <= %s", [*params, connection.ops.adapt_datefield_value(date_to)]
    return sql, params


def transaction_counts(*, account: Account, date_from: dt.date | None, date_to: dt.date | None) -> tuple[int, int]:
    """(pending, booked) items of ``account`` booked (pending: reserved) within the dates, in one statement."""
    dated, params = _dated(date_from, date_to)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(SUM(CASE WHEN booking_status = %s THEN 1 ELSE 0 END), 0), "  # noqa: S608 - fixed table names, bound values
            f"COALESCE(SUM(CASE WHEN booking_status = %s THEN 1 ELSE 0 END), 0) "
            f"FROM {_TRANSACTION} WHERE account_id = %s{dated}",
            [BookingStatus.PENDING, BookingStatus.BOOKED, account.pk, *params],
        )
        pending, booked = cursor.fetchone()
    return int(pending), int(booked)


def transaction_rows(
    *,
    account: Account,
    booking_status: str,
    date_from: dt.date | None,
    date_to: dt.date | None,
    offset: int,
    limit: int | None,
) -> list[Transaction]:
    """The items of one status, newest first (``selectors.transaction_page``'s order), ``limit`` from ``offset``
    (every one when ``limit`` is None); model instances with the ORM's conversions (``Manager.raw``)."""
    dated, params = _dated(date_from, date_to)
    window = ""
    if limit is not None:
        window, params = " LIMIT %s OFFSET %s", [*params, limit, offset]
    sql = (
        f"SELECT {_TRANSACTION_COLUMNS} FROM {_TRANSACTION} "  # noqa: S608 - fixed table names, bound values
        f"WHERE account_id = %s AND booking_status = %s{dated} {_NEWEST_FIRST}{window}"
    )
    return list(Transaction.objects.raw(sql, [account.pk, booking_status, *params]))
