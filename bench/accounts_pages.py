"""The accounts pages under load of data: the overview with 50 accounts and an account's transactions page with
100 000 transactions. ``python -m bench.accounts_pages``.

Each page is requested through Django's test client (the whole middleware stack: session, sign-in, CSP, the
sensitive-page checks) by a signed-in user, in a throwaway database made for the run: a temporary SQLite file by
default, or a ``test_*`` database beside the one ``DATABASE_URL`` names (PostgreSQL). Measured in the same run:

- the overview with 50 accounts, against the same page with 5 (the baseline);
- the first page and a deep page (row 90 000) of an account with 100 000 transactions, against the first page of
  an account with 1 000;
- the CSV export of the 100 000 rows.

The goal is a number of queries per page that does not grow with the data: the ratios of the query counts must be
1. Times are the median of ROUNDS requests after a warm-up.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from bench.report import emit

ROUNDS = 25
ACCOUNTS, ACCOUNTS_BASELINE = 50, 5
ROWS, ROWS_BASELINE = 100_000, 1_000
DEEP_ROW = 90_000
PENDING = 20  # pending items on every account with transactions, shown above the first page


def _n(number: int) -> str:
    return f"{number:,}".replace(",", " ")


def _setup_django(tmp: Path):
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")
    os.environ.setdefault("DEBUG", "false")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    # Not django.test.utils.setup_test_environment: its template instrumentation would be measured too.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    settings.DEBUG = False
    if connection.vendor == "sqlite":
        connection.settings_dict["TEST"]["NAME"] = str(tmp / "bench-portal.sqlite3")  # a file, not memory
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    return connection, name


def _user(email: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(email, email, "bench-password-not-used")


def _accounts(user, count: int, now):
    from accounts.models import BalanceSnapshot, BankAccount, RefreshCall
    from connections.models import BankConnection

    connection = BankConnection.objects.create(
        user=user, context="PRIVATE", state="active", sca_at=now, consent_valid_until=now + timedelta(days=180)
    )
    accounts = BankAccount.objects.bulk_create(
        BankAccount(
            connection=connection,
            resource_id=f"enc!!{user.pk}-{n}=",
            iban=f"NO93860111{n:05d}",
            currency="NOK",
            name=f"Konto {n}",
            balances_refreshed_at=now,
            transactions_refreshed_at=now,
            next_refresh_at=now + timedelta(hours=5),
        )
        for n in range(count)
    )
    BalanceSnapshot.objects.bulk_create(
        BalanceSnapshot(
            account=account, balance_type=kind, amount=Decimal("1234.56"), currency="NOK", fetched_at=now
        )
        for account in accounts
        for kind in ("closingBooked", "interimBooked", "interimAvailable")
    )
    RefreshCall.objects.bulk_create(
        RefreshCall(account=account, resource_key=RefreshCall.key_for(account), kind=kind, reserved_at=now)
        for account in accounts
        for kind in ("balances", "transactions")
    )
    return accounts


def _transactions(account, count: int, now) -> None:
    from accounts.models import Transaction

    today = now.date()
    batch = 5000
    for start in range(0, count + PENDING, batch):
        rows = []
        for n in range(start, min(start + batch, count + PENDING)):
            pending = n >= count
            rows.append(
                Transaction(
                    account=account,
                    transaction_id="" if pending else f"T-{account.pk}-{n}",
                    status="pending" if pending else "booked",
                    booking_date=None if pending else today - timedelta(days=n // 40),
                    value_date=None if pending else today - timedelta(days=n // 40),
                    amount=Decimal(f"-{n % 5000}.{n % 100:02d}"),
                    currency="NOK",
                    counterparty_name=f"Butikk {n % 700}",
                    remittance=f"Varekjøp {n}",
                    fingerprint=f"{n:064x}",
                    raw={},
                    first_seen_at=now,
                    updated_at=now,
                )
            )
        Transaction.objects.bulk_create(rows)


def _client(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    client.get("/")  # the session's first request stamps it
    return client


def _measure(client, url: str, params: dict | None = None, *, expect: bytes = b"") -> tuple[float, int]:
    """Median milliseconds of ROUNDS requests and the number of queries of one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url, params or {})
    assert response.status_code == 200, (url, response.status_code)
    assert expect in response.content, (url, expect)
    connection.queries_log.clear()
    with CaptureQueriesContext(connection) as queries:
        client.get(url, params or {})
    count = len(queries.captured_queries)  # now: the next request clears the connection's query log
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        response = client.get(url, params or {})
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return statistics.median(times), count


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-accounts-pages-") as tmp:
        connection, name = _setup_django(Path(tmp))
        try:
            run(connection.vendor)
        finally:
            connection.creation.destroy_test_db(name, verbosity=0)


