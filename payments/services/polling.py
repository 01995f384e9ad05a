"""Status polling of payments after approval (issue 7): one poller per payment, slower over time, until final.

The schedule lives in the database, not in the broker: ``Payment.next_poll_at`` is the time of the next status
read. ``poll_soon`` sets it to now and enqueues the poll once the transaction commits; beat's
``payments.dispatch_due_polls`` enqueues every payment whose time has come (so polling resumes after a restart,
and a task lost with a killed worker is enqueued again). Whoever polls first takes the lease
(``poll_lease_until``/``poll_lease_token``) with a conditional UPDATE: a second poller of the same payment finds
the lease held and does nothing, so two pollers never call the bank for one payment at once.

A poll that dies half-way (worker killed) loses nothing: the bank call is a read, and the answer is written in
one transaction (status, timeline event, next poll) only by the holder of the lease; until then
``next_poll_at`` stays due and the lease expires on its own.

When to poll next:

* a final status (ACSC, ACCC, RJCT, CANC): never again;
* RCVD or PATC (approval, or a further signature, still missing): from the start of each SCA, slowly, with
  backoff, for as long as the bank's SCA may still be completed (``PAYMENT_POLL_SIGNERS_WINDOW``): a PSU who
  approved on another device, or whose redirect back never came, is seen this way; the callback of an approval
  calls ``poll_soon`` anyway; after that window, every ``PAYMENT_POLL_MAX_INTERVAL``;
* a status the bank's batches move on (PDNG, ACTC, ACCP, ACSP ...): shortly after the bank's next batch
  (``BANK_BATCH_TIMES``, the bank's configuration), and overnight at least every ``PAYMENT_POLL_BATCH_MAX_WAIT``
  (the status may change asynchronously, spec 3 rule 1); where the batch times are unknown, backoff: the longer
  the status has not changed, the longer the wait (up to ``PAYMENT_POLL_MAX_INTERVAL``). A status the portal
  does not know is read the same way.

No payment is polled for ever: one still not final ``PAYMENT_POLL_HORIZON`` after it was sent is polled no more
and is passed to staff (``staff_flagged_at``), so that every payment not final has either a next poll or a staff
flag.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from core.bank import bank_audit_context, bank_client
from payments.models import (
    FINAL_TRANSACTION_STATUSES,
    Payment,
    PaymentAuthorisation,
    PaymentEvent,
    PaymentEventKind,
    PaymentProduct,
    PaymentState,
)
from payments.services import dispatch
from payments.services.lifecycle import payment_move
from xs2a.errors import AccessExceededError, ResourceUnknownError, Xs2aError

logger = logging.getLogger(__name__)

#: Statuses that wait for the PSU (approval) or for further signers, not for the bank's processing.
WAITING_FOR_SIGNERS = frozenset({"RCVD", "PATC"})

DISPATCH_BATCH = 500  # due payments enqueued per beat run


@dataclass(frozen=True)
class PollOutcome:
    """The result of one poll. ``ok`` false: the bank failed (``message`` carries its text) or no poll ran."""

    ok: bool
    message: str
    status: str
    changed: bool = False
    skipped: bool = False  # another poller holds the lease, or there is nothing to poll


def next_batch_after(moment: datetime) -> datetime | None:
    """The first batch slot strictly after ``moment`` (UTC), or None without a schedule."""
    slots = settings.BANK_BATCH_TIMES
    if not slots:
        return None
    moment = moment.astimezone(UTC)
    for day in range(2):
        date = moment.date() + timedelta(days=day)
        for slot in slots:
            candidate = datetime.combine(date, slot, tzinfo=UTC)
            if candidate > moment:
                return candidate
    raise AssertionError("a non-empty daily schedule has a slot within two days")


def next_poll_time(*, status: str, now: datetime, unchanged_since: datetime) -> datetime | None:
    """When to read the status of a payment next, given its bank ``status`` (unchanged since
    ``unchanged_since``); None: never (a final status). A status the portal does not know is read on the
    backoff like any other non-final one; ``past_horizon`` says when to stop and ask staff instead."""
    if status in FINAL_TRANSACTION_STATUSES:
        return None
    minimum, maximum = settings.PAYMENT_POLL_MIN_INTERVAL, settings.PAYMENT_POLL_MAX_INTERVAL
    waited = max(now - unchanged_since, timedelta(0))
    backoff = min(max(waited, minimum), maximum)  # doubles the time since the last change: slower over time
    if status in WAITING_FOR_SIGNERS:
        if waited > settings.PAYMENT_POLL_SIGNERS_WINDOW:
            # The SCA sessions have expired (a new approval calls poll_soon): the bank may still end the payment
            # (expire, reject it), so it is read now and then until the horizon hands it to staff.
            return now + maximum
        return now + backoff
    batch = next_batch_after(now)
    if batch is None:
        return now + backoff
    return min(batch + settings.PAYMENT_POLL_BATCH_GRACE, now + settings.PAYMENT_POLL_BATCH_MAX_WAIT)


def past_horizon(payment: Payment, now: datetime) -> bool:
    """Whether a payment not final yet was sent longer ago than PAYMENT_POLL_HORIZON: it is then polled no more
    and goes to the staff queue (no payment is polled for ever)."""
    sent = payment.submitted_at or payment.created_at
    return now - sent > settings.PAYMENT_POLL_HORIZON


def _staff_fields(locked: Payment, now: datetime) -> dict:
    """The fields that hand a payment to staff at the poll horizon, with its timeline note (once)."""
    reason = _("No final status from the bank within %(days)s days.") % {
        "days": settings.PAYMENT_POLL_HORIZON.days
    }
    if locked.staff_flagged_at is None:
        PaymentEvent.objects.create(payment=locked, at=now, kind=PaymentEventKind.STAFF, detail=reason[:512])
    return {"next_poll_at": None, "staff_flagged_at": locked.staff_flagged_at or now, "staff_reason": reason[:300]}


# --- scheduling ----------------------------------------------------------------------------------------------


def poll_soon(payment: Payment) -> None:
    """Read the payment's status as soon as possible: next_poll_at = now, and the poll task is enqueued when
    the current transaction commits (at once outside one). Safe to call twice: the lease makes one poll."""
    now = timezone.now()
    Payment.objects.filter(pk=payment.pk).update(next_poll_at=now)
    payment.next_poll_at = now
    # robust: a broker that cannot be reached must not fail the request that approved the payment; the poll is
    # due in the database anyway, and beat's dispatcher enqueues it within a minute.
    dispatch.enqueue(dispatch.POLL, payment.pk)


def polls_after_bank_batches(*, limit: int = DISPATCH_BATCH) -> list[int]:
    """The bank's batches have just run (the sandbox's control, sandbox_admin): read at once the status of every
    payment that is still being polled and is not waiting for a signer, instead of waiting for the next batch
    time on the real clock. Their next poll becomes due now and beat's dispatcher (``polls_dispatch``) runs at
    once when the transaction commits; a poll already running keeps its lease (one poller per payment).
    Returns the payments' ids."""
    now = timezone.now()
    ids = list(
        Payment.objects.filter(next_poll_at__isnull=False)  # the polling index (Payment.Meta)
        .exclude(payment_id="")
        .exclude(transaction_status__in=FINAL_TRANSACTION_STATUSES | WAITING_FOR_SIGNERS)
        .order_by("next_poll_at", "id")
        .values_list("id", flat=True)[:limit]
    )
    if not ids:
        return []
    Payment.objects.filter(pk__in=ids).update(next_poll_at=now)
    # robust: a broker that cannot be reached must not fail the staff request; the polls are due in the
    # database, and beat's dispatcher enqueues them within a minute.
    transaction.on_commit(lambda: polls_dispatch(now=now), robust=True)
    return ids


