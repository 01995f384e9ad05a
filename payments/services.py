"""Writes: storing fetched exchange rates, staff edits of a rate; payment initiation, reconciliation, the start
of a payment's authorisation (SCA) and its callback."""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.crypto import lookup_hash
from accounts.models import (
    BankConnection,
    ConnectionAccess,
    ConnectionEvent,
    ConnectionState,
    PsuContextChoice,
    ScaPurpose,
    ScaState,
)
from accounts.services import (
    CallbackParams,
    IdentityMismatch,
    ScaStateRejected,
    connection_transition,
    sca_state_consume,
    session_key_hash,
)
from payments import rates as rate_source
from payments.instructions import BANK_PATH_TO_FIELD
from payments.models import (
    ExchangeRate,
    ExchangeRateSource,
    Payment,
    PaymentAuthorisation,
    PaymentEvent,
    PaymentEventKind,
    PaymentProduct,
    PaymentState,
)
from tpp_portal import rawsql
from tpp_portal.bank import bank_audit_context, bank_audit_deferred, bank_client
from xs2a import models as bank_models
from xs2a.errors import (
    ClientError,
    OutcomeUnknownError,
    ResponseSignatureError,
    ServerError,
    TransportError,
    UnexpectedResponseError,
    Xs2aError,
)
from xs2a.psu import PsuContext

logger = logging.getLogger(__name__)


@dataclass
class RatesStored:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    # (currency, date) of rates staff edited: the fetcher leaves them as staff set them.
    kept_staff_edits: list[tuple[str, str]] = field(default_factory=list)


def exchange_rates_store(
    *,
    rates: Iterable[rate_source.FetchedRate],
    source: str = ExchangeRateSource.NORGES_BANK,
    fetched_at: datetime | None = None,
) -> RatesStored:
    """Upsert ``rates`` on (currency, date, source) in one transaction; never overwrite a staff-edited row."""
    fetched_at = fetched_at or timezone.now()
    summary = RatesStored()
    with transaction.atomic():
        for fetched in rates:
            row, created = ExchangeRate.objects.select_for_update().get_or_create(
                currency=fetched.currency,
                rate_date=fetched.rate_date,
                source=source,
                defaults={"rate": fetched.rate, "unit": fetched.unit, "fetched_at": fetched_at},
            )
            if created:
                summary.created += 1
            elif row.updated_by_id is not None:
                summary.kept_staff_edits.append((row.currency, row.rate_date.isoformat()))
            elif row.rate != fetched.rate or row.unit != fetched.unit:
                row.rate, row.unit, row.fetched_at = fetched.rate, fetched.unit, fetched_at
                row.save(update_fields=["rate", "unit", "fetched_at"])
                summary.updated += 1
            else:
                summary.unchanged += 1
    if summary.kept_staff_edits:
        logger.info("exchange rates edited by staff were kept: %s", summary.kept_staff_edits)
    return summary


def exchange_rates_refresh(*, base_url: str | None = None, timeout: float | None = None) -> RatesStored:
    """Fetch Norges Bank's latest rates and store them. The fetch runs before, not inside, the transaction.

    Raises payments.rates.RateSourceError when the source fails; the stored rates are then untouched.
    """
    fetched = rate_source.fetch_norges_bank_rates(base_url=base_url, timeout=timeout)
    summary = exchange_rates_store(rates=fetched, source=ExchangeRateSource.NORGES_BANK)
    logger.info(
        "exchange rates refreshed from Norges Bank: %d new, %d changed, %d unchanged",
        summary.created,
        summary.updated,
        summary.unchanged,
    )
    return summary


def exchange_rate_save_by_staff(*, exchange_rate: ExchangeRate, user) -> ExchangeRate:
    """Save a rate a staff member created or edited, recording who and when (the admin calls this)."""
    exchange_rate.updated_by = user
    exchange_rate.updated_at = timezone.now()
    if exchange_rate.pk is None and not exchange_rate.source:
        exchange_rate.source = ExchangeRateSource.MANUAL
    exchange_rate.full_clean()
    exchange_rate.save()
    logger.info(
        "exchange rate %s %s (%s) saved by staff user %s",
        exchange_rate.currency,
        exchange_rate.rate_date,
        exchange_rate.source,
        user.pk,
    )
    return exchange_rate


# =============================================================================================================
# Payment initiation and SCA (issue 7): draft -> submit (one bank call) -> initiated / refused / outcome
# unknown -> reconciliation; start of authorisation; the SCA callback of a payment.
#
# Rules kept here:
# - The payment row (idempotency key, X-Request-ID, exact body bytes) is committed before the bank is called;
#   the claim DRAFT -> SUBMITTING is a conditional UPDATE, so of two submits of one review page only one calls
#   the bank. No bank call runs inside ``transaction.atomic``.
# - A lost answer (timeout, 5xx, unreadable answer) is never re-sent as a new payment: reconciliation replays
#   the same request (same X-Request-ID, the same bytes, the same TPP-Session-ID and PSU headers,
#   allowLogicalDuplicate as first sent). The bank answers a replay with the payment it made the first time,
#   or makes it now when the first never arrived: at most one payment exists at the bank per submission.
# - The national identity number (single SCA) and the PSU headers are kept, encrypted, only while the answer
#   is unknown; they are erased as soon as it is known.
# =============================================================================================================

