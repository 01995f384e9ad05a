"""Writes of the payment side: initiation, authorisation (SCA, multi-signature), cancellation, status moves.

Every status change goes through ``payment_move``: a conditional update that refuses illegal or concurrent
moves, and a ``PaymentEvent`` row. Fees and conversion use the fixed tables of ``bank_simulator.pis.tables``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from bank_simulator import services as bank_services
from bank_simulator.identifiers import opaque_id
from bank_simulator.models import Account, Agreement, Customer, PsuIdentity, ScaPurpose, ScaSession, ScaStatus
from bank_simulator.pis import selectors, tables
from bank_simulator.pis.models import (
    Payment,
    PaymentAuthorisation,
    PaymentEvent,
    PaymentSignature,
    TransactionStatus,
)
from bank_simulator.pis.schedule import next_slot_after
from bank_simulator.pis.validation import PaymentOrder
from bank_simulator.services import DomainError

S = TransactionStatus
ALLOWED_MOVES: dict[str, frozenset[str]] = {
    S.RCVD: frozenset({S.PATC, S.PDNG, S.CANC}),
    S.PATC: frozenset({S.PATC, S.PDNG, S.CANC}),
    S.PDNG: frozenset({S.ACTC, S.ACSP, S.ACCP, S.CANC}),
    S.ACTC: frozenset({S.ACTC, S.ACSP, S.ACCP, S.CANC}),
    S.ACCP: frozenset({S.ACCP, S.ACSP, S.RJCT, S.CANC}),
    S.ACSP: frozenset({S.ACSC, S.ACCC}),
}
CANCELLABLE = frozenset({S.RCVD, S.PATC, S.PDNG, S.ACTC, S.ACCP})  # not once settlement has begun

# Fees (the simulator's tariff): a cross-border payment costs 50 NOK; where the instructed currency differs
# from the debtor account's, a conversion fee of 0.25 % of the NOK equivalent (at least 25 NOK) is added.
# Charged in the debtor account's currency.
CROSS_BORDER_FEE_NOK = Decimal("50")
CONVERSION_FEE_RATE = Decimal("0.0025")
CONVERSION_FEE_MINIMUM_NOK = Decimal("25")


class PaymentRefused(DomainError):
    """A refused payment operation, with the HTTP status and section-7 code the bank answers."""

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.status = status
        self.code = code


def payment_move(payment: Payment, *, to: str, now: dt.datetime, reason: str, **fields: Any) -> None:
    """The one way a status changes: legal moves only, and only from the status the caller saw."""
    if to not in ALLOWED_MOVES.get(payment.status, frozenset()):
        raise DomainError(f"A payment in status {payment.status} cannot move to {to}.")
    updated = Payment.objects.filter(pk=payment.pk, status=payment.status).update(
        status=to, updated_at=now, **fields
    )
    if updated != 1:
        raise DomainError("The payment was changed concurrently.")
    PaymentEvent.objects.create(payment=payment, at=now, from_status=payment.status, to_status=to, reason=reason)
    payment.status = to
    payment.updated_at = now
    for name, value in fields.items():
        setattr(payment, name, value)


def fees_for(*, product: str, amount: Decimal, currency: str, account_currency: str) -> Decimal:
    """The total fee in the debtor account's currency, rounded to its minor units."""
    fee_nok = CROSS_BORDER_FEE_NOK if product == tables.CROSS_BORDER else Decimal("0")
    if currency != account_currency:
        fee_nok += max(CONVERSION_FEE_MINIMUM_NOK, tables.to_nok(amount, currency) * CONVERSION_FEE_RATE)
    return tables.quantize(tables.convert(fee_nok, source="NOK", target=account_currency), account_currency)