def due_payment_ids(*, now: datetime | None = None, limit: int = DISPATCH_BATCH) -> list[int]:
    """Payments whose next poll is due and whose lease (if any) has expired, oldest due first."""
    now = now or timezone.now()
    return list(
        Payment.objects.filter(next_poll_at__lte=now)
        .filter(Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now))
        .order_by("next_poll_at", "id")
        .values_list("id", flat=True)[:limit]
    )


def polls_dispatch(*, now: datetime | None = None) -> list[int]:
    """Enqueue a poll of every due payment (beat runs this every minute).

    Each enqueued payment's next_poll_at moves one lease ahead, so the next beat run does not enqueue it again
    while the task waits in the queue; if the task is lost (a worker killed before it ran), the payment is due
    again after that and is enqueued again.
    """
    now = now or timezone.now()
    ids = due_payment_ids(now=now)
    if not ids:
        return []
    Payment.objects.filter(pk__in=ids, next_poll_at__lte=now).update(
        next_poll_at=now + settings.PAYMENT_POLL_LEASE
    )
    for payment_id in ids:
        dispatch.enqueue_now(dispatch.POLL, payment_id)
    return ids


# --- the lease -----------------------------------------------------------------------------------------------


def lease_take(*, payment_id: int, now: datetime) -> str | None:
    """Take the single-poller lease of the payment: one conditional UPDATE, so of two pollers racing only one
    gets it. Returns the lease token, or None when another poller holds an unexpired lease."""
    token = secrets.token_hex(16)
    taken = (
        Payment.objects.filter(pk=payment_id)
        .filter(Q(poll_lease_until__isnull=True) | Q(poll_lease_until__lt=now))
        .update(poll_lease_until=now + settings.PAYMENT_POLL_LEASE, poll_lease_token=token)
    )
    return token if taken == 1 else None