#: Reconciliation of an OUTCOME_UNKNOWN payment: the first try soon, then slower; after the last the payment
#: stays "checking with the bank" and the user is told to ask the bank (nothing is ever sent anew).
RECONCILE_DELAYS = (
    timedelta(seconds=15),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(minutes=30),
)
#: A reconciler holds the payment this long (a conditional UPDATE of reconcile_at claims it).
RECONCILE_LEASE = timedelta(minutes=2)

# The PSU headers kept for a replay: PsuContext fields, as sent.
_REPLAY_FIELDS = (
    "psu_id",
    "corporate_id",
    "context",
    "ip_address",
    "ip_port",
    "user_agent",
    "accept",
    "accept_charset",
    "accept_encoding",
    "accept_language",
    "http_method",
    "device_id",
    "geo_location",
)


class PaymentServiceError(Exception):
    """Base of the payment initiation errors of this module."""


class PaymentNotSubmittable(PaymentServiceError):
    """The payment cannot be sent (not a draft, the identity it needs is missing ...). ``field`` names the
    review page's field the message belongs beside, when there is one."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class AuthorisationNotStarted(PaymentServiceError):
    """The bank did not start the approval. ``message`` is for the user (the bank's text when it gave one)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class SubmitOutcome:
    """What a submission came to. ``payment.state`` says which: INITIATED (go on to approval), REFUSED
    (``field_errors``/``errors``: the bank's texts, by form field when its path names one), OUTCOME_UNKNOWN
    (reconciliation runs), DRAFT (nothing reached the bank: send again), or another state when this was a
    second submit of an already submitted payment (``duplicate_submit``)."""

    payment: Payment
    duplicate_submit: bool = False
    message: str = ""
    field_errors: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


# --- drafts --------------------------------------------------------------------------------------------------


def payment_draft_create(
    *,
    user,
    product: str,
    context: str,
    connection: BankConnection | None,
    instruction,
    body_json: bytes,
    form_data: dict,
    nok_equivalent: Decimal | None = None,
    allow_logical_duplicate: bool = False,
    replaces: Payment | None = None,
) -> Payment:
    """A reviewed, unsent payment: its idempotency key and X-Request-ID are made now; the body is frozen.

    ``replaces``: the draft this one was edited from; it is removed when still unsent (a submitted payment is
    never edited nor removed).
    """
    if product not in PaymentProduct.values or context not in PsuContextChoice.values:
        raise ValueError(f"unknown product or context: {product!r}, {context!r}")
    if connection is not None and connection.user_id != user.pk:
        raise ValueError("the connection is not the user's")
    creditor = instruction.creditor_account
    with transaction.atomic():
        payment = Payment.objects.create(
            user=user,
            connection=connection,
            product=product,
            context=context,
            state=PaymentState.DRAFT,
            idempotency_key=uuid.uuid4(),
            request_id=uuid.uuid4(),
            body_json=body_json.decode("utf-8"),
            form_data=form_data,
            allow_logical_duplicate=allow_logical_duplicate,
            amount=instruction.amount,
            currency=instruction.currency,
            debtor_account=instruction.debtor_account.iban or instruction.debtor_account.bban,
            creditor_name=instruction.creditor_name,
            creditor_account=creditor.iban or creditor.bban,
            requested_execution_date=instruction.requested_execution_date,
            nok_equivalent=nok_equivalent,
        )
        PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.CREATED, actor=user)
        if replaces is not None:
            Payment.objects.filter(pk=replaces.pk, user=user, state=PaymentState.DRAFT).delete()
    return payment


# --- submission ----------------------------------------------------------------------------------------------


def _replay_psu_json(psu: PsuContext) -> str:
    return json.dumps({name: getattr(psu, name) for name in _REPLAY_FIELDS if getattr(psu, name) is not None})


def _initiation_psu(payment: Payment, presence: PsuContext) -> PsuContext:
    """The PSU headers of the initiation: PSU-ID (and PSU-Corporate-ID) of the payment's connection, or
    X-PSU-IDENTITY for single SCA, with the PSU's live request."""
    connection = payment.connection
    if connection is not None:
        if not connection.psu_id or connection.state == ConnectionState.DISCONNECTED:
            raise PaymentNotSubmittable(_("The bank connection of this payment is no longer available."))
        return dataclasses.replace(
            presence,
            psu_id=connection.psu_id,
            corporate_id=connection.psu_corporate_id or None,
            context=payment.context,
            identity=None,
            tpp_session_id=None,
        )
    return dataclasses.replace(presence, psu_id=None, corporate_id=None, context=PsuContextChoice.PRIVATE)


