"""The one payment state machine: which state may follow which, and the one function that moves a payment.

Why a small table of our own rather than django-fsm-2 or python-statemachine: every move here is already a
compare-and-set UPDATE conditioned on more than the state (the submission's idempotency key, the poller's
lease token, the reconciler's due time), and must write its timeline events in the same transaction. A
library's transition decorators work on a loaded instance and save it (django-fsm-2's ConcurrentTransitionMixin
adds the state to the UPDATE's WHERE, but not our other conditions); wrapping each of them would cost more
than the dozen lines below, and the table stays readable in one place (tests/payments/test_lifecycle.py walks
it and checks that no other module writes ``state``).

``payment_move`` is the only writer of ``Payment.state`` outside the creation of a draft: an illegal move
raises ``IllegalTransition`` before anything is written; a move whose row is no longer in a source state (or
no longer meets ``where``) writes nothing and returns False, so that of two racing writers only one wins. A move
that stores a bank status the owner is mailed about records the mail in the same transaction
(payments.services.notifications).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from payments.models import UNKNOWN_OUTCOME_STATES, Payment, PaymentEvent, PaymentState
from payments.services.notifications import MAILED_STATUSES, payment_mail_record

S = PaymentState

#: state -> the states it may move to. A payment of unknown outcome (SUBMITTING, OUTCOME_UNKNOWN, UNCONFIRMED)
#: never goes back to DRAFT or REFUSED once it may have reached the bank: only SUBMITTING whose call proved
#: nothing left (TransportError) returns to DRAFT.
TRANSITIONS: dict[str, frozenset[str]] = {
    S.DRAFT: frozenset({S.SUBMITTING}),
    S.SUBMITTING: frozenset(
        {
            S.DRAFT,  # nothing left (DNS, refused connection, TLS handshake failure, connect timeout)
            S.REFUSED,  # the first send answered 4xx: nothing exists at the bank
            S.OUTCOME_UNKNOWN,
            S.UNCONFIRMED,  # a replay refused: the bank may hold the first
            S.INITIATED,
            S.AUTHORISING,
            S.AWAITING_STATUS,
            S.FINAL,
        }
    ),
    # An answer stored late (its caller outlived its lease) is the bank's word too.
    S.OUTCOME_UNKNOWN: frozenset(
        {S.SUBMITTING, S.UNCONFIRMED, S.INITIATED, S.AUTHORISING, S.AWAITING_STATUS, S.FINAL}
    ),
    # Found in the account, settled by staff, or attached by staff to the payment the bank confirmed it holds.
    S.UNCONFIRMED: frozenset({S.FOUND, S.NOT_AT_BANK, S.INITIATED, S.AWAITING_STATUS, S.FINAL}),
    S.FOUND: frozenset(),
    S.NOT_AT_BANK: frozenset(),
    S.REFUSED: frozenset(),
    S.INITIATED: frozenset({S.AUTHORISING, S.AWAITING_STATUS, S.FINAL}),
    S.AUTHORISING: frozenset({S.AWAITING_STATUS, S.FINAL}),
    S.AWAITING_STATUS: frozenset({S.AUTHORISING, S.FINAL}),
    S.FINAL: frozenset(),
}

__all__ = [
    "EDITABLE_STATES",
    "END_STATES",
    "TRANSITIONS",
    "UNKNOWN_OUTCOME_STATES",
    "IllegalTransition",
    "payment_move",
]

#: The states the user may edit from (the edit makes a new draft): never sent, or refused at the first send.
EDITABLE_STATES = frozenset({S.DRAFT, S.REFUSED})
#: The states of a payment that is over for the portal (no further move).
END_STATES = frozenset(state for state, targets in TRANSITIONS.items() if not targets)


class IllegalTransition(ValueError):
    """A move the table does not allow (a bug in the caller, never the bank's doing)."""


def check_move(sources: Iterable[str], target: str) -> None:
    for source in sources:
        if target != source and target not in TRANSITIONS[source]:
            raise IllegalTransition(f"a payment does not move from {source} to {target}")


def payment_move(
    pk: int,
    /,
    *,
    source: str | Iterable[str],
    target: str | None,
    where: Mapping[str, Any] | None = None,
    events: Iterable[PaymentEvent] = (),
    **fields: Any,
) -> bool:
    """Move the payment from one of ``source`` to ``target`` (None: stay in its state, write ``fields`` only)
    with one conditional UPDATE (also conditioned on ``where``) and write ``events`` in the same transaction.
    True when this call moved it; False (nothing written) when another writer got there first.

    A move with no event and no mail to record is its single UPDATE, atomic by itself (no transaction block
    around it). Inside a caller's transaction the move adds no savepoint of its own: whatever fails in it fails
    the caller's transaction, which none of them continues."""
    sources = (source,) if isinstance(source, str) else tuple(source)
    if target is not None:
        check_move(sources, target)
        fields["state"] = target
    fields.setdefault("updated_at", timezone.now())
    rows = list(events)
    status = fields.get("transaction_status")
    mailed = isinstance(status, str) and status in MAILED_STATUSES
    payments = Payment.objects.filter(pk=pk, state__in=sources, **dict(where or {}))
    if not rows and not mailed:
        return payments.update(**fields) == 1
    with transaction.atomic(savepoint=False):
        moved = payments.update(**fields) == 1
        if moved:
            if rows:
                PaymentEvent.objects.bulk_create(rows)
            if mailed:
                payment_mail_record(pk, status)
    return moved