def lease_release(*, payment_id: int, token: str) -> None:
    Payment.objects.filter(pk=payment_id, poll_lease_token=token).update(
        poll_lease_until=None, poll_lease_token=""
    )


# --- one poll ------------------------------------------------------------------------------------------------


def _last_change(payment: Payment) -> datetime:
    """When the bank's status last changed, or an SCA of the payment last started (RCVD and PATC wait for the
    PSU: their backoff and window count from the latest start of an approval)."""
    last = (
        PaymentEvent.objects.filter(
            payment=payment, kind__in=(PaymentEventKind.STATUS, PaymentEventKind.SCA_STARTED)
        )
        .order_by("-at", "-id")
        .values_list("at", flat=True)
        .first()
    )
    return last or payment.submitted_at or payment.created_at


def _bank_text(error: Xs2aError) -> str:
    return error.text or error.code or (f"HTTP {error.status}" if error.status else error.message)


def payment_poll(*, payment_id: int, now: datetime | None = None, actor=None) -> PollOutcome:
    """Read the payment's status from the bank once, now, and store what changed (status, funds, timeline,
    next poll). Returns at once (``skipped``) when another poller holds the lease or there is nothing to read.

    ``actor``: the user who asked (the "check now" button), for the audit of the bank call; None for the worker.
    """
    started = timezone.now()  # the real clock (``now`` may be a simulated one), see _keep_asked_poll
    now = now or started
    token = lease_take(payment_id=payment_id, now=now)
    if token is None:
        status = Payment.objects.filter(pk=payment_id).values_list("transaction_status", flat=True).first()
        return PollOutcome(
            ok=False, message=_("The status is being checked already."), status=status or "", skipped=True
        )
    try:
        payment = Payment.objects.get(pk=payment_id)
        if not payment.payment_id or payment.is_final:
            Payment.objects.filter(pk=payment_id).update(next_poll_at=None)
            return PollOutcome(
                ok=True, message=_("There is nothing to check."), status=payment.transaction_status, skipped=True
            )
        _read_open_approvals(payment, now=now, actor=actor)
        return _poll(payment, token=token, now=now, actor=actor, started=started)
    finally:
        lease_release(payment_id=payment_id, token=token)


#: scaStatus values that end an SCA (Berlin Group).
SCA_DONE_STATUSES = frozenset({"finalised", "exempted"})
SCA_FAILED_STATUSES = frozenset({"failed"})
#: At most this many open approvals are read per poll (a corporate payment's signers).
OPEN_APPROVALS_READ = 3