def run(vendor: str) -> None:
    from django.utils import timezone

    from accounts.models import Transaction
    from accounts.selectors import Cursor

    now = timezone.now()
    many, few = _user("many@bench.invalid"), _user("few@bench.invalid")
    _accounts(many, ACCOUNTS, now)
    few_accounts = _accounts(few, ACCOUNTS_BASELINE, now)
    started = time.perf_counter()
    large, small = few_accounts[0], few_accounts[1]
    _transactions(large, ROWS, now)
    _transactions(small, ROWS_BASELINE, now)
    if vendor == "postgresql":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(
        f"database: {vendor}; {ROWS + ROWS_BASELINE + 2 * PENDING} transactions written in "
        f"{time.perf_counter() - started:.1f} s; {ROUNDS} requests per figure (median)"
    )

    many_client, few_client = _client(many), _client(few)
    overview_ms, overview_q = _measure(many_client, "/bank/accounts/", expect=b"Konto 49")
    overview_base_ms, overview_base_q = _measure(few_client, "/bank/accounts/", expect=b"Konto 4")
    print(
        f"accounts overview: {ACCOUNTS} accounts {overview_ms:.1f} ms, {overview_q} queries; "
        f"{ACCOUNTS_BASELINE} accounts {overview_base_ms:.1f} ms, {overview_base_q} queries"
    )

    large_url, small_url = f"/bank/accounts/{large.pk}/", f"/bank/accounts/{small.pk}/"
    first_ms, first_q = _measure(few_client, large_url, expect=b"transactions-booked")
    base_ms, base_q = _measure(few_client, small_url, expect=b"transactions-booked")
    deep = Transaction.objects.filter(account=large, status="booked").order_by("-booking_date", "-id")[DEEP_ROW]
    deep_ms, deep_q = _measure(few_client, large_url, {"after": Cursor.of(deep).token}, expect=b'rel="prev"')
    later_base = Transaction.objects.filter(account=small, status="booked").order_by("-booking_date", "-id")[500]
    later_base_ms, later_base_q = _measure(few_client, small_url, {"after": Cursor.of(later_base).token})
    filtered_ms, filtered_q = _measure(few_client, large_url, {"q": "Butikk 699", "status": "booked"})
    print(
        f"transactions page: {ROWS} rows first page {first_ms:.1f} ms ({first_q} queries), row {DEEP_ROW} "
        f"{deep_ms:.1f} ms ({deep_q} queries), text filter {filtered_ms:.1f} ms ({filtered_q} queries); "
        f"{ROWS_BASELINE} rows first page {base_ms:.1f} ms ({base_q} queries), row 500 {later_base_ms:.1f} ms "
        f"({later_base_q} queries)"
    )

    started = time.perf_counter()
    response = few_client.get(f"{large_url}transactions.csv")
    size = sum(len(chunk) for chunk in response.streaming_content)
    export_s = time.perf_counter() - started
    print(f"CSV export: {ROWS + PENDING} rows, {size / 1e6:.1f} MB in {export_s:.2f} s")

    emit(
        f"accounts page, {ACCOUNTS} accounts: median time",
        overview_ms,
        "ms",
        better="lower",
        baseline=overview_base_ms,
    )
    emit(
        f"accounts page, {ACCOUNTS} accounts: queries (baseline {ACCOUNTS_BASELINE} accounts)",
        overview_q,
        "queries",
        better="lower",
        goal=overview_base_q,
        baseline=overview_base_q,
    )
    emit(f"transactions page, {_n(ROWS)} rows: median time", first_ms, "ms", better="lower", baseline=base_ms)
    emit(
        f"transactions page, {_n(ROWS)} rows: queries (baseline {_n(ROWS_BASELINE)} rows)",
        first_q,
        "queries",
        better="lower",
        goal=base_q,
        baseline=base_q,
    )
    emit(
        f"transactions page at row {_n(DEEP_ROW)} of {_n(ROWS)}: median time",
        deep_ms,
        "ms",
        better="lower",
        baseline=later_base_ms,
    )
    emit(
        f"transactions page at row {_n(DEEP_ROW)}: queries (baseline row 500 of {_n(ROWS_BASELINE)})",
        deep_q,
        "queries",
        better="lower",
        goal=later_base_q,
        baseline=later_base_q,
    )
    emit(
        f"CSV export of {_n(ROWS)} transactions",
        (ROWS + PENDING) / export_s,
        "rows/s",
        better="higher",
    )


if __name__ == "__main__":
    sys.exit(main())