def _bank_messages(error: Xs2aError) -> list[dict[str, Any]]:
    return [{"category": m.category, "code": m.code, "path": m.path, "text": m.text} for m in error.tpp_messages]


def bank_errors_by_field(tpp_messages: list[dict[str, Any]]) -> tuple[dict[str, list[str]], list[str]]:
    """The bank's ERROR texts by the form field their ``path`` names, and those naming no form field."""
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for message in tpp_messages or []:
        if str(message.get("category", "ERROR")).upper() != "ERROR":
            continue
        text = message.get("text") or message.get("code") or _("The bank refused the payment.")
        target = BANK_PATH_TO_FIELD.get(message.get("path") or "")
        if target is None and message.get("path") == "X-PSU-IDENTITY":
            target = "national_identity_number"
        if target:
            by_field.setdefault(target, []).append(text)
        else:
            general.append(text)
    return by_field, general


def _answer_fields(answer: bank_models.PaymentInitiationResponse) -> dict[str, Any]:
    fees = answer.transaction_fees
    return {
        "payment_id": answer.payment_id,
        "transaction_status": answer.transaction_status[:4],
        "fee_amount": fees.amount if fees is not None else None,
        "fee_currency": fees.currency[:3] if fees is not None else "",
        "fee_indicator": answer.transaction_fee_indicator,
        "psu_message": (answer.psu_message or "")[:512],
        "tpp_messages": [
            {"category": m.category, "code": m.code, "path": m.path, "text": m.text} for m in answer.tpp_messages
        ],
        "links": {name: link.href for name, link in answer.links.items()},
    }


#: Raised by the bank client for a request that may have reached the bank without its answer reaching us.
_ANSWER_LOST = (OutcomeUnknownError, ServerError, ResponseSignatureError, UnexpectedResponseError)
#: Left as they are by a call that got its answer: a lost answer or a crashed caller (the lease ran out).
_CALLING_STATES = (PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN)


def _call_lease(now: datetime) -> datetime:
    """Until when a caller holds a SUBMITTING payment (``reconcile_at``): longer than any one initiation call
    can last. After it, the caller is taken for dead (process killed) and reconciliation takes over."""
    timeout = float(settings.BANK_TIMEOUT)
    lease = getattr(settings, "PAYMENT_CALL_LEASE", None)  # only the fault tests' faster clock sets it
    if lease is None:
        return now + max(RECONCILE_LEASE, timedelta(seconds=2 * timeout + 60))
    return now + max(lease, timedelta(seconds=2 * timeout))  # never shorter than a connect and a read


def _submitted_event(payment: Payment, actor) -> PaymentEvent:
    """ "Sent to the bank", at the time of the claim: written with what the call came to, in one transaction
    (the claim itself is one UPDATE committed before the call)."""
    return PaymentEvent(
        payment=payment, at=payment.submitted_at or timezone.now(), kind=PaymentEventKind.SUBMITTED, actor=actor
    )


def _store_initiated(
    payment: Payment,
    answer: bank_models.PaymentInitiationResponse,
    *,
    kind: str,
    actor,
    flush_audit,
    events: tuple[PaymentEvent, ...] = (),
) -> bool:
    """SUBMITTING/OUTCOME_UNKNOWN -> INITIATED with the bank's answer, the timeline events and the bank call's
    audit row, in one transaction; False when another writer stored the answer first."""
    now = timezone.now()
    fields = _answer_fields(answer)
    rows = [*events]
    if kind != PaymentEventKind.STATUS:
        confirmed = _("The bank confirmed the payment.")
        rows.append(PaymentEvent(payment=payment, at=now, kind=kind, actor=actor, detail=confirmed))
    rows.append(
        PaymentEvent(
            payment=payment,
            at=now,
            kind=PaymentEventKind.STATUS,
            transaction_status=fields["transaction_status"],
            detail=fields["psu_message"],
        )
    )
    # One transaction: the audit rows whatever happens, the answer and its events only if no other writer stored
    # them first (on PostgreSQL one statement, committed in one round trip).
    with flush_audit.taken() as audit:
        updated = rawsql.update_and_insert(
            Payment,
            {
                "state": PaymentState.INITIATED,
                "psu_identity": "",
                "initiation_psu": "",
                "reconcile_at": None,
                "updated_at": now,
                **fields,
            },
            where={"id": payment.pk, "state": _CALLING_STATES},
            always=[audit],
            if_updated=[rawsql.instance_rows(rows)],
        )
    if updated != 1:
        return False
    # What the UPDATE wrote, without reading the row back.
    for name, value in fields.items():
        setattr(payment, name, value)
    payment.state, payment.psu_identity, payment.initiation_psu = PaymentState.INITIATED, "", ""
    payment.reconcile_at, payment.updated_at = None, now
    return True


