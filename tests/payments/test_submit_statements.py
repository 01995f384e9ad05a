"""The submit path's written-out statements (``tpp_portal.rawsql.update`` and ``insert_instances``, used by the
claim and by the storing of the bank's answer): they write exactly what the ORM would, on SQLite and on
PostgreSQL alike (CI runs this file on PostgreSQL)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from tests.payments.payment_factories import PaymentFactory
from tpp_portal import rawsql

#: Unique per row or set when the row was made, so never equal between the ORM's row and the written-out one.
_OWN = {"id", "idempotency_key", "request_id", "payment_id", "created_at"}


def _stored(payment: Payment) -> dict:
    row = Payment.objects.get(pk=payment.pk)
    return {f.attname: getattr(row, f.attname) for f in Payment._meta.concrete_fields if f.attname not in _OWN}


def _twins(alice) -> tuple[Payment, Payment]:
    submitted_at = timezone.now()
    made = [
        PaymentFactory(user=alice, state=PaymentState.SUBMITTING, submitted_at=submitted_at, payment_id="")
        for _ in range(2)
    ]
    return made[0], made[1]


def test_an_update_of_every_kind_of_value_writes_what_the_orm_writes(alice):
    by_orm, written_out = _twins(alice)
    now = timezone.now().replace(microsecond=654321)
    values = {
        "state": PaymentState.INITIATED,  # a choice
        "transaction_status": "RCVD",
        "fee_amount": Decimal("12345.67890"),  # a decimal at the field's full scale
        "fee_currency": "EUR",
        "fee_indicator": False,
        "psu_message": "Betalingen er mottatt: æøå",
        "tpp_messages": [{"category": "WARNING", "code": "FORMAT_ERROR", "path": "creditorName", "text": "ø"}],
        "links": {"scaRedirect": "https://bank.example/sca?x=1&y=2"},  # JSON
        "psu_identity": "13039319955",  # encrypted at rest
        "initiation_psu": '{"ip_address": "198.51.100.7"}',
        "reconcile_at": None,
        "updated_at": now,  # auto_now: given, as QuerySet.update needs it too
    }

    assert Payment.objects.filter(pk=by_orm.pk, state__in=(PaymentState.SUBMITTING,)).update(**values) == 1
    changed = rawsql.update(
        Payment, values, where={"id": written_out.pk, "state": (PaymentState.SUBMITTING, PaymentState.DRAFT)}
    )

    assert changed == 1
    assert _stored(written_out) == _stored(by_orm)
    stored = Payment.objects.get(pk=written_out.pk)
    assert stored.psu_identity == "13039319955" and stored.fee_amount == Decimal("12345.67890")
    assert stored.updated_at == now and stored.links == values["links"]
    with connection.cursor() as cursor:  # at rest: encrypted, as the ORM stores it
        cursor.execute(
            f"SELECT {rawsql.quoted(Payment, 'psu_identity')} FROM {rawsql.table(Payment)} WHERE id = %s",  # noqa: S608
            [written_out.pk],
        )
        (at_rest,) = cursor.fetchone()
    assert at_rest and "13039319955" not in at_rest


def test_an_update_changes_only_the_rows_its_conditions_match(alice):
    payment = PaymentFactory(user=alice, state=PaymentState.DRAFT)
    other_key = uuid.uuid4()
    now = timezone.now()

    assert rawsql.update(Payment, {"updated_at": now}, where={"id": payment.pk, "idempotency_key": other_key}) == 0
    initiated = {"id": payment.pk, "state": PaymentState.INITIATED}
    assert rawsql.update(Payment, {"updated_at": now}, where=initiated) == 0
    assert Payment.objects.get(pk=payment.pk).updated_at != now
    claimed = rawsql.update(
        Payment,
        {"state": PaymentState.SUBMITTING, "updated_at": now},
        where={"id": payment.pk, "state": PaymentState.DRAFT, "idempotency_key": payment.idempotency_key},
    )
    assert claimed == 1
    assert Payment.objects.get(pk=payment.pk).state == PaymentState.SUBMITTING
    # The claim is taken once: the same statement again changes nothing.
    again = rawsql.update(
        Payment,
        {"state": PaymentState.SUBMITTING, "updated_at": now + timedelta(seconds=1)},
        where={"id": payment.pk, "state": PaymentState.DRAFT, "idempotency_key": payment.idempotency_key},
    )
    assert again == 0


def test_inserted_instances_are_stored_as_bulk_create_stores_them(alice, bob):
    by_orm, written_out = _twins(alice)
    at = timezone.now().replace(microsecond=1)

    def events(payment):
        return [
            PaymentEvent(payment=payment, at=at, kind=PaymentEventKind.SUBMITTED, actor=bob),
            PaymentEvent(
                payment=payment,
                kind=PaymentEventKind.STATUS,  # ``at`` left to its default
                transaction_status="ACCP",
                funds_available=False,
                detail="Ikke dekning: æøå",
            ),
        ]

    PaymentEvent.objects.bulk_create(events(by_orm))
    rawsql.insert_instances(events(written_out))
    rawsql.insert_instances([])  # nothing to write: no statement

    def stored(payment):
        return [
            (e.kind, e.transaction_status, e.funds_available, e.actor_id, e.detail, e.at == at)
            for e in PaymentEvent.objects.filter(payment=payment).order_by("pk")
        ]

    assert stored(written_out) == stored(by_orm)
    assert stored(written_out)[0] == (PaymentEventKind.SUBMITTED, "", None, bob.pk, "", True)
    assert PaymentEvent.objects.filter(payment=written_out).count() == 2


@pytest.mark.parametrize(
    "where",
    [{"state": None}, {"state": ()}, {"state": ["draft"]}, {"state": {"draft"}}],
    ids=["none", "empty tuple", "list", "set"],
)
def test_an_update_refuses_conditions_it_would_write_otherwise_than_the_orm(alice, where):
    payment = PaymentFactory(user=alice, state=PaymentState.DRAFT)
    before = _stored(payment)

    with pytest.raises(ValueError, match="needs a value or a non-empty tuple"):
        rawsql.update(Payment, {"fee_currency": "SEK"}, where={"id": payment.pk, **where})

    assert _stored(payment) == before


def test_inserted_instances_must_be_new(alice):
    payment = PaymentFactory(user=alice)
    event = PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.CREATED)

    with pytest.raises(ValueError, match="new rows"):
        rawsql.insert_instances([event])

    assert PaymentEvent.objects.filter(payment=payment).count() == 1
