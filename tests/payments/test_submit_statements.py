"""The submit path's written-out statements (``tpp_portal.rawsql.update``, ``insert`` of ``instance_rows`` and
``update_and_insert``, used by the claim and by the storing of the bank's answer): they write exactly what the
ORM would, on SQLite and on PostgreSQL alike (CI runs this file on PostgreSQL)."""

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
    rawsql.insert(*rawsql.instance_rows(events(written_out)))
    rawsql.insert(PaymentEvent, ("payment_id",), [])  # nothing to write: no statement

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
        rawsql.instance_rows([event])

    assert PaymentEvent.objects.filter(payment=payment).count() == 1


def _audit_rows(user, request_id: str) -> rawsql.Rows:
    from tpp_portal.models import BankCall

    call = BankCall(
        started_at=timezone.now(),
        method="POST",
        path_template="/v1/payments/{product}",
        request_id=request_id,
        attempt=1,
        status=201,
        duration_ms=12,
        tpp_message_codes=["WARNING_X"],
        tpp_message_texts=["ø"],
        psu_present=True,
        bytes_sent=640,
        bytes_received=1280,
        user=user,
    )
    return rawsql.instance_rows([call])


def _answer_events(payment: Payment, actor) -> list[PaymentEvent]:
    return [
        PaymentEvent(payment=payment, kind=PaymentEventKind.SUBMITTED, actor=actor),  # ``at`` by its default
        PaymentEvent(
            payment=payment,
            at=timezone.now().replace(microsecond=7),
            kind=PaymentEventKind.STATUS,
            transaction_status="ACCP",
            funds_available=False,  # a boolean, and None for the other row
            detail="Ikke dekning: æøå",
        ),
    ]


def _events(payment: Payment) -> list[tuple]:
    return [
        (e.kind, e.transaction_status, e.funds_available, e.actor_id, e.detail)
        for e in PaymentEvent.objects.filter(payment=payment).order_by("pk")
    ]


def test_update_and_insert_writes_the_update_and_every_row_as_the_orm_would(alice):
    from tpp_portal.models import BankCall

    by_orm, written_out = _twins(alice)
    values = {"state": PaymentState.INITIATED, "transaction_status": "ACCP", "updated_at": timezone.now()}
    where = {"state": (PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN)}

    assert Payment.objects.filter(pk=by_orm.pk, state__in=where["state"]).update(**values) == 1
    PaymentEvent.objects.bulk_create(_answer_events(by_orm, alice))
    _model, names, rows = _audit_rows(alice, "by-orm")
    BankCall.objects.bulk_create([BankCall(**dict(zip(names, row, strict=True))) for row in rows])
    changed = rawsql.update_and_insert(
        Payment,
        values,
        where={"id": written_out.pk, **where},
        always=[_audit_rows(alice, "written-out")],
        if_updated=[rawsql.instance_rows(_answer_events(written_out, alice))],
    )

    assert changed == 1
    assert _stored(written_out) == _stored(by_orm)
    assert _events(written_out) == _events(by_orm) != []
    audit = {
        c.request_id: (c.status, c.tpp_message_codes, c.tpp_message_texts, c.user_id, c.bytes_sent)
        for c in BankCall.objects.all()
    }
    assert audit["written-out"] == audit["by-orm"] == (201, ["WARNING_X"], ["ø"], alice.pk, 640)


def test_update_and_insert_that_matches_nothing_writes_only_the_rows_always_written(alice):
    from tpp_portal.models import BankCall

    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)  # another writer stored the answer
    before = _stored(payment)

    changed = rawsql.update_and_insert(
        Payment,
        {"state": PaymentState.INITIATED, "transaction_status": "RJCT", "updated_at": timezone.now()},
        where={"id": payment.pk, "state": (PaymentState.SUBMITTING,)},
        always=[_audit_rows(alice, "kept")],
        if_updated=[rawsql.instance_rows(_answer_events(payment, alice))],
    )

    assert changed == 0
    assert _stored(payment) == before
    assert _events(payment) == []
    assert list(BankCall.objects.values_list("request_id", flat=True)) == ["kept"]


def test_update_and_insert_is_one_transaction_a_refused_row_leaves_nothing_written(alice):
    from django.db import DataError, IntegrityError, transaction

    from tpp_portal.models import BankCall

    payment = PaymentFactory(user=alice, state=PaymentState.SUBMITTING)
    before = _stored(payment)
    too_long = PaymentEvent(payment=payment, kind=PaymentEventKind.STATUS, transaction_status="ACCP-TOO-LONG")

    # PostgreSQL refuses the text longer than the column (the value's cast has no length to cut it at); SQLite
    # does not check lengths, so there a missing required value is refused instead.
    refused = too_long if connection.vendor == "postgresql" else PaymentEvent(payment=payment, kind=None)
    refusal = r"too long for type character varying\(4\)|NOT NULL constraint failed: payments_paymentevent\.kind"
    with pytest.raises((DataError, IntegrityError), match=refusal), transaction.atomic():
        rawsql.update_and_insert(
            Payment,
            {"state": PaymentState.INITIATED, "updated_at": timezone.now()},
            where={"id": payment.pk, "state": (PaymentState.SUBMITTING,)},
            always=[_audit_rows(alice, "rolled-back")],
            if_updated=[rawsql.instance_rows([refused])],
        )

    assert _stored(payment) == before
    assert _events(payment) == []
    assert not BankCall.objects.exists()