def _store_refused(
    payment: Payment, error: Xs2aError, *, actor, flush_audit, events: tuple[PaymentEvent, ...] = ()
) -> bool:
    """A 4xx: nothing exists at the bank. The bank's messages are kept (the form shows them by field)."""
    now = timezone.now()
    messages_ = _bank_messages(error)
    text = error.text or error.code or (f"HTTP {error.status}" if error.status else error.message)
    with transaction.atomic():
        flush_audit()
        updated = Payment.objects.filter(pk=payment.pk, state__in=_CALLING_STATES).update(
            state=PaymentState.REFUSED,
            tpp_messages=messages_,
            psu_identity="",
            initiation_psu="",
            reconcile_at=None,
            updated_at=now,
        )
        if updated != 1:
            return False
        PaymentEvent.objects.bulk_create(
            [
                *events,
                PaymentEvent(
                    payment=payment, at=now, kind=PaymentEventKind.BANK_ERROR, actor=actor, detail=text[:512]
                ),
            ]
        )
    payment.state, payment.tpp_messages, payment.psu_identity, payment.initiation_psu = (
        PaymentState.REFUSED,
        messages_,
        "",
        "",
    )
    payment.reconcile_at, payment.updated_at = None, now
    return True


def _store_unknown(
    payment: Payment, *, later: datetime | None, detail: str, actor, flush_audit, events: tuple = ()
) -> bool:
    """SUBMITTING -> OUTCOME_UNKNOWN: the call ended without an answer; the next reconciliation at ``later``
    (None: no more automatic tries)."""
    now = timezone.now()
    with transaction.atomic():
        flush_audit()
        updated = Payment.objects.filter(pk=payment.pk, state=PaymentState.SUBMITTING).update(
            state=PaymentState.OUTCOME_UNKNOWN, reconcile_at=later, updated_at=now
        )
        if updated == 1 and (events or detail):
            rows = [*events]
            if detail:
                rows.append(
                    PaymentEvent(
                        payment=payment, at=now, kind=PaymentEventKind.OUTCOME_UNKNOWN, actor=actor, detail=detail
                    )
                )
            PaymentEvent.objects.bulk_create(rows)
        if updated == 1 and later is not None:
            _enqueue_reconcile(payment.pk, countdown=max(0, int((later - now).total_seconds())))
    payment.refresh_from_db()
    return updated == 1


def _enqueue_reconcile(payment_pk: int, *, countdown: int | None = None) -> None:
    """Enqueue a reconciliation (once the transaction commits); beat's dispatcher catches a lost one."""
    from payments.tasks import reconcile_payment

    delay = int(RECONCILE_DELAYS[0].total_seconds()) if countdown is None else countdown
    transaction.on_commit(lambda: reconcile_payment.apply_async(args=[payment_pk], countdown=delay))


def _send(payment: Payment, psu: PsuContext, *, actor) -> bank_models.PaymentInitiationResponse:
    """The one initiation call (and its replays): the stored bytes, X-Request-ID and TPP-Session-ID."""
    body = json.loads(payment.body_json)
    with bank_audit_context(user=actor, obj=payment):
        return bank_client().payments.initiate(
            body,
            psu=psu,
            product=payment.product,
            tpp_session_id=payment.tpp_session_id,
            allow_logical_duplicate=payment.allow_logical_duplicate,
            request_id=str(payment.request_id),
        )


