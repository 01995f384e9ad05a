"""Reconciliation of an initiation whose answer was lost (timeout, 5xx, unreadable answer, a caller that died).

A lost answer is never re-sent as a new payment: with the PSU present ("check now") and inside the replay
window, reconciliation replays the same request (payments.services.initiation_call: same X-Request-ID, the same
bytes, the same TPP-Session-ID and PSU headers, never allowing a logical duplicate). The bank answers a replay
with the payment it made the first time, or makes it now when the first never arrived: at most one payment
exists at the bank per submission. The background never replays; past the window the payment is UNCONFIRMED:
looked for in its debtor account's transactions and passed to staff, who settle it with the bank.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts import selectors as account_selectors
from core.bank import bank_audit_deferred
from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import initiation_call
from payments.services.lifecycle import payment_move
from xs2a.errors import AccessExceededError, ClientError, TransportError, Xs2aError
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)

#: Reconciliation of an OUTCOME_UNKNOWN payment: the first try soon, then slower; after the last the payment
#: stays "checking with the bank" and the user is told to ask the bank (nothing is ever sent anew).
RECONCILE_DELAYS = (
    timedelta(seconds=15),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(minutes=30),
)
#: What the user is told about an UNCONFIRMED payment.
UNCONFIRMED_MESSAGE = gettext_lazy(
    "The bank did not confirm whether it received this payment. Check your account at the bank before you try "
    "again: it may have the payment already."
)
#: What the user is told about a payment found in their account's transactions (FOUND).
FOUND_MESSAGE = gettext_lazy(
    "The bank has this payment: we found it in your account's transactions. Do not send it again."
)
#: Why a payment of unknown outcome was passed to staff.
STAFF_REASON_REFUSED_REPLAY = gettext_lazy(
    "The bank refused the repeated request of a payment whose answer was lost: it may hold the payment."
)
STAFF_REASON_WINDOW = gettext_lazy(
    "The bank's answer was lost and the replay window has passed: settle the payment with the bank."
)
STAFF_REASON_DUPLICATE_ALLOWED = gettext_lazy(
    "The bank's answer was lost for a payment sent as an allowed duplicate: it is never sent again (the bank "
    "could take the repeat for a second payment). Settle the payment with the bank."
)


@dataclass(frozen=True)
class ReconcileOutcome:
    state: str
    message: str = ""
    attempted: bool = True
    #: As payments.services.submission.SubmitOutcome's: the bank started the approval with the (replayed)
    #: initiation, or asked for none.
    sca_redirect: str = ""
    approval_skipped: bool = False


#: How long before the end of the day a replay is no longer sent: a replay the bank processes after midnight would
#: be given the next day as its execution date (the payment form's date is optional) and not match the first.
REPLAY_DAY_MARGIN = timedelta(minutes=5)


def replay_window_end(payment: Payment) -> datetime | None:
    """Until when the lost initiation of ``payment`` may be replayed: PAYMENT_REPLAY_WINDOW after it was sent,
    and never within REPLAY_DAY_MARGIN of the end of that day in Oslo. A bank that takes a repeated X-Request-ID
    for a new request guards against a second payment only by its logical-duplicate check, which compares
    execution dates (an absent one is the bank's day): the replay must reach the bank on the first one's day."""
    sent = payment.submitted_at
    if sent is None:
        return None
    local = timezone.localtime(sent)
    day_end = timezone.make_aware(datetime.combine(local.date() + timedelta(days=1), datetime.min.time()))
    return max(sent, min(sent + settings.PAYMENT_REPLAY_WINDOW, day_end - REPLAY_DAY_MARGIN))


def replay_allowed(payment: Payment, now: datetime) -> bool:
    """Inside the replay window, and never for a payment sent with allowLogicalDuplicate=true: a bank that takes
    a repeated X-Request-ID for a new request protects against a second payment only by its logical-duplicate
    check, which that first request asked it to skip; should the first arrive after the repeat (a slow bank), both
    would be made."""
    if payment.allow_logical_duplicate:
        return False
    end = replay_window_end(payment)
    return end is not None and now < end


def _staff_event(payment: Payment | int, now: datetime, reason) -> PaymentEvent:
    payment_id = payment if isinstance(payment, int) else payment.pk
    return PaymentEvent(payment_id=payment_id, at=now, kind=PaymentEventKind.STAFF, detail=str(reason)[:512])


def _replay_backoff(attempts: int, error: Xs2aError | None, now: datetime) -> datetime:
    """When the user's next "check now" may replay: the backoff of the attempts so far, later when the bank
    said when (Retry-After of a 429 or a 503)."""
    later = now + RECONCILE_DELAYS[min(attempts, len(RECONCILE_DELAYS) - 1)]
    reset_at = getattr(error, "reset_at", None)
    retry_after = getattr(error, "retry_after", None)
    if reset_at is not None:
        later = max(later, reset_at)
    elif retry_after is not None:
        later = max(later, now + timedelta(seconds=float(retry_after)))
    return later


def _lease_expired_to_unknown(payment_id: int, now: datetime) -> bool:
    """SUBMITTING whose caller's lease ran out (the process died during its call): its answer, if any, was never
    stored. OUTCOME_UNKNOWN with a note; the background looks again at the end of the replay window."""
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return False
    rows = []
    if not PaymentEvent.objects.filter(payment_id=payment_id, kind=PaymentEventKind.SUBMITTED).exists():
        rows.append(
            PaymentEvent(payment_id=payment_id, at=payment.submitted_at or now, kind=PaymentEventKind.SUBMITTED)
        )
    rows.append(
        PaymentEvent(
            payment_id=payment_id,
            at=now,
            kind=PaymentEventKind.OUTCOME_UNKNOWN,
            detail=_("The portal stopped while waiting for the bank's answer; checking with the bank."),
        )
    )
    end = replay_window_end(payment)
    return payment_move(
        payment_id,
        source=PaymentState.SUBMITTING,
        target=PaymentState.OUTCOME_UNKNOWN,
        where={"reconcile_at__lte": now},
        events=rows,
        reconcile_at=end if end is not None and end > now else now,
        updated_at=now,
    )


def _past_window_to_unconfirmed(payment_id: int, now: datetime) -> bool:
    """OUTCOME_UNKNOWN after the replay window: never replayed again. UNCONFIRMED (looked for in its account's
    transactions) and passed to staff, who settle it with the bank."""
    duplicate_allowed = Payment.objects.filter(pk=payment_id, allow_logical_duplicate=True).exists()
    reason = STAFF_REASON_DUPLICATE_ALLOWED if duplicate_allowed else STAFF_REASON_WINDOW
    moved = payment_move(
        payment_id,
        source=PaymentState.OUTCOME_UNKNOWN,
        target=PaymentState.UNCONFIRMED,
        events=[
            PaymentEvent(
                payment_id=payment_id,
                at=now,
                kind=PaymentEventKind.OUTCOME_UNKNOWN,
                detail=(
                    _("The bank did not confirm the payment; it is not sent again.")
                    if duplicate_allowed
                    else _("The bank did not confirm the payment in time; it is no longer sent again.")
                ),
            ),
            _staff_event(payment_id, now, reason),
        ],
        psu_identity="",
        initiation_psu="",
        reconcile_at=None,
        replay_not_before=None,
        staff_flagged_at=now,
        staff_reason=str(reason)[:300],
        updated_at=now,
    )
    if moved:
        unconfirmed_find(payment_id=payment_id)
    return moved


def reconciliation_check(*, payment_id: int, now: datetime | None = None) -> str:
    """The background's look at a payment whose answer was lost (beat and the task at the window's end). It
    never replays (the PSU is not present, and a replay sends presence headers only with the PSU): a caller
    that died becomes OUTCOME_UNKNOWN; OUTCOME_UNKNOWN past the replay window becomes UNCONFIRMED with a staff
    flag; inside the window it waits for the window's end. Returns the payment's state."""
    now = now or timezone.now()
    _lease_expired_to_unknown(payment_id, now)
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return ""
    if payment.state == PaymentState.OUTCOME_UNKNOWN:
        if replay_allowed(payment, now):
            Payment.objects.filter(pk=payment_id, state=PaymentState.OUTCOME_UNKNOWN).update(
                reconcile_at=replay_window_end(payment)
            )
        else:
            _past_window_to_unconfirmed(payment_id, now)
    return Payment.objects.filter(pk=payment_id).values_list("state", flat=True).first() or ""


def _after_the_second_of(last_sent: datetime) -> None:
    """Wait, when needed, until the second after ``last_sent``. A replay is signed over the same X-Request-ID,
    body, PSU-ID and TPP-Redirect-URI as the send before it; only its Date, in whole seconds, tells the two
    apart, and the bank refuses a Signature it has seen (a replayed request). A "check now" in the same second
    as the lost send would be refused as a replay and passed to staff although the bank would have answered."""
    wait = (last_sent.replace(microsecond=0) + timedelta(seconds=1) - timezone.now()).total_seconds()
    if wait > 0:
        time.sleep(wait)


def payment_reconcile(*, payment_id: int, actor=None, presence: PsuContext | None = None) -> ReconcileOutcome:
    """Find out what became of an initiation whose answer was lost: with the PSU present ("check now") and
    inside the replay window, by replaying the very same request (same X-Request-ID and bytes, never allowing
    a logical duplicate); otherwise as ``reconciliation_check`` (no replay).

    One caller at a time per payment: the claim makes the payment SUBMITTING with a lease (a conditional
    UPDATE), as the first submission did.
    """
    now = timezone.now()
    if presence is None:
        state = reconciliation_check(payment_id=payment_id, now=now)
        return ReconcileOutcome(state=state, attempted=False)
    payment = Payment.objects.filter(pk=payment_id).first()
    if payment is None:
        return ReconcileOutcome(state="", attempted=False)
    not_now = _no_replay_now(payment, now)
    if not_now is not None:
        return not_now
    last_sent = payment.updated_at  # stored after the last send ended; the claim below moves it on
    claimed = payment_move(
        payment_id,
        source=PaymentState.OUTCOME_UNKNOWN,
        target=PaymentState.SUBMITTING,
        reconcile_at=initiation_call.call_lease(now),
        reconcile_attempts=F("reconcile_attempts") + 1,
        updated_at=now,
    )
    if not claimed:
        state = Payment.objects.filter(pk=payment_id).values_list("state", flat=True).first() or ""
        return ReconcileOutcome(state=state, attempted=False)
    payment = Payment.objects.select_related("connection").get(pk=payment_id)
    psu = _replay_psu(payment, presence)
    attempts = payment.reconcile_attempts
    window_end = replay_window_end(payment) or now
    _after_the_second_of(last_sent)
    return _replay(payment, psu, actor=actor, attempts=attempts, window_end=window_end, now=now)


def _no_replay_now(payment: Payment, now: datetime) -> ReconcileOutcome | None:
    """Why "check now" replays nothing now: the replay window has passed (the payment goes to staff) or the
    bank asked us to wait; None when a replay may be tried."""
    if payment.state == PaymentState.OUTCOME_UNKNOWN and not replay_allowed(payment, now):
        _past_window_to_unconfirmed(payment.pk, now)
        payment.refresh_from_db(fields=["state"])
        return ReconcileOutcome(state=payment.state, message=UNCONFIRMED_MESSAGE, attempted=False)
    if (
        payment.state == PaymentState.OUTCOME_UNKNOWN
        and payment.replay_not_before
        and payment.replay_not_before > now
    ):
        return ReconcileOutcome(
            state=payment.state,
            attempted=False,
            message=_("The bank asked us to wait. Check again after %(time)s.")
            % {"time": timezone.localtime(payment.replay_not_before).strftime("%H:%M:%S")},
        )
    return None


def _replay_psu(payment: Payment, presence: PsuContext) -> PsuContext:
    """The PSU headers of a replay: the identity headers of the initiation, with the PSU's live request now."""
    stored = json.loads(payment.initiation_psu) if payment.initiation_psu else {}
    live = {
        name: getattr(presence, name)
        for name in initiation_call.REPLAY_FIELDS
        if getattr(presence, name) is not None
    }
    headers = {
        **{k: v for k, v in stored.items() if k in ("psu_id", "corporate_id", "context")},
        **{k: v for k, v in live.items() if k not in ("psu_id", "corporate_id", "context")},
    }
    return PsuContext(**headers, identity=payment.psu_identity or None)


