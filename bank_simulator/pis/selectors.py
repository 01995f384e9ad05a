"""Reads of the payment side of the sandbox bank."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db.models import Exists, OuterRef, Q

from bank_simulator.models import Account, AccountKind, Agreement, ScaStatus
from bank_simulator.pis.models import Payment, PaymentAuthorisation, TransactionStatus
from bank_simulator.pis.validation import AccountRef

# Two payments with the same debtor account, creditor, amount and execution date received within this window
# are logical duplicates (refused unless allowLogicalDuplicate=true).
DUPLICATE_WINDOW = dt.timedelta(hours=24)


def bank_account(*, ref: AccountRef, agreement: Agreement | None = None) -> Account | None:
    """The bank's (non-card) account an account reference names, by iban or bban.

    With ``agreement``, the account carries ``in_agreement``: whether the agreement reaches it (one query).
    """
    query = Q()
    if ref.iban:
        query |= Q(iban=ref.iban)
    if ref.bban:
        query |= Q(bban=ref.bban)
    accounts = Account.objects.filter(query, kind=AccountKind.ACCOUNT)
    if agreement is not None:
        links = Agreement.accounts.through.objects.filter(agreement_id=agreement.pk, account_id=OuterRef("pk"))
        accounts = accounts.annotate(in_agreement=Exists(links))
    matches = list(accounts[:2])
    return matches[0] if len(matches) == 1 else None


def logical_duplicate(
    *,
    debtor_account: Account,
    creditor: AccountRef,
    amount: Decimal,
    currency: str,
    execution_date: dt.date,
    now: dt.datetime,
    tpp_org_id: str,
    request_id: str | None,
) -> Payment | None:
    """An earlier live payment like this one. A replay of the same request (``request_id``) is not a duplicate
    of itself; with ``request_id`` None (a repeated X-Request-ID is a new request) every earlier one counts."""
    found = (
        Payment.objects.filter(
            debtor_account=debtor_account,
            execution_date=execution_date,
            amount=amount,
            currency=currency,
            creditor_iban=creditor.iban,
            creditor_bban=creditor.bban,
            created_at__gt=now - DUPLICATE_WINDOW,
        )
        .exclude(status__in=[TransactionStatus.RJCT, TransactionStatus.CANC])
        .order_by("id")
    )
    if request_id is not None:
        found = found.exclude(tpp_org_id=tpp_org_id, idempotency_key=request_id)
    return found.first()


def payment_for_tpp(*, payment_id: str, product: str, tpp_org_id: str) -> Payment | None:
    """The payment, only for the TPP that initiated it and under its own product (else None: 404)."""
    return (
        Payment.objects.select_related("agreement", "debtor_account")
        .filter(payment_id=payment_id, product=product, tpp_org_id=tpp_org_id)
        .first()
    )


def authorisation_in_progress(*, payment: Payment, now: dt.datetime) -> PaymentAuthorisation | None:
    return (
        PaymentAuthorisation.objects.select_related("sca_session")
        .filter(
            payment=payment,
            sca_session__status__in=[ScaStatus.STARTED, ScaStatus.IDENTIFIED, ScaStatus.CONTEXT_CHOSEN],
            sca_session__expires_at__gt=now,
        )
        .order_by("-id")
        .first()
    )


def authorisation_of(*, payment: Payment, authorisation_id: str) -> PaymentAuthorisation | None:
    return (
        PaymentAuthorisation.objects.select_related("sca_session")
        .filter(payment=payment, authorisation_id=authorisation_id)
        .first()
    )