def payment_submit(
    *,
    payment: Payment,
    user,
    idempotency_key: str,
    presence: PsuContext,
    national_identity_number: str = "",
) -> SubmitOutcome:
    """Send the reviewed payment to the bank, once.

    ``idempotency_key`` is the one the review page was shown with: a second submit of it (double click,
    another tab, the back button) finds the payment no longer a draft and calls nothing. ``presence`` is the
    PSU's live request (initiation needs the PSU present). ``national_identity_number``: for single SCA
    (a payment without a connection), a validated fødselsnummer.

    The claim DRAFT -> SUBMITTING is one conditional UPDATE, committed before the bank is called; it stores
    what a replay needs and a lease (``reconcile_at``): a caller killed during the call leaves a SUBMITTING
    row whose lease runs out, and reconciliation takes it over. What the call came to (the answer, the
    timeline events and the audit row of the call) is stored in one transaction after it.
    """
    try:
        key = uuid.UUID(str(idempotency_key))
    except ValueError:
        raise PaymentNotSubmittable(_("This page is out of date. Please review the payment again.")) from None
    if payment.user_id != user.pk:
        raise PaymentNotSubmittable(_("This payment is not yours."))
    if key != payment.idempotency_key:
        raise PaymentNotSubmittable(_("This page is out of date. Please review the payment again."))
    if payment.state != PaymentState.DRAFT:
        return SubmitOutcome(payment=payment, duplicate_submit=True)
    psu = _initiation_psu(payment, presence)
    if payment.connection is None:
        if not national_identity_number:
            raise PaymentNotSubmittable(
                _("Enter your national identity number (11 digits) to approve the payment at the bank."),
                field="national_identity_number",
            )
        psu = dataclasses.replace(psu, identity=national_identity_number)
    if not psu.present:
        raise ValueError("a payment is submitted with the PSU present")

    now = timezone.now()
    tpp_session_id = str(uuid.uuid4())
    # The claim and the storing of the answer are written out (tpp_portal.rawsql): on the submit path the ORM
    # spent more CPU building these statements than the database takes to run them.
    claimed = rawsql.update(
        Payment,
        {
            "state": PaymentState.SUBMITTING,
            "submitted_at": now,
            "tpp_session_id": tpp_session_id,
            "psu_identity": national_identity_number if payment.connection is None else "",
            "initiation_psu": _replay_psu_json(psu),
            "reconcile_at": _call_lease(now),
            "updated_at": now,
        },
        where={"id": payment.pk, "state": PaymentState.DRAFT, "idempotency_key": key},
    )
    if claimed != 1:  # the other submit won: it calls the bank
        payment.refresh_from_db()
        return SubmitOutcome(payment=payment, duplicate_submit=True)
    payment.state, payment.submitted_at, payment.tpp_session_id = PaymentState.SUBMITTING, now, tpp_session_id
    submitted = (_submitted_event(payment, user),)

    with bank_audit_deferred() as flush_audit:
        try:
            answer = _send(payment, psu, actor=user)
        except _ANSWER_LOST as error:
            logger.warning(
                "payment initiation outcome unknown",
                extra={"payment_id": payment.pk, "error": type(error).__name__, "x_request_id": error.request_id},
            )
            _store_unknown(
                payment,
                later=timezone.now() + RECONCILE_DELAYS[0],
                detail=_("The bank's answer was lost (%(error)s); checking with the bank.")
                % {"error": type(error).__name__},
                actor=user,
                flush_audit=flush_audit,
                events=submitted,
            )
            return SubmitOutcome(
                payment=payment,
                message=_(
                    "The bank did not confirm the payment in time. We are checking with the bank whether it "
                    "arrived; it will never be sent twice."
                ),
            )
        except TransportError:  # not delivered: the bank has nothing; the same page may be sent again
            logger.warning("payment initiation not delivered", extra={"payment_id": payment.pk})
            with transaction.atomic():
                flush_audit()
                if Payment.objects.filter(pk=payment.pk, state=PaymentState.SUBMITTING).update(
                    state=PaymentState.DRAFT,
                    submitted_at=None,
                    psu_identity="",
                    initiation_psu="",
                    reconcile_at=None,
                    updated_at=timezone.now(),
                ):
                    PaymentEvent.objects.create(
                        payment=payment,
                        kind=PaymentEventKind.BANK_ERROR,
                        actor=user,
                        detail=_("The bank could not be reached; nothing was sent."),
                    )
            payment.refresh_from_db()
            return SubmitOutcome(
                payment=payment, message=_("The bank could not be reached; nothing was sent. Please try again.")
            )
        except ClientError as error:
            if not _store_refused(payment, error, actor=user, flush_audit=flush_audit, events=submitted):
                payment.refresh_from_db()
                return SubmitOutcome(payment=payment)
            by_field, general = bank_errors_by_field(payment.tpp_messages)
            if not by_field and not general:
                general = [_("The bank refused the payment (HTTP %(status)s).") % {"status": error.status}]
            return SubmitOutcome(payment=payment, field_errors=by_field, errors=general)
        except BaseException:
            # Whether the request left is not known: reconciliation finds out (it replays the same request).
            _store_unknown(
                payment,
                later=timezone.now() + RECONCILE_DELAYS[0],
                detail=_("The portal failed while sending the payment; checking with the bank."),
                actor=user,
                flush_audit=flush_audit,
                events=submitted,
            )
            raise
        if not _store_initiated(
            payment, answer, kind=PaymentEventKind.STATUS, actor=user, flush_audit=flush_audit, events=submitted
        ):
            payment.refresh_from_db()  # a reconciler that took over stored the same answer first
    return SubmitOutcome(payment=payment)


# --- reconciliation ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReconcileOutcome:
    state: str
    message: str = ""
    attempted: bool = True


def _reconcile_claim(payment_id: int, *, now: datetime, user_asks: bool) -> bool:
    """OUTCOME_UNKNOWN (its time has come, or the user asks now) or SUBMITTING whose caller's lease ran out
    -> SUBMITTING with a fresh lease: one conditional UPDATE, so one caller at a time per payment."""
    claim = {
        "state": PaymentState.SUBMITTING,
        "reconcile_at": _call_lease(now),
        "reconcile_attempts": F("reconcile_attempts") + 1,
        "updated_at": now,
    }
    unknown = Payment.objects.filter(pk=payment_id, state=PaymentState.OUTCOME_UNKNOWN)
    if not user_asks:
        unknown = unknown.filter(models.Q(reconcile_at__isnull=True) | models.Q(reconcile_at__lte=now))
    if unknown.update(**claim) == 1:
        return True
    with transaction.atomic():
        if (
            Payment.objects.filter(pk=payment_id, state=PaymentState.SUBMITTING, reconcile_at__lte=now).update(
                **claim
            )
            != 1
        ):
            return False
        # The caller died during its call (its lease ran out): its answer, if any, was never stored.
        rows = []
        if not PaymentEvent.objects.filter(payment_id=payment_id, kind=PaymentEventKind.SUBMITTED).exists():
            submitted_at = Payment.objects.filter(pk=payment_id).values_list("submitted_at", flat=True).first()
            rows.append(
                PaymentEvent(payment_id=payment_id, at=submitted_at or now, kind=PaymentEventKind.SUBMITTED)
            )
        rows.append(
            PaymentEvent(
                payment_id=payment_id,
                at=now,
                kind=PaymentEventKind.OUTCOME_UNKNOWN,
                detail=_("The portal stopped while waiting for the bank's answer; checking with the bank."),
            )
        )
        PaymentEvent.objects.bulk_create(rows)
    return True