def _replay(
    payment: Payment, psu: PsuContext, *, actor, attempts: int, window_end: datetime, now: datetime
) -> ReconcileOutcome:
    """The replay of a claimed payment's initiation, and what its answer is stored as."""
    with bank_audit_deferred() as flush_audit:
        try:
            answer = initiation_call.send(payment, psu, actor=actor, replay=True)
        except (*initiation_call.ANSWER_LOST, TransportError, AccessExceededError) as error:
            return _replay_unanswered(
                payment,
                error,
                actor=actor,
                attempts=attempts,
                window_end=window_end,
                now=now,
                flush_audit=flush_audit,
            )
        except ClientError as error:
            # Whether the first request arrived is still not known: a bank that refuses a repeated request
            # (CONFLICT, a logical duplicate) may hold the payment. Never REFUSED, never sent again by itself.
            logger.warning(
                "payment reconciliation: the replay was refused",
                extra={"payment_id": payment.pk, "error": type(error).__name__, "x_request_id": error.request_id},
            )
            _store_unconfirmed(payment, error, actor=actor, flush_audit=flush_audit)
            payment.refresh_from_db(fields=["state"])
            return ReconcileOutcome(state=payment.state, message=UNCONFIRMED_MESSAGE)
        except BaseException:
            initiation_call.store_unknown(
                payment, later=window_end, detail="", actor=actor, flush_audit=flush_audit
            )
            raise
        # The replay carries the TPP-Redirect-URI of the SCA state made for the first submission (when it had
        # the PSU's browser session): an approval the bank starts now is tied to it.
        sca_state = payment.initiation_sca_state
        stored_answer = initiation_call.store_initiated(
            payment,
            answer,
            kind=PaymentEventKind.RECONCILED,
            actor=actor,
            flush_audit=flush_audit,
            sca_state=sca_state,
        )
    payment.refresh_from_db(fields=["state"])
    if not stored_answer:
        return ReconcileOutcome(state=payment.state)
    step = initiation_call.next_step(payment, answer)
    return ReconcileOutcome(
        state=payment.state,
        message=step.message,
        sca_redirect=step.sca_redirect,
        approval_skipped=step.approval_skipped,
    )