def _fingerprint(*, product: str, psu: PsuIdentity, order: PaymentOrder) -> str:
    canonical = json.dumps(
        {"product": product, "psu": str(psu.psu_id), "body": order.submitted},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _replay(existing: Payment, fingerprint: str) -> Payment:
    if existing.fingerprint != fingerprint:
        raise PaymentRefused(
            409,
            "CONFLICT",
            "X-Request-ID was already used for another payment initiation; use a new X-Request-ID.",
            field="X-Request-ID",
        )
    return existing


def _debtor_account(*, order: PaymentOrder, agreement: Agreement):
    """The debtor account of ``order``: an account of this bank, in the order's currency, in the agreement in
    force, and not the creditor account itself; else the refusal naming the rule."""
    debtor = selectors.bank_account(ref=order.debtor_account, agreement=agreement)
    if debtor is None:
        raise PaymentRefused(
            400, "RESOURCE_UNKNOWN", "debtorAccount is not an account of this bank.", field="debtorAccount"
        )
    if order.debtor_account.currency != debtor.currency:
        raise PaymentRefused(
            400,
            "FORMAT_ERROR",
            f"debtorAccount.currency must be the account's currency ({debtor.currency}).",
            field="debtorAccount.currency",
        )
    if not debtor.in_agreement:  # type: ignore[attr-defined]  # annotated by the selector
        raise PaymentRefused(
            403,
            "FORBIDDEN",
            "The PSU may not make payments from debtorAccount in the agreement in force.",
            field="debtorAccount",
        )
    if (order.creditor_account.iban and order.creditor_account.iban == debtor.iban) or (
        order.creditor_account.bban and order.creditor_account.bban == debtor.bban
    ):
        raise PaymentRefused(
            400, "FORMAT_ERROR", "creditorAccount is the debtor account itself.", field="creditorAccount"
        )
    return debtor


def _lock(debtor) -> None:
    """Lock the debtor account for the rest of the transaction (on SQLite the transaction holds the write lock from
    its start: transaction_mode IMMEDIATE), as a bank's duplicate check must: two initiations that arrive together
    (a replay sent while the first is still being processed) cannot both pass the check and both be stored."""
    list(Account.objects.select_for_update().filter(pk=debtor.pk).values_list("pk", flat=True))


def _refuse_logical_duplicate(
    *,
    debtor,
    order: PaymentOrder,
    execution_date: dt.date,
    now: dt.datetime,
    tpp_org_id: str,
    idempotency_key: str,
) -> None:
    """409 CONFLICT when a payment like this one (same debtor, creditor, amount, currency and execution date) is
    live from the last 24 hours."""
    duplicate = selectors.logical_duplicate(
        debtor_account=debtor,
        creditor=order.creditor_account,
        amount=order.amount,
        currency=order.currency,
        execution_date=execution_date,
        now=now,
        tpp_org_id=tpp_org_id,
        request_id=idempotency_key or None,
    )
    if duplicate is not None:
        raise PaymentRefused(
            409,
            "CONFLICT",
            f"A logical duplicate (same debtor, creditor, amount and execution date) was received at "
            f"{duplicate.created_at:%Y-%m-%d %H:%M} UTC as payment {duplicate.payment_id}; send "
            "allowLogicalDuplicate=true to make this payment as well.",
            field="allowLogicalDuplicate",
        )


def payment_initiate(
    *,
    product: str,
    order: PaymentOrder,
    psu: PsuIdentity,
    agreement: Agreement,
    tpp_org_id: str,
    request_id: str,
    tpp_session_id: str,
    allow_logical_duplicate: bool,
    now: dt.datetime,
    request_id_replay: str = "same",
) -> tuple[Payment, bool]:
    """A new payment in RCVD, or, for an X-Request-ID this TPP used before, what ``request_id_replay`` says
    (BANK_SIM_REQUEST_ID_REPLAY): "same" answers that payment again (409 CONFLICT for another body), "conflict"
    refuses with 409 CONFLICT, "new" makes a new payment (the logical-duplicate rule applies to it as to any).

    Without allowLogicalDuplicate=true (absent is false), a logical duplicate is refused with 409 CONFLICT
    (``_refuse_logical_duplicate``). Returns the payment and whether it was created now."""
    idempotency_key = "" if request_id_replay == "new" else request_id
    fingerprint = _fingerprint(product=product, psu=psu, order=order)
    debtor = _debtor_account(order=order, agreement=agreement)
    execution_date = order.execution_date or now.astimezone(dt.UTC).date()
    debit = tables.quantize(
        tables.convert(order.amount, source=order.currency, target=debtor.currency), debtor.currency
    )
    fee = fees_for(product=product, amount=order.amount, currency=order.currency, account_currency=debtor.currency)
    try:
        with transaction.atomic():
            _lock(debtor)  # the duplicate check and the insert: one transaction, the debtor account locked
            if not allow_logical_duplicate:
                _refuse_logical_duplicate(
                    debtor=debtor,
                    order=order,
                    execution_date=execution_date,
                    now=now,
                    tpp_org_id=tpp_org_id,
                    idempotency_key=idempotency_key,
                )
            payment = Payment.objects.create(
                payment_id=opaque_id("payment", secrets.token_hex(16)),
                product=product,
                tpp_org_id=tpp_org_id,
                request_id=request_id,
                idempotency_key=idempotency_key,
                fingerprint=fingerprint,
                tpp_session_id=tpp_session_id,
                psu=psu,
                agreement=agreement,
                debtor_account=debtor,
                amount=order.amount,
                currency=order.currency,
                debit_amount=debit,
                fee_amount=fee,
                creditor_name=order.creditor_name,
                creditor_iban=order.creditor_account.iban,
                creditor_bban=order.creditor_account.bban,
                execution_date=execution_date,
                submitted=order.submitted,
                signers_required=agreement.signers_required,
                created_at=now,
                updated_at=now,
            )
            PaymentEvent.objects.create(
                payment=payment, at=now, from_status="", to_status=S.RCVD, reason="initiated by the TPP"
            )
    except IntegrityError:  # a repeated X-Request-ID (the unique constraint on the idempotency key)
        existing = Payment.objects.filter(tpp_org_id=tpp_org_id, idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        if request_id_replay == "conflict":
            raise PaymentRefused(
                409,
                "CONFLICT",
                f"X-Request-ID was already used for payment {existing.payment_id}; every initiation needs a new "
                "X-Request-ID.",
                field="X-Request-ID",
            ) from None
        return _replay(existing, fingerprint), False
    return payment, True


def psu_for_identity(*, tpp_org_id: str, customer: Customer, now: dt.datetime) -> PsuIdentity:
    """Single SCA (spec 4.1 rule 3): the PSU-ID of the customer named by X-PSU-IDENTITY, made when new."""
    return bank_services.psu_identity_get_or_create(tpp_org_id=tpp_org_id, customer=customer, now=now)


def payment_authorisation_start(
    *,
    payment: Payment,
    tpp_name: str,
    tpp_session_id: str,
    redirect_uri: str,
    requesting_psu: PsuIdentity | None,
    now: dt.datetime,
    exempt_below_nok: Decimal | None = None,
    decoupled: bool = False,
) -> PaymentAuthorisation:
    """An SCA redirect for the next signer (the same one again while an SCA is still in progress), or, for a
    single-signer payment below ``exempt_below_nok`` (BANK_SIM_SCA_EXEMPT_BELOW), an exemption: no SCA, the
    payment is approved at once (PDNG). ``decoupled``: the SCA happens in the bank's app, no redirect
    (BANK_SIM_SCA_APPROACH; ``payment_authorisation_decide`` is the PSU's answer there)."""
    if payment.status not in (S.RCVD, S.PATC):
        raise PaymentRefused(
            409,
            "CONFLICT",
            f"The payment needs no further authorisation (transactionStatus {payment.status}).",
        )
    current = selectors.authorisation_in_progress(payment=payment, now=now)
    if current is not None:
        return current
    if (
        exempt_below_nok is not None
        and payment.status == S.RCVD
        and payment.signers_required == 1
        and tables.to_nok(payment.amount, payment.currency) < exempt_below_nok
    ):
        return _payment_exempt(payment=payment, limit=exempt_below_nok, now=now)
    signed = set(payment.signatures.values_list("customer_id", flat=True))
    # The first signer is the PSU who initiated; a further signer is any other user of the agreement (the one
    # named by PSU-ID when the TPP sends the PSU-ID of someone who has not signed yet).
    if not signed:
        expected: PsuIdentity | None = payment.psu
    elif requesting_psu is not None and requesting_psu.customer_id not in signed:
        expected = requesting_psu
    else:
        expected = None
    session = bank_services.sca_start(
        purpose=ScaPurpose.PAYMENT,
        tpp_org_id=payment.tpp_org_id,
        tpp_name=tpp_name,
        tpp_session_id=tpp_session_id,
        redirect_uri=redirect_uri,
        now=now,
        psu=expected,
        context=payment.agreement.context,
        agreement=payment.agreement,
    )
    return PaymentAuthorisation.objects.create(
        authorisation_id=opaque_id("authorisation", secrets.token_hex(16)),
        payment=payment,
        sca_session=session,
        decoupled=decoupled,
        created_at=now,
    )


def _payment_exempt(*, payment: Payment, limit: Decimal, now: dt.datetime) -> PaymentAuthorisation:
    """No SCA for this payment: an exempted authorisation, the initiating PSU's signature, and PDNG."""
    with transaction.atomic():
        locked = Payment.objects.select_for_update().get(pk=payment.pk)
        if locked.status != S.RCVD:
            raise PaymentRefused(
                409, "CONFLICT", f"The payment needs no further authorisation (transactionStatus {locked.status})."
            )
        authorisation = PaymentAuthorisation.objects.create(
            authorisation_id=opaque_id("authorisation", secrets.token_hex(16)),
            payment=payment,
            sca_session=None,
            exempted=True,
            created_at=now,
        )
        PaymentSignature.objects.create(
            payment=payment,
            customer_id=payment.psu.customer_id,
            psu=payment.psu,
            authorisation=authorisation,
            signed_at=now,
        )
        payment_move(
            payment,
            to=S.PDNG,
            now=now,
            reason=f"SCA exempted: below {limit} NOK (BANK_SIM_SCA_EXEMPT_BELOW)",
            authorised_at=now,
            next_batch_at=next_slot_after(now),
        )
    return authorisation


def payment_sign(*, session: ScaSession, now: dt.datetime) -> PsuIdentity:
    """The PSU approved the payment on the SCA screen: one more signature; PATC or PDNG when complete."""
    assert session.customer is not None and session.agreement is not None
    authorisation = PaymentAuthorisation.objects.get(sca_session=session)
    payment = Payment.objects.select_for_update().select_related("agreement").get(pk=authorisation.payment_id)
    if payment.status not in (S.RCVD, S.PATC):  # the messages are shown on the SCA screen: translated
        raise DomainError(
            _("The payment is no longer waiting for approval (status %(status)s).") % {"status": payment.status}
        )
    if session.agreement_id != payment.agreement_id:
        raise DomainError(
            _("This payment was made in the context %(context)s (%(agreement)s); cancel and choose that context.")
            % {"context": payment.agreement.context, "agreement": payment.agreement.name}
        )
    psu = bank_services.psu_identity_get_or_create(
        tpp_org_id=session.tpp_org_id, customer=session.customer, now=now
    )
    try:
        with transaction.atomic():
            PaymentSignature.objects.create(
                payment=payment, customer=session.customer, psu=psu, authorisation=authorisation, signed_at=now
            )
    except IntegrityError:
        raise DomainError(
            _("You have already approved this payment; another person authorised for the agreement must sign.")
        ) from None
    signed = payment.signatures.count()
    if signed >= payment.signers_required:
        payment_move(
            payment,
            to=S.PDNG,
            now=now,
            reason=f"approved in SCA by signer {signed} of {payment.signers_required}",
            authorised_at=now,
            next_batch_at=next_slot_after(now),
        )
    else:
        payment_move(
            payment,
            to=S.PATC,
            now=now,
            reason=f"approved in SCA by signer {signed} of {payment.signers_required}; more signatures needed",
        )
    return psu


def payment_authorisation_decide(
    *, authorisation: PaymentAuthorisation, approve: bool, customer: Customer | None, now: dt.datetime
) -> None:
    """The PSU's answer in the bank's app to a decoupled SCA (the sandbox plays it): approval signs the payment as
    the SCA screens do (``customer``: who approves; default the PSU the SCA was started for), refusal fails the
    SCA and leaves the payment waiting, as a cancel on the screens does."""
    session = authorisation.sca_session
    if not authorisation.decoupled or session is None:
        raise PaymentRefused(409, "CONFLICT", "This authorisation is not decoupled: the PSU uses scaRedirect.")
    with transaction.atomic():
        session = ScaSession.objects.select_for_update().get(pk=session.pk)
        expired = session.status == ScaStatus.STARTED and session.expires_at <= now
        if expired:  # as the screens fail an expired SCA when it is opened (BANK_SIM_SCA_TTL)
            bank_services.sca_fail(session=session, code="SCA_EXPIRED", now=now)
    with transaction.atomic():
        session = ScaSession.objects.select_for_update().get(pk=session.pk)
        if session.status != ScaStatus.STARTED:
            raise PaymentRefused(
                409,
                "CONFLICT",
                f"This authorisation is no longer waiting for the PSU (scaStatus {session.status}"
                f"{', expired' if expired else ''}).",
            )
        if not approve:
            bank_services.sca_fail(session=session, code="SCA_INVALID", now=now)
            return
        payment = authorisation.payment
        customer = customer or (session.requested_psu.customer if session.requested_psu else None)
        if customer is None:
            raise PaymentRefused(
                400, "FORMAT_ERROR", "Say who approves (identity): the SCA names no PSU.", field="identity"
            )
        if not payment.agreement.users.filter(pk=customer.pk).exists():
            raise PaymentRefused(
                403, "FORBIDDEN", "This customer may not sign for the payment's agreement.", field="identity"
            )
        bank_services.sca_identify(session=session, customer=customer)
        bank_services.sca_choose_context(session=session, agreement=payment.agreement)
        try:
            psu = payment_sign(session=session, now=now)
        except DomainError as error:
            raise PaymentRefused(409, "CONFLICT", str(error)) from None
        bank_services.sca_finalise(session=session, psu=psu, now=now)


def payment_cancel(*, payment: Payment, now: dt.datetime) -> None:
    if payment.status not in CANCELLABLE:
        raise PaymentRefused(
            409,
            "CONFLICT",
            f"The payment can no longer be cancelled (transactionStatus {payment.status}).",
        )
    payment_move(payment, to=S.CANC, now=now, reason="cancelled by the TPP (DELETE)", next_batch_at=None)