def payment_reconcile(*, payment_id: int, actor=None, presence: PsuContext | None = None) -> ReconcileOutcome:
    """Find out what became of an initiation whose answer was lost, by replaying the very same request.

    One caller at a time per payment: the claim makes the payment SUBMITTING with a lease (a conditional
    UPDATE), as the first submission did. ``presence``: the PSU's live request when the user asked ("check
    now": not held back by the schedule, only by another caller); the stored headers of the initiation
    otherwise.
    """
    now = timezone.now()
    if not _reconcile_claim(payment_id, now=now, user_asks=presence is not None):
        state = Payment.objects.filter(pk=payment_id).values_list("state", flat=True).first() or ""
        return ReconcileOutcome(state=state, attempted=False)
    payment = Payment.objects.select_related("connection").get(pk=payment_id)
    stored = json.loads(payment.initiation_psu) if payment.initiation_psu else {}
    if presence is not None:  # the PSU's live request now, with the identity headers of the initiation
        live = {name: getattr(presence, name) for name in _REPLAY_FIELDS if getattr(presence, name) is not None}
        stored = {
            **{k: v for k, v in stored.items() if k in ("psu_id", "corporate_id", "context")},
            **{k: v for k, v in live.items() if k not in ("psu_id", "corporate_id", "context")},
        }
    if "ip_address" not in stored:  # never happens for a claimed submission (it stores them first)
        Payment.objects.filter(pk=payment.pk, state=PaymentState.SUBMITTING).update(
            state=PaymentState.OUTCOME_UNKNOWN, reconcile_at=None
        )
        logger.error("payment reconciliation impossible: no stored PSU headers", extra={"payment_id": payment.pk})
        return ReconcileOutcome(
            state=PaymentState.OUTCOME_UNKNOWN, message=_("Please contact the bank about this payment.")
        )
    psu = PsuContext(**stored, identity=payment.psu_identity or None)
    attempts = payment.reconcile_attempts
    later = now + RECONCILE_DELAYS[attempts] if attempts < len(RECONCILE_DELAYS) else None
    with bank_audit_deferred() as flush_audit:
        try:
            answer = _send(payment, psu, actor=actor)
        except (*_ANSWER_LOST, TransportError) as e:
            _store_unknown(payment, later=later, detail="", actor=actor, flush_audit=flush_audit)
            logger.warning(
                "payment reconciliation: no answer",
                extra={"payment_id": payment.pk, "error": type(e).__name__, "attempt": attempts},
            )
            if later is None:
                return ReconcileOutcome(
                    state=PaymentState.OUTCOME_UNKNOWN,
                    message=_(
                        "The bank has still not told us whether it received this payment. It will not be sent "
                        "again; please contact the bank about it."
                    ),
                )
            return ReconcileOutcome(
                state=PaymentState.OUTCOME_UNKNOWN, message=_("The bank did not answer yet; we will try again.")
            )
        except ClientError as error:
            _store_refused(payment, error, actor=actor, flush_audit=flush_audit)
            payment.refresh_from_db(fields=["state"])
            return ReconcileOutcome(state=payment.state, message=error.text or error.code or "")
        except BaseException:
            _store_unknown(payment, later=later, detail="", actor=actor, flush_audit=flush_audit)
            raise
        _store_initiated(payment, answer, kind=PaymentEventKind.RECONCILED, actor=actor, flush_audit=flush_audit)
    payment.refresh_from_db(fields=["state"])
    return ReconcileOutcome(state=payment.state)


def reconciliations_due(*, now=None, limit: int = 200) -> list[int]:
    """OUTCOME_UNKNOWN payments whose next try has come, and SUBMITTING ones whose caller's lease ran out."""
    now = now or timezone.now()
    return list(
        Payment.objects.filter(
            state__in=(PaymentState.OUTCOME_UNKNOWN, PaymentState.SUBMITTING), reconcile_at__lte=now
        )
        .order_by("reconcile_at", "id")
        .values_list("id", flat=True)[:limit]
    )


# --- authorisation (SCA) -------------------------------------------------------------------------------------