def _replay_unanswered(
    payment: Payment, error: Xs2aError, *, actor, attempts: int, window_end: datetime, now: datetime, flush_audit
) -> ReconcileOutcome:
    """No answer, or "not now" (429, 5xx): the outcome is as unknown as before. Checking goes on with backoff
    (the bank's Retry-After respected) inside the window; the background settles it after."""
    not_before = _replay_backoff(attempts, error, now)
    initiation_call.store_unknown(
        payment,
        later=window_end,
        not_before=not_before,
        detail="",
        actor=actor,
        flush_audit=flush_audit,
    )
    logger.warning(
        "payment reconciliation: no answer",
        extra={"payment_id": payment.pk, "error": type(error).__name__, "attempt": attempts},
    )
    return ReconcileOutcome(
        state=PaymentState.OUTCOME_UNKNOWN,
        message=_("The bank did not answer yet. Check again after %(time)s.")
        % {"time": timezone.localtime(not_before).strftime("%H:%M:%S")},
    )


def _store_unconfirmed(payment: Payment, error: Xs2aError, *, actor, flush_audit) -> bool:
    """The bank refused the replay of a request whose first answer was lost: it may have made the payment the
    first time. SUBMITTING -> UNCONFIRMED, with the bank's messages; never REFUSED, never sent again by itself."""
    now = timezone.now()
    text = error.text or error.code or (f"HTTP {error.status}" if error.status else error.message)
    with transaction.atomic():
        flush_audit()
        updated = payment_move(
            payment.pk,
            source=PaymentState.SUBMITTING,
            target=PaymentState.UNCONFIRMED,
            events=[
                PaymentEvent(
                    payment=payment,
                    at=now,
                    kind=PaymentEventKind.OUTCOME_UNKNOWN,
                    actor=actor,
                    detail=_("The bank refused the repeated request (%(text)s); it may have the payment already.")
                    % {"text": text[:300]},
                ),
                _staff_event(payment, now, STAFF_REASON_REFUSED_REPLAY),
            ],
            tpp_messages=initiation_call.bank_messages(error),
            psu_identity="",
            initiation_psu="",
            reconcile_at=None,
            staff_flagged_at=now,
            staff_reason=str(STAFF_REASON_REFUSED_REPLAY),
            updated_at=now,
        )
    return updated


