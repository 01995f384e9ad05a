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
    rawsql.insert(*rawsql.instance_rows([event]))


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
def test_psycopg_counts_only_the_written_out_writes(alice):
    for _ in range(8):  # more than psycopg's usual threshold of 5
        list(get_user_model().objects.filter(pk=alice.pk))
        _update(PaymentFactory(user=alice, state=PaymentState.INITIATED))

    # Django's setting (None) is back after each write: with a threshold psycopg would count every query and
    # keep its text, values included.
    assert connection.connection.prepare_threshold is None
    assert _prepared(f"UPDATE {rawsql.table(Payment)}")
    assert _prepared("SELECT") == []


@postgresql
@pytest.mark.django_db(transaction=True)
def test_with_prepared_statements_off_nothing_is_prepared(settings):
    settings.DATABASE_PREPARED_STATEMENTS = False
    connection.close()  # a new session: nothing prepared in it yet
    alice = get_user_model().objects.create_user("alice-off@example.com", "alice-off@example.com", "x" * 20)
    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)

    for _ in range(3):
        _update(payment)
        _insert(payment)

    assert _prepared("") == []


@postgresql
@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_update_and_insert_commits_by_itself_and_writes_survive_a_rollback():
    import psycopg
    from django.db import IntegrityError, transaction

    connection.close()
    alice = get_user_model().objects.create_user("alice-tx@example.com", "alice-tx@example.com", "x" * 20)
    payment = PaymentFactory(user=alice, state=PaymentState.SUBMITTING)
    for _ in range(2):  # prepared from the second run
        _update(PaymentFactory(user=alice, state=PaymentState.INITIATED))
    assert _prepared(f"UPDATE {rawsql.table(Payment)}")
    with pytest.raises(IntegrityError), transaction.atomic():  # a rollback: psycopg drops what it prepared
        rawsql.insert(PaymentEvent, ("payment_id", "at", "kind"), [(payment.pk, None, PaymentEventKind.STATUS)])

    changed = rawsql.update_and_insert(
        Payment,
        {"state": PaymentState.INITIATED, "updated_at": timezone.now()},
        where={"id": payment.pk, "state": (PaymentState.SUBMITTING,)},
        if_updated=[rawsql.instance_rows([PaymentEvent(payment=payment, kind=PaymentEventKind.STATUS)])],
    )

    assert changed == 1 and not connection.in_atomic_block
    params = connection.get_connection_params()
    with psycopg.connect(**params) as other:  # another session sees it: committed
        payments, events = rawsql.table(Payment), rawsql.table(PaymentEvent)  # names from the models
        state = other.execute(f"SELECT state FROM {payments} WHERE id = %s", [payment.pk]).fetchone()  # noqa: S608
        events = other.execute(f"SELECT count(*) FROM {events} WHERE payment_id = %s", [payment.pk]).fetchone()  # noqa: S608
    assert state == (PaymentState.INITIATED,) and events == (1,)


def test_djangos_query_log_shows_the_written_out_writes_with_their_text(alice):
    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)

    with CaptureQueriesContext(connection) as captured:  # as DEBUG logs them
        _update(payment)
        _insert(payment)

    logged = [query["sql"] for query in captured.captured_queries]
    assert [sql.split()[0] for sql in logged] == ["UPDATE", "INSERT"]
    assert "RCVD" in logged[0] and "RCVD" in logged[1]  # the values, not placeholders


def test_update_and_insert_is_one_statement_on_postgresql_and_a_savepoint_inside_a_transaction(alice):
    from django.db import DataError, IntegrityError

    payment = PaymentFactory(user=alice, state=PaymentState.SUBMITTING)
    other = PaymentFactory(user=alice, state=PaymentState.SUBMITTING)
    event = PaymentEvent(payment=payment, kind=PaymentEventKind.STATUS, transaction_status="ACCP")

    with CaptureQueriesContext(connection) as captured:
        changed = rawsql.update_and_insert(
            Payment,
            {"transaction_status": "ACCP", "updated_at": timezone.now()},
            where={"id": payment.pk, "state": (PaymentState.SUBMITTING,)},
            if_updated=[rawsql.instance_rows([event])],
        )

    assert changed == 1
    logged = [query["sql"].split()[0] for query in captured.captured_queries]
    if connection.vendor == "postgresql":
        assert logged == ["SAVEPOINT", "WITH", "RELEASE"]  # the test runs inside a transaction
    else:
        assert logged == ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE"]
    refused = PaymentEvent(payment=other, kind=PaymentEventKind.STATUS, transaction_status="TOO-LONG-X")
    refused = refused if connection.vendor == "postgresql" else PaymentEvent(payment=other, kind=None)
    with pytest.raises((DataError, IntegrityError)):
        rawsql.update_and_insert(
            Payment,
            {"transaction_status": "RJCT", "updated_at": timezone.now()},
            where={"id": other.pk, "state": (PaymentState.SUBMITTING,)},
            if_updated=[rawsql.instance_rows([refused])],
        )
    # The outer transaction (the test's) is still usable, and the failed statement left nothing.
    assert Payment.objects.get(pk=other.pk).transaction_status != "RJCT"
    assert not connection.needs_rollback


def test_the_values_written_as_they_are_are_those_the_orm_would_write():
    from django.apps import apps
    from django.utils.translation import gettext_lazy

    from payments.models import PaymentEventKind

    texts = ["", "abc", "Kjøp på Rema 1000 ✓", PaymentEventKind.STATUS, gettext_lazy("Save")]
    samples = [*texts, True, False, None, 1]
    checked = 0
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.__class__ not in rawsql._SAVED_AS_IS:
                continue
            for value in samples:
                try:
                    expected = field.get_db_prep_save(value, connection)
                except Exception:  # a value the field refuses is refused by the shortcut too
                    expected = "refused"
                try:
                    got = rawsql._saved(field, value, connection)
                except Exception:
                    got = "refused"
                assert got == expected and type(got) is type(expected), (field, value)
                checked += 1
    assert checked > 100