def _signer_connection(payment: Payment, signer) -> BankConnection | None:
    """The connection whose PSU-ID the signer approves with: the payment's for the initiator; for another
    signer of a corporate payment, their own connection to the same agreement (PSU-Corporate-ID)."""
    if signer.pk == payment.user_id:
        return payment.connection
    if payment.connection is None or not payment.connection.psu_corporate_id_hash:
        return None
    return (
        BankConnection.objects.filter(user=signer, psu_corporate_id_hash=payment.connection.psu_corporate_id_hash)
        .exclude(state=ConnectionState.DISCONNECTED)
        .exclude(psu_id_hash="")
        .order_by("-sca_at", "-pk")
        .first()
    )


def authorisation_start(*, payment: Payment, signer, session_key: str | None, presence: PsuContext) -> str:
    """Store a fresh SCA state (purpose PAYMENT) and the signer's PaymentAuthorisation, then POST the payment's
    startAuthorisation link; returns the scaRedirect address to send the signer's browser to.

    The initiator approves first; for a corporate payment in PATC a further signer (another portal user of the
    same company, with their own connection to the agreement) calls this too. Raises AuthorisationNotStarted
    (with the bank's text when it gave one); the SCA state is then spent and the failure noted.
    """
    if not payment.payment_id or payment.state not in (
        PaymentState.INITIATED,
        PaymentState.AUTHORISING,
        PaymentState.AWAITING_STATUS,
    ):
        raise AuthorisationNotStarted(_("This payment is not waiting for an approval."))
    if payment.transaction_status and payment.transaction_status not in ("RCVD", "PATC"):
        raise AuthorisationNotStarted(_("This payment needs no further approval."))
    connection = _signer_connection(payment, signer)
    if signer.pk != payment.user_id and connection is None:
        raise AuthorisationNotStarted(
            _("Connect your bank for this company first: the bank needs to know who signs.")
        )
    now = timezone.now()
    with transaction.atomic():
        state = ScaState.objects.create(
            token=secrets.token_urlsafe(32),
            user=signer,
            session_key_hash=session_key_hash(session_key),
            purpose=ScaPurpose.PAYMENT,
            context=payment.context,
            connection=connection,
            created_at=now,
        )
        authorisation = (
            PaymentAuthorisation.objects.select_for_update()
            .filter(payment=payment, signer=signer, completed_at__isnull=True)
            .order_by("-started_at", "-id")
            .first()
        )
        if authorisation is None:
            authorisation = PaymentAuthorisation.objects.create(
                payment=payment, signer=signer, sca_state=state, started_at=now
            )
        else:
            authorisation.sca_state = state
            authorisation.started_at = now
            authorisation.failed_at = None
            authorisation.failure = ""
            authorisation.save(update_fields=["sca_state", "started_at", "failed_at", "failure"])
    identity: dict[str, Any] = {"context": payment.context, "tpp_session_id": state.token, "identity": None}
    if connection is not None and connection.psu_id:
        identity.update(psu_id=connection.psu_id, corporate_id=connection.psu_corporate_id or None)
    psu = dataclasses.replace(presence, **identity)
    href = payment.links.get("startAuthorisation") if isinstance(payment.links, dict) else None
    # The call's audit row is committed with what the call came to (one commit after the call, not two).
    with bank_audit_deferred() as flush_audit:
        try:
            with bank_audit_context(user=signer, obj=payment):
                answer = bank_client().payments.start_authorisation(
                    href=href or None,
                    payment_id=payment.payment_id,
                    product=payment.product,
                    psu=psu,
                    tpp_session_id=state.token,
                )
            redirect_to = answer.sca_redirect or ""
            parts = urlsplit(redirect_to)
            if parts.scheme not in {"http", "https"} or not parts.netloc:
                raise AuthorisationNotStarted(_("The bank did not give an address to approve the payment at."))
        except (Xs2aError, AuthorisationNotStarted) as error:
            text = (
                error.message
                if isinstance(error, AuthorisationNotStarted)
                else (error.text or _("The bank could not start the approval. Please try again later."))
            )
            failed = timezone.now()
            with transaction.atomic():
                flush_audit()
                ScaState.objects.filter(pk=state.pk, used_at__isnull=True).update(used_at=failed)
                PaymentAuthorisation.objects.filter(pk=authorisation.pk).update(
                    failed_at=failed, failure=text[:512]
                )
                PaymentEvent.objects.create(
                    payment=payment, kind=PaymentEventKind.SCA_FAILED, actor=signer, detail=text[:512]
                )
            raise AuthorisationNotStarted(text) from error
        started = timezone.now()
        with transaction.atomic():
            flush_audit()
            moved = Payment.objects.filter(pk=payment.pk, state=PaymentState.INITIATED).update(
                state=PaymentState.AUTHORISING, updated_at=started
            )
            PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.SCA_STARTED, actor=signer)
    if moved:  # what the UPDATE wrote, without reading the row back
        payment.state, payment.updated_at = PaymentState.AUTHORISING, started
    else:  # already past INITIATED (a further signer, a second try): the row as it is
        payment.refresh_from_db(fields=["state", "updated_at"])
    return redirect_to