def reconciliations_due(*, now=None, limit: int = 200) -> list[int]:
    """OUTCOME_UNKNOWN payments whose background look is due (the end of their replay window), and SUBMITTING
    ones whose caller's lease ran out."""
    now = now or timezone.now()
    return list(
        Payment.objects.filter(
            state__in=(PaymentState.OUTCOME_UNKNOWN, PaymentState.SUBMITTING), reconcile_at__lte=now
        )
        .order_by("reconcile_at", "id")
        .values_list("id", flat=True)[:limit]
    )


def payment_kid(payment: Payment) -> str:
    """The KID the payment was sent with (remittanceInformationStructuredArray), or ""."""
    try:
        body = json.loads(payment.body_json or "{}")
    except ValueError:
        return ""
    for entry in body.get("remittanceInformationStructuredArray") or []:
        if isinstance(entry, dict) and entry.get("referenceType") == "KID" and entry.get("reference"):
            return str(entry["reference"])
    return ""


def unconfirmed_find(*, payment_id: int) -> bool:
    """An UNCONFIRMED payment whose reference (or, for a KID payment, KID and amount) shows in a debit of its
    debtor account (as the bank reported the account's transactions) becomes FOUND: the bank has it, and it
    leaves the staff queue. Reads stored transactions only (no bank call); True when the payment was found now."""
    payment = Payment.objects.filter(pk=payment_id, state=PaymentState.UNCONFIRMED).first()
    if payment is None:
        return False
    submitted = timezone.localdate(payment.submitted_at or payment.created_at)
    since = submitted - timedelta(days=1)  # the bank's booking day may lag the portal's clock by a day
    match = None
    if payment.reference:
        match = account_selectors.debits_mentioning(
            user=payment.user, account_number=payment.debtor_account, text=payment.reference, since=since
        ).first()
    kid = payment_kid(payment)
    if match is None and kid:  # a KID payment usually has no free text: its KID, amount and date find it
        match = account_selectors.debits_with_kid(
            user=payment.user,
            account_number=payment.debtor_account,
            kid=kid,
            amount=payment.amount,
            currency=payment.currency,
            since=since,
        ).first()
    if match is None:
        return False
    now = timezone.now()
    with transaction.atomic():
        updated = payment_move(
            payment.pk,
            source=PaymentState.UNCONFIRMED,
            target=PaymentState.FOUND,
            events=[
                PaymentEvent(
                    payment=payment,
                    at=now,
                    kind=PaymentEventKind.FOUND,
                    detail=_("%(status)s in the account on %(date)s: %(amount)s %(currency)s")
                    % {
                        "status": match.get_status_display(),
                        "date": match.booking_date.isoformat() if match.booking_date else "-",
                        "amount": match.amount,
                        "currency": match.currency,
                    },
                )
            ],
            staff_flagged_at=None,
            staff_reason="",
            updated_at=now,
        )
    return updated


#: An UNCONFIRMED payment is looked for in its account's transactions this long after it was sent (the bank
#: lists 90 days of transactions without a new SCA; an older one stays with the user's word).
FIND_UNCONFIRMED_FOR = timedelta(days=90)


def unconfirmed_find_all(*, limit: int = 500, now: datetime | None = None) -> int:
    """``unconfirmed_find`` for the UNCONFIRMED payments sent in the last FIND_UNCONFIRMED_FOR, newest first (beat,
    every few minutes; old ones never found do not crowd out new ones): how many were found."""
    now = now or timezone.now()
    ids = list(
        Payment.objects.filter(state=PaymentState.UNCONFIRMED, submitted_at__gte=now - FIND_UNCONFIRMED_FOR)
        .order_by("-submitted_at", "-id")
        .values_list("id", flat=True)[:limit]
    )
    return sum(unconfirmed_find(payment_id=payment_id) for payment_id in ids)