def _read_open_approvals(payment: Payment, *, now: datetime, actor) -> None:
    """The scaStatus of the payment's approvals still open at the bank (a signer approving in the bank's app gets
    no redirect back): ``finalised`` counts the signature, ``failed`` ends that approval. The bank's word, read
    with the poller's lease held; a failed read changes nothing (the next poll reads again)."""
    window_start = now - settings.PAYMENT_POLL_SIGNERS_WINDOW
    open_ones = list(
        PaymentAuthorisation.objects.filter(
            payment=payment, completed_at__isnull=True, failed_at__isnull=True, started_at__gte=window_start
        )
        .exclude(sca_status_href="", authorisation_id="")
        .order_by("started_at", "id")[:OPEN_APPROVALS_READ]
    )
    for authorisation in open_ones:
        try:
            with bank_audit_context(user=actor, obj=payment):
                answer = bank_client().payments.authorisation_status(
                    href=authorisation.sca_status_href or None,
                    payment_id=payment.payment_id,
                    authorisation_id=authorisation.authorisation_id or None,
                    product=payment.product,
                )
        except Xs2aError as error:
            logger.info(
                "approval status not read", extra={"payment_id": payment.pk, "error": type(error).__name__}
            )
            continue
        sca_status = (answer.sca_status or "").strip().lower()
        with transaction.atomic():
            fields = {"sca_status": sca_status[:40]}
            if sca_status in SCA_DONE_STATUSES:
                fields.update(completed_at=now, failed_at=None, failure="")
            elif sca_status in SCA_FAILED_STATUSES:
                fields.update(failed_at=now, failure=(answer.psu_message or sca_status)[:512])
            changed = PaymentAuthorisation.objects.filter(
                pk=authorisation.pk, completed_at__isnull=True, failed_at__isnull=True
            ).update(**fields)
            if changed and sca_status in SCA_DONE_STATUSES:
                PaymentEvent.objects.create(
                    payment=payment,
                    at=now,
                    kind=PaymentEventKind.SCA_DONE
                    if authorisation.signer_id == payment.user_id
                    else PaymentEventKind.SIGNATURE,
                    actor_id=authorisation.signer_id,
                    detail=_("Approved in the bank's app."),
                )
            elif changed and sca_status in SCA_FAILED_STATUSES:
                PaymentEvent.objects.create(
                    payment=payment,
                    at=now,
                    kind=PaymentEventKind.SCA_FAILED,
                    actor_id=authorisation.signer_id,
                    detail=_("The approval in the bank's app failed or was refused."),
                )


def _poll(payment: Payment, *, token: str, now: datetime, actor, started: datetime) -> PollOutcome:
    href = payment.links.get("status") if isinstance(payment.links, dict) else None
    try:
        with bank_audit_context(user=actor, obj=payment):
            answer = bank_client().payments.status(
                href=href if isinstance(href, str) and href else None,
                payment_id=payment.payment_id,
                product=payment.product,
            )
    except ResourceUnknownError as error:
        if payment.product == PaymentProduct.DOMESTIC and payment.state in (
            PaymentState.INITIATED,
            PaymentState.AUTHORISING,
        ):
            # Spec 3 rule 5 (known issue): a domestic payment's status cannot be read before it is approved.
            return _store_failure(
                payment,
                token=token,
                now=now,
                message=_("The bank shows the status of a domestic payment once it has been approved."),
                event=False,
                ok=True,
                started=started,
            )
        return _store_failure(
            payment, token=token, now=now, message=_bank_text(error), event=True, started=started
        )
    except AccessExceededError as error:
        return _store_failure(
            payment, token=token, now=now, message=_bank_text(error), retry_at=error.reset_at, started=started
        )
    except Xs2aError as error:
        logger.warning(
            "payment status not read",
            extra={"payment_id": payment.pk, "error": type(error).__name__, "x_request_id": error.request_id},
        )
        return _store_failure(payment, token=token, now=now, message=_bank_text(error), started=started)
    return _store_status(payment, token=token, now=now, answer=answer, started=started)