# --- the SCA callback of a payment ---------------------------------------------------------------------------


def is_payment_callback(token: str) -> bool:
    """Whether the callback's tpp-session-id names a payment's SCA state (the callback view dispatches on it)."""
    return ScaState.objects.filter(token=token, purpose=ScaPurpose.PAYMENT).exists()


def _connection_keep(*, user, params: CallbackParams, now) -> BankConnection:
    """Single SCA: keep the PSU-ID the bank made, as a payments connection of the user, for next time."""
    psu_hash = lookup_hash(params.psu_id)
    corporate_hash = lookup_hash(None)
    existing = (
        BankConnection.objects.select_for_update()
        .filter(user=user, psu_id_hash=psu_hash, psu_corporate_id_hash=corporate_hash)
        .exclude(state=ConnectionState.DISCONNECTED)
        .first()
    )
    if existing is not None:
        return existing
    connection = BankConnection.objects.create(
        user=user,
        context=PsuContextChoice.PRIVATE,
        access=ConnectionAccess.PAYMENTS,
        state=ConnectionState.PENDING,
        psu_id=params.psu_id,
        psu_id_hash=psu_hash,
        psu_corporate_id="",
        psu_corporate_id_hash=corporate_hash,
        sca_at=now,
    )
    ConnectionEvent.objects.create(
        connection=connection,
        actor=user,
        at=now,
        from_state="",
        to_state=ConnectionState.PENDING,
        reason="PSU-ID made by the bank in a single SCA payment",
    )
    return connection_transition(
        connection=connection, to=ConnectionState.ACTIVE, actor=user, reason="PSU identified for payments", now=now
    )


def payment_sca_callback_accept(*, user, session_key: str | None, params: CallbackParams) -> Payment:
    """The bank sent the signer back after approving: consume the SCA state (single-use, this user's, this
    session's, not expired), record the signature, keep a single-SCA PSU-ID for next time, and read the status
    soon. Raises ScaStateRejected or IdentityMismatch; nothing is recorded then."""
    from payments.polling import poll_soon

    now = timezone.now()
    state = sca_state_consume(token=params.tpp_session_id, user=user, session_key=session_key, now=now)
    if state.purpose != ScaPurpose.PAYMENT:
        raise ScaStateRejected("purpose")
    authorisation = (
        PaymentAuthorisation.objects.select_related("payment", "payment__connection")
        .filter(sca_state=state)
        .first()
    )
    if authorisation is None:
        raise ScaStateRejected("unknown")
    payment = authorisation.payment
    psu_hash = lookup_hash(params.psu_id)
    corporate_id = params.psu_corporate_id if params.context == PsuContextChoice.CORPORATE else None
    expected = state.connection
    if params.context != payment.context:
        raise IdentityMismatch("the payment was approved in another context")
    if expected is not None and (expected.psu_id_hash, expected.psu_corporate_id_hash) != (
        psu_hash,
        lookup_hash(corporate_id),
    ):
        raise IdentityMismatch("the payment was approved as another bank user or agreement")
    initiator = user.pk == payment.user_id
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        if locked.connection_id is None and initiator:
            connection = _connection_keep(user=user, params=params, now=now)
            Payment.objects.filter(pk=locked.pk).update(connection=connection)
        done = PaymentAuthorisation.objects.filter(pk=authorisation.pk, completed_at__isnull=True).update(
            completed_at=now, failed_at=None, failure=""
        )
        if done == 1:
            PaymentEvent.objects.create(
                payment=locked,
                at=now,
                kind=PaymentEventKind.SCA_DONE if initiator else PaymentEventKind.SIGNATURE,
                actor=user,
            )
        poll_soon(locked)
    payment.refresh_from_db()
    return payment


def payment_sca_failed(*, payment_id: int, user, failure: dict[str, str]) -> Payment | None:
    """The bank sent the signer back without an approval (cancelled, failed): the signer's open authorisation
    of the payment is marked failed with the bank's text and its SCA state spent. The failure redirect carries
    no tpp-session-id (spec 6), so the payment is the one this browser session was sent to approve.
    Returns the payment, or None when the session's payment is not waiting for this user's approval."""
    authorisation = (
        PaymentAuthorisation.objects.select_related("payment")
        .filter(payment_id=payment_id, signer=user, completed_at__isnull=True)
        .order_by("-started_at", "-id")
        .first()
    )
    if authorisation is None:
        return None
    text = (failure.get("message") or failure.get("code") or _("The approval was not completed."))[:512]
    now = timezone.now()
    with transaction.atomic():
        PaymentAuthorisation.objects.filter(pk=authorisation.pk, completed_at__isnull=True).update(
            failed_at=now, failure=text
        )
        if authorisation.sca_state_id:
            ScaState.objects.filter(pk=authorisation.sca_state_id, used_at__isnull=True).update(used_at=now)
        PaymentEvent.objects.create(
            payment=authorisation.payment, at=now, kind=PaymentEventKind.SCA_FAILED, actor=user, detail=text
        )
    return authorisation.payment
