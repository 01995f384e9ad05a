"""What staff settle by hand: the payments the portal could not settle by itself (the staff queue).

A payment lands there (``staff_flagged_at``) when its answer was lost and the replay window passed, when the bank
refused the replay of a lost answer (it may hold the payment), or when no final status came within the poll
horizon. Staff ask the bank (its support, the account's statements) and record what it said; the user's payments
alike are held back until then (payments.services.initiation: a payment alike of unknown outcome). A payment
flagged at the horizon leaves the queue once a status read ("Poll the bank's status now") finds it final.
"""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext as _

from payments.models import PaymentEvent, PaymentEventKind, PaymentState
from payments.services.lifecycle import payment_move


def payment_staff_settle(*, payment_id: int, staff_user, at_bank: bool) -> bool:
    """A payment the bank did not confirm (UNCONFIRMED), settled by staff with the bank: FOUND (the bank has it)
    or NOT_AT_BANK (it does not: the user may pay anew). True when this call settled it."""
    now = timezone.now()
    detail = (
        _("Our staff checked with the bank: the bank has this payment.")
        if at_bank
        else _("Our staff checked with the bank: the bank does not have this payment. It was not paid.")
    )
    return payment_move(
        payment_id,
        source=PaymentState.UNCONFIRMED,
        target=PaymentState.FOUND if at_bank else PaymentState.NOT_AT_BANK,
        events=[
            PaymentEvent(
                payment_id=payment_id,
                at=now,
                kind=PaymentEventKind.STAFF_RESOLVED,
                actor=staff_user,
                detail=detail,
            )
        ],
        staff_flagged_at=None,
        staff_reason="",
        updated_at=now,
    )