def _store_status(payment: Payment, *, token: str, now: datetime, answer, started: datetime) -> PollOutcome:
    status = answer.transaction_status
    with transaction.atomic():
        locked = Payment.objects.select_for_update().filter(pk=payment.pk, poll_lease_token=token).first()
        if locked is None:  # the lease expired during the call and another poller took over: it writes
            return PollOutcome(ok=True, message="", status=status, skipped=True)
        changed = status != locked.transaction_status or (
            answer.funds_available is not None and answer.funds_available != locked.funds_available
        )
        fields = {"poll_count": F("poll_count") + 1, "transaction_status": status}
        if answer.funds_available is not None:
            fields["funds_available"] = answer.funds_available
        if answer.psu_message:
            fields["psu_message"] = answer.psu_message[:512]
        if answer.tpp_messages:
            fields["tpp_messages"] = [
                {"category": m.category, "code": m.code, "path": m.path, "text": m.text}
                for m in answer.tpp_messages
            ]
        if changed:
            PaymentEvent.objects.create(
                payment=locked,
                at=now,
                kind=PaymentEventKind.STATUS,
                transaction_status=status,
                funds_available=answer.funds_available,
                detail=(answer.psu_message or "")[:512],
            )
        if status in FINAL_TRANSACTION_STATUSES:
            fields.update(state=PaymentState.FINAL, final_at=locked.final_at or now, next_poll_at=None)
        else:
            if status not in WAITING_FOR_SIGNERS and locked.state in (
                PaymentState.INITIATED,
                PaymentState.AUTHORISING,
            ):
                fields["state"] = PaymentState.AWAITING_STATUS
            elif status in WAITING_FOR_SIGNERS and locked.state == PaymentState.AWAITING_STATUS:
                # The bank asked one signer for no approval (an exemption) but still waits for signatures.
                fields["state"] = PaymentState.AUTHORISING
            since = now if changed else _last_change(locked)
            planned = next_poll_time(status=status, now=now, unchanged_since=since)
            fields["next_poll_at"] = _keep_asked_poll(locked, planned, started=started)
            if past_horizon(locked, now):
                fields.update(_staff_fields(locked, now))
        if not _update_holding_lease(locked.pk, token, locked.state, **fields):
            return PollOutcome(ok=True, message="", status=status, skipped=True)
    return PollOutcome(ok=True, message="", status=status, changed=changed)


def _store_failure(
    payment: Payment,
    *,
    token: str,
    now: datetime,
    message: str,
    event: bool = False,
    ok: bool = False,
    retry_at: datetime | None = None,
    started: datetime,
) -> PollOutcome:
    """No status was read: plan the next try (later and later), and for a lasting problem note it once."""
    with transaction.atomic():
        locked = Payment.objects.select_for_update().filter(pk=payment.pk, poll_lease_token=token).first()
        if locked is None:
            return PollOutcome(ok=ok, message=message, status=payment.transaction_status, skipped=True)
        status = locked.transaction_status
        since = _last_change(locked)
        later = next_poll_time(status=status or "RCVD", now=now, unchanged_since=since)
        if later is None and status not in FINAL_TRANSACTION_STATUSES:
            later = now + settings.PAYMENT_POLL_MAX_INTERVAL
        if retry_at is not None and (later is None or retry_at > later):
            later = retry_at
        elif later is not None:
            later = _keep_asked_poll(locked, later, started=started)
        if event:
            last = locked.events.order_by("-at", "-id").values_list("kind", "detail").first()
            if last != (PaymentEventKind.BANK_ERROR, message[:512]):
                PaymentEvent.objects.create(
                    payment=locked, at=now, kind=PaymentEventKind.BANK_ERROR, detail=message[:512]
                )
        fields = {"poll_count": F("poll_count") + 1, "next_poll_at": later}
        if status not in FINAL_TRANSACTION_STATUSES and past_horizon(locked, now):
            fields.update(_staff_fields(locked, now))
        if not _update_holding_lease(locked.pk, token, locked.state, **fields):
            return PollOutcome(ok=ok, message=message, status=status, skipped=True)
    return PollOutcome(ok=ok, message=message, status=status)


def _keep_asked_poll(locked: Payment, planned: datetime | None, *, started: datetime) -> datetime | None:
    """The next poll: ``planned``, unless poll_soon asked for one while this poll was under way (the SCA
    callback of an approval, a cancellation): its task ran into this poll's lease and did nothing, and what this
    poll read may predate that event, so the asked-for poll stays due (beat's dispatcher runs it). Recognised by
    a due time set after this poll started and not in the future (the dispatcher's marks are a lease ahead)."""
    asked = locked.next_poll_at
    if asked is None or not (started < asked <= timezone.now()):
        return planned
    return asked if planned is None else min(planned, asked)


def _update_holding_lease(pk: int, token: str, source: str, **fields) -> bool:
    """The write of a poll, only while its lease is still held: conditional on the token in the UPDATE itself,
    so that it holds on SQLite too (where select_for_update locks nothing). When another poller has taken
    over, everything this transaction wrote (the timeline event) is rolled back and the other poller writes."""
    target = fields.pop("state", None)
    if payment_move(pk, source=source, target=target, where={"poll_lease_token": token}, **fields):
        return True
    transaction.set_rollback(True)
    return False
