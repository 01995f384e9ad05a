"""The one payment state machine: its table, its one writer, and that nothing else writes a payment's state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from payments.models import UNKNOWN_OUTCOME_STATES, Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services.lifecycle import (
    EDITABLE_STATES,
    TRANSITIONS,
    IllegalTransition,
    payment_move,
)
from tests.payments.payment_factories import PaymentFactory

ROOT = Path(__file__).resolve().parents[2]


def test_every_state_has_a_row_and_every_target_is_a_state():
    assert set(TRANSITIONS) == set(PaymentState.values)
    for targets in TRANSITIONS.values():
        assert targets <= set(PaymentState.values)


def test_a_payment_of_unknown_outcome_never_becomes_editable_nor_refused():
    """The money rule in the table: once the bank may hold the payment (outcome unknown, or unconfirmed), no
    move leads to a state the user may edit or that says the bank has nothing. (SUBMITTING goes back to DRAFT
    or REFUSED only on the first send: payment_move is conditioned on ``reconcile_attempts=0`` there, so a
    replay never does; tests/payments/test_initiation.py shows it.)"""
    reachable: set[str] = set()
    frontier = {PaymentState.OUTCOME_UNKNOWN, PaymentState.UNCONFIRMED}
    while frontier:
        state = frontier.pop()
        reachable.add(state)
        frontier |= (TRANSITIONS[state] - {PaymentState.SUBMITTING}) - reachable
    assert not reachable & (EDITABLE_STATES | {PaymentState.REFUSED})
    assert UNKNOWN_OUTCOME_STATES <= reachable | {PaymentState.SUBMITTING}


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (PaymentState.OUTCOME_UNKNOWN, PaymentState.DRAFT),
        (PaymentState.UNCONFIRMED, PaymentState.REFUSED),
        (PaymentState.FINAL, PaymentState.AWAITING_STATUS),
        (PaymentState.DRAFT, PaymentState.INITIATED),
    ],
)
def test_an_illegal_move_raises_and_writes_nothing(alice, source, target):
    payment = PaymentFactory(user=alice, state=source)

    with pytest.raises(IllegalTransition):
        payment_move(
            payment.pk,
            source=source,
            target=target,
            events=[PaymentEvent(payment=payment, kind=PaymentEventKind.NOTE)],
        )

    payment.refresh_from_db()
    assert payment.state == source and not payment.events.filter(kind=PaymentEventKind.NOTE).exists()


def test_a_move_is_a_compare_and_set_with_its_events(alice):
    payment = PaymentFactory(user=alice, state=PaymentState.INITIATED)
    note = [PaymentEvent(payment=payment, kind=PaymentEventKind.NOTE, detail="x")]

    assert payment_move(payment.pk, source=PaymentState.INITIATED, target=PaymentState.AUTHORISING, events=note)
    # The second writer finds the row moved on: nothing written, no event.
    assert not payment_move(
        payment.pk,
        source=PaymentState.INITIATED,
        target=PaymentState.AUTHORISING,
        events=[PaymentEvent(payment=payment, kind=PaymentEventKind.NOTE, detail="y")],
    )
    assert Payment.objects.get(pk=payment.pk).state == PaymentState.AUTHORISING
    assert list(payment.events.filter(kind=PaymentEventKind.NOTE).values_list("detail", flat=True)) == ["x"]


def _writes_state(node: ast.AST) -> bool:
    """A queryset's ``.update(state=...)`` (``Payment.objects....update``), or a ``.save()`` naming ``state``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    receiver = ast.unparse(node.func.value)
    if node.func.attr == "update" and ("objects" in receiver or "filter(" in receiver):
        payments = "PaymentAuthorisation" not in receiver and "PaymentEvent" not in receiver
        return any(keyword.arg == "state" or (keyword.arg is None and payments) for keyword in node.keywords)
    if node.func.attr == "save":
        return any(
            keyword.arg == "update_fields"
            and any(isinstance(c, ast.Constant) and c.value == "state" for c in ast.walk(keyword.value))
            for keyword in node.keywords
        )
    return False


def test_no_module_but_the_lifecycle_writes_a_payment_state():
    offenders = []
    for path in sorted((ROOT / "payments").rglob("*.py")):
        if "migrations" in path.parts or path.name == "lifecycle.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree) if _writes_state(node)]
    assert offenders == []


def test_the_services_do_not_import_the_tasks():
    for path in sorted((ROOT / "payments" / "services").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "payments.tasks", path.name
                assert not (node.module == "payments" and any(a.name == "tasks" for a in node.names)), path.name
