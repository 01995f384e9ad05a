"""On PostgreSQL the written-out writes (``tpp_portal.rawsql.insert`` and ``update``) are prepared on the server,
once per connection; nothing else the portal runs is, and ``DATABASE_PREPARED_STATEMENTS=false`` turns it off.
Django's query log still shows them with their values. CI runs the whole suite on PostgreSQL; on SQLite only
the last test runs (there is nothing to prepare)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from tests.payments.payment_factories import PaymentFactory
from tpp_portal import rawsql

postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL only")


def _prepared(prefix: str) -> list[str]:
    """The statements this session has prepared that start with ``prefix``."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s", [prefix + "%"])
        return [row[0] for row in cursor.fetchall()]


def _update(payment: Payment) -> int:
    return rawsql.update(
        Payment,
        {"transaction_status": "RCVD", "updated_at": timezone.now()},
        where={"id": payment.pk, "state": (PaymentState.INITIATED,)},
    )


def _insert(payment: Payment) -> None:
    event = PaymentEvent(payment=payment, kind=PaymentEventKind.STATUS, transaction_status="RCVD")
    rawsql.insert_instances([event])


@postgresql
def test_the_written_out_writes_are_prepared_once_per_statement_and_give_the_same_results(alice):
    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)
    update_prefix = f"UPDATE {rawsql.table(Payment)}"
    insert_prefix = f"INSERT INTO {rawsql.table(PaymentEvent)}"
    before = len(_prepared(update_prefix)), len(_prepared(insert_prefix))

    assert [_update(payment) for _ in range(3)] == [1, 1, 1]
    for _ in range(3):
        _insert(payment)

    assert (len(_prepared(update_prefix)), len(_prepared(insert_prefix))) == (before[0] + 1, before[1] + 1)
    assert all("$1" in text for text in _prepared(update_prefix) + _prepared(insert_prefix))  # bound on the server
    assert PaymentEvent.objects.filter(payment=payment).count() == 3
    assert Payment.objects.get(pk=payment.pk).transaction_status == "RCVD"


@postgresql
def test_a_prepared_write_that_matches_nothing_counts_zero_and_its_errors_are_djangos(alice):
    from django.db import IntegrityError, transaction

    payment = PaymentFactory(user=alice, state=PaymentState.DRAFT)

    assert _update(payment) == 0  # the state condition does not match
    with pytest.raises(IntegrityError), transaction.atomic():  # Django's exception, as from the ORM
        rawsql.insert(PaymentEvent, ("payment_id", "at", "kind"), [(payment.pk, None, PaymentEventKind.STATUS)])
    assert not PaymentEvent.objects.filter(payment=payment).exists()


@postgresql
def test_the_orms_own_statements_are_not_prepared(alice):
    for _ in range(8):  # more than psycopg's usual threshold of 5
        list(get_user_model().objects.filter(pk=alice.pk))
        _update(PaymentFactory(user=alice, state=PaymentState.INITIATED))

    assert _prepared(f"UPDATE {rawsql.table(Payment)}")
    assert _prepared("SELECT") == []


@postgresql
def test_with_prepared_statements_off_nothing_is_prepared(alice, settings):
    settings.DATABASE_PREPARED_STATEMENTS = False
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # what earlier tests prepared in this session (psycopg forgets it too)
    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)

    for _ in range(3):
        _update(payment)
        _insert(payment)

    assert _prepared("") == []


def test_djangos_query_log_shows_the_written_out_writes_with_their_text(alice):
    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)

    with CaptureQueriesContext(connection) as captured:  # as DEBUG logs them
        _update(payment)
        _insert(payment)

    logged = [query["sql"] for query in captured.captured_queries]
    assert [sql.split()[0] for sql in logged] == ["UPDATE", "INSERT"]
    assert "RCVD" in logged[0] and "RCVD" in logged[1]  # the values, not placeholders
