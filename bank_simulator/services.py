"""Writes of the sandbox bank. Keyword-only functions named ``<entity>_<action>``; views stay thin."""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from bank_simulator import history
from bank_simulator.identifiers import BIC, norwegian_bban, norwegian_iban, opaque_id
from bank_simulator.models import (
    AccessKind,
    Account,
    AccountKind,
    Agreement,
    AgreementContext,
    BookingStatus,
    Consent,
    ConsentEvent,
    ConsentStatus,
    Customer,
    CustomerType,
    PsuIdentity,
    ScaPurpose,
    ScaSession,
    ScaStatus,
    SimulatorClock,
    TppSession,
    Transaction,
    UnattendedAccess,
)
from bank_simulator.sca_purposes import PURPOSES
from bank_simulator.selectors import tpp_session_sca_valid

# What apps above this one reset with the sandbox (filled in their ready(): the payments' lost answers).
SANDBOX_RESETS: list[Callable[[], None]] = []
CONSENT_VALIDITY = dt.timedelta(days=180)
TPP_SESSION_VALIDITY = dt.timedelta(hours=1)


class DomainError(Exception):
    """A refused write; ``field`` names the offending input when there is one."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# --- clock ----------------------------------------------------------------------------------------------


def clock_set_offset(*, seconds: int) -> None:
    SimulatorClock.objects.update_or_create(pk=1, defaults={"offset_seconds": seconds})


def clock_advance(*, seconds: int, now: dt.datetime) -> dt.datetime:
    """Move the business clock forward (never back); pending items that are due book. Returns the new time."""
    if seconds < 0:
        raise DomainError("The clock only moves forward.", field="seconds")
    with transaction.atomic():
        SimulatorClock.objects.get_or_create(pk=1)
        SimulatorClock.objects.filter(pk=1).update(offset_seconds=F("offset_seconds") + seconds)
        new_now = now + dt.timedelta(seconds=seconds)
        transactions_settle_due(today=new_now.date())
    return new_now


# --- customers, agreements, accounts --------------------------------------------------------------------


@dataclass(frozen=True)
class _KnownAccount:
    key: str
    kind: str
    name: str
    product: str
    currency: str
    profile: str
    opening: Decimal
    credit_limit: Decimal = Decimal("0")


@dataclass(frozen=True)
class _KnownCustomer:
    number: str
    customer_type: str
    name: str
    accounts: tuple[_KnownAccount, ...]
    employer: str = ""
    salary: Decimal = Decimal("0")
    landlord: str = ""
    employees: int = 0


# docs/bank-interface.md, reference 1: two private customers (2 accounts + 1 card account each), two
# corporate (2 accounts each).
KNOWN_CUSTOMERS = (
    _KnownCustomer(
        "13039319955",
        CustomerType.PRIVATE,
        "Kari Nordmann",
        (
            _KnownAccount(
                "main", AccountKind.ACCOUNT, "Brukskonto", "Brukskonto", "NOK", "private_main", Decimal("18250.00")
            ),
            _KnownAccount(
                "savings",
                AccountKind.ACCOUNT,
                "Høyrentekonto",
                "Sparekonto",
                "NOK",
                "private_savings",
                Decimal("84000.00"),
            ),
            _KnownAccount(
                "card",
                AccountKind.CARD,
                "Mastercard Gull",
                "Kredittkort",
                "NOK",
                "private_card",
                Decimal("-3200.00"),
                Decimal("50000.00"),
            ),
        ),
        employer="Helse Bergen HF",
        salary=Decimal("48300.00"),
        landlord="Bergen Utleie AS",
    ),
    _KnownCustomer(
        "12085592767",
        CustomerType.PRIVATE,
        "Ola Kristian Ødegård",
        (
            _KnownAccount(
                "main",
                AccountKind.ACCOUNT,
                "Felles brukskonto for husholdning, ferie og faste utgifter i Tromsø",  # 67 characters
                "Brukskonto",
                "NOK",
                "private_main",
                Decimal("9120.50"),
            ),
            _KnownAccount(
                "savings",
                AccountKind.ACCOUNT,
                "BSU",
                "Boligsparing for ungdom",
                "NOK",
                "private_savings",
                Decimal("212000.00"),
            ),
            _KnownAccount(
                "card",
                AccountKind.CARD,
                "Visa Classic",
                "Kredittkort",
                "NOK",
                "private_card",
                Decimal("-850.00"),
                Decimal("25000.00"),
            ),
        ),
        employer="Tromsø kommune",
        salary=Decimal("52800.00"),
        landlord="Ishavsbyen Boligbyggelag",
    ),
    _KnownCustomer(
        "18129215603",
        CustomerType.CORPORATE,
        "Fjellbygg Entreprenør AS",
        (
            _KnownAccount(
                "operating",
                AccountKind.ACCOUNT,
                "Driftskonto",
                "Bedriftskonto",
                "NOK",
                "corporate_operating",
                Decimal("640000.00"),
            ),
            _KnownAccount(
                "tax",
                AccountKind.ACCOUNT,
                "Skattetrekkskonto",
                "Skattetrekkskonto",
                "NOK",
                "corporate_tax",
                Decimal("96000.00"),
            ),
        ),
        employees=8,
    ),
    _KnownCustomer(
        "20079518612",
        CustomerType.CORPORATE,
        "Havbruk Nord AS",
        (
            _KnownAccount(
                "operating",
                AccountKind.ACCOUNT,
                "Driftskonto",
                "Bedriftskonto",
                "NOK",
                "corporate_operating",
                Decimal("1250000.00"),
            ),
            _KnownAccount(
                "eur",
                AccountKind.ACCOUNT,
                "Valutakonto EUR",
                "Valutakonto",
                "EUR",
                "corporate_currency",
                Decimal("85000.00"),
            ),
        ),
        employees=3,
    ),
)


def _masked_pan(seed: str) -> str:
    digits = norwegian_bban("pan", seed)[-4:]
    return f"5168 98** **** {digits}"


# Whole on purpose: the sandbox's known state (docs/bank-interface.md, reference 1) written out as data, customer
# by customer, in one transaction.
def sandbox_initialize(*, now: dt.datetime, seed: str | None = None) -> list[Customer]:
    """Reset to the known state (docs/bank-interface.md, reference 1): four customers, accounts, a year of history.

    Manually created customers and accounts go, and every consent, SCA and payment with them. The identifiers a
    TPP holds for the known customers stay: their PSU-IDs at each TPP (spec 5.6: the PSU-ID persists) and their
    agreement ids (PSU-Corporate-ID) are random and kept across resets, so a second reset changes nothing.
    """
    seed = seed or settings.BANK_SIM_SEED
    known_numbers = [spec.number for spec in KNOWN_CUSTOMERS]
    with transaction.atomic():
        kept_psus = list(
            PsuIdentity.objects.filter(customer__customer_number__in=known_numbers).values_list(
                "tpp_org_id", "customer__customer_number", "psu_id", "created_at"
            )
        )
        kept_agreements: dict[tuple[str, str], uuid.UUID] = {}
        for number, context, agreement_id in (
            Agreement.objects.filter(owner__customer_number__in=known_numbers)
            .order_by("id")  # the known agreement is its owner's first one of its context
            .values_list("owner__customer_number", "context", "agreement_id")
        ):
            kept_agreements.setdefault((number, context), agreement_id)
        for model in (
            UnattendedAccess,
            ConsentEvent,
            ScaSession,
            TppSession,
            Consent,
            PsuIdentity,
            Transaction,
            Agreement,
            Account,
            Customer,
        ):
            model.objects.all().delete()
        SimulatorClock.objects.update_or_create(pk=1, defaults={"offset_seconds": 0})
        today = now.date()
        customers = []
        for spec in KNOWN_CUSTOMERS:
            customer = customer_create(
                customer_number=spec.number,
                customer_type=spec.customer_type,
                name=spec.name,
                now=now,
                customer_id=opaque_id(seed, "customer", spec.number),
                private_agreement_id=kept_agreements.get((spec.number, AgreementContext.PRIVATE)),
            )
            customers.append(customer)
            created: dict[str, Account] = {}
            for known in spec.accounts:
                created[known.key] = account_create(
                    customer=customer,
                    kind=known.kind,
                    currency=known.currency,
                    name=known.name,
                    product=known.product,
                    credit_limit=known.credit_limit,
                    now=now,
                    resource_id=opaque_id(seed, "account", spec.number, known.key),
                    bban=norwegian_bban(seed, spec.number, known.key) if known.kind == AccountKind.ACCOUNT else "",
                    masked_pan=_masked_pan(f"{seed}{spec.number}") if known.kind == AccountKind.CARD else "",
                )
            if spec.customer_type == CustomerType.CORPORATE:
                agreement = agreement_create(
                    customer=customer,
                    name=f"{spec.name} - nettbank bedrift",
                    now=now,
                    agreement_id=kept_agreements.get((spec.number, AgreementContext.CORPORATE)),
                    signers_required=2 if spec.employees < 5 else 1,
                )
                agreement.accounts.add(*created.values())
            for known in spec.accounts:
                account = created[known.key]
                options: dict[str, object] = {}
                if known.profile == "private_main":
                    options = {
                        "employer": spec.employer,
                        "salary": spec.salary,
                        "landlord": spec.landlord,
                        "savings_iban": created["savings"].iban,
                    }
                elif known.profile == "private_savings":
                    options = {"main_iban": created["main"].iban}
                elif known.profile == "private_card":
                    options = {"payer_iban": created["main"].iban}
                elif known.profile == "corporate_operating":
                    tax = created.get("tax")
                    options = {
                        "employees": spec.employees,
                        "tax_iban": tax.iban if tax else "NO9386011117947",
                    }  # an external tax account
                elif known.profile == "corporate_currency":
                    options = {"operating_iban": created["operating"].iban}
                elif known.profile == "corporate_tax":
                    options = {"employees": spec.employees, "operating_iban": created["operating"].iban}
                items = history.generate(
                    seed=seed,
                    resource_id=account.resource_id,
                    currency=account.currency,
                    profile=known.profile,
                    today=today,
                    opening=known.opening,
                    **options,
                )
                _store_history(account, items, opening=known.opening)
        # Each private customer may also act for one company (corporate context in SCA screens): the first for the
        # first company, the second for the second (whose payments need two signatures).
        first_company = Agreement.objects.get(owner=customers[2], context=AgreementContext.CORPORATE)
        first_company.users.add(customers[0])
        second_company = Agreement.objects.get(owner=customers[3], context=AgreementContext.CORPORATE)
        second_company.users.add(customers[1])
        by_number = {c.customer_number: c for c in customers}
        PsuIdentity.objects.bulk_create(
            PsuIdentity(tpp_org_id=tpp, customer=by_number[number], psu_id=psu_id, created_at=created_at)
            for tpp, number, psu_id, created_at in kept_psus
        )
        for reset in SANDBOX_RESETS:
            reset()
    return customers


def _store_history(account: Account, items: list[history.GeneratedTransaction], *, opening: Decimal) -> None:
    Transaction.objects.bulk_create(
        [
            Transaction(
                account=account,
                transaction_id=item.transaction_id,
                booking_status=item.booking_status,
                booking_date=item.booking_date,
                value_date=item.value_date,
                books_on=item.books_on,
                amount=item.amount,
                currency=item.currency,
                original_amount=item.original_amount,
                original_currency=item.original_currency,
                counterparty_name=item.counterparty_name,
                counterparty_iban=item.counterparty_iban,
                counterparty_bban=item.counterparty_bban,
                remittance_lines=item.remittance_lines,
                kid=item.kid,
                end_to_end_id=item.end_to_end_id,
                bank_transaction_code=item.bank_transaction_code,
                additional_information=item.additional_information,
                sequence=item.sequence,
            )
            for item in items
        ],
        batch_size=500,
    )
    booked = sum((i.amount for i in items if i.booking_status == BookingStatus.BOOKED), Decimal("0"))
    Account.objects.filter(pk=account.pk).update(booked_balance=opening + booked)


def customer_create(
    *,
    customer_number: str,
    customer_type: str,
    name: str,
    now: dt.datetime,
    customer_id: str | None = None,
    private_agreement_id: uuid.UUID | None = None,
) -> Customer:
    """A sandbox customer; a private one gets its agreement at once (docs/bank-interface.md, reference 1), with a
    random id unless ``private_agreement_id`` is given (a reset keeps the known customers' ids)."""
    if customer_type not in CustomerType.values:
        raise DomainError("customerType must be PRIVATE or CORPORATE.", field="customerType")
    try:
        with transaction.atomic():
            customer = Customer.objects.create(
                customer_id=customer_id or opaque_id("customer", secrets.token_hex(16)),
                customer_number=customer_number,
                customer_type=customer_type,
                name=name,
                created_at=now,
            )
            if customer_type == CustomerType.PRIVATE:
                agreement = Agreement.objects.create(
                    owner=customer,
                    context=AgreementContext.PRIVATE,
                    name=f"{name} - privat",
                    agreement_id=private_agreement_id or uuid.uuid4(),
                    created_at=now,
                )
                agreement.users.add(customer)
    except IntegrityError:
        raise DomainError(
            f"A customer with customerNumber {customer_number} exists already.", field="customerNumber"
        ) from None
    return customer


def agreement_create(
    *,
    customer: Customer,
    name: str,
    now: dt.datetime,
    agreement_id: object | None = None,
    signers_required: int = 1,
    users: Iterable[Customer] = (),
) -> Agreement:
    """A corporate agreement of ``customer`` (a company); the company itself and ``users`` may act for it."""
    if customer.customer_type != CustomerType.CORPORATE:
        raise DomainError("Agreements are created for corporate customers only.", field="customerId")
    if not 1 <= signers_required <= 5:
        raise DomainError("signersRequired must be between 1 and 5.", field="signersRequired")
    fields: dict[str, object] = {}
    if agreement_id is not None:
        fields["agreement_id"] = agreement_id
    agreement = Agreement.objects.create(
        owner=customer,
        context=AgreementContext.CORPORATE,
        name=name,
        signers_required=signers_required,
        created_at=now,
        **fields,
    )
    agreement.users.add(customer, *users)
    return agreement


def agreement_add_account(*, agreement: Agreement, account: Account) -> None:
    if account.owner_id != agreement.owner_id:
        raise DomainError("Only accounts of the agreement's company can be added.", field="accountId")
    agreement.accounts.add(account)


def account_create(
    *,
    customer: Customer,
    kind: str,
    currency: str,
    name: str,
    product: str,
    now: dt.datetime,
    credit_limit: Decimal = Decimal("0"),
    balance: Decimal = Decimal("0"),
    resource_id: str | None = None,
    bban: str = "",
    masked_pan: str = "",
) -> Account:
    """A mock account; a private customer's account joins its private agreement, a company's does not."""
    if kind not in AccountKind.values:
        raise DomainError("accountType must be ACCOUNT or CARD.", field="accountType")
    if len(name) > 70:
        raise DomainError("name is at most 70 characters.", field="name")
    token = secrets.token_hex(8)
    if kind == AccountKind.ACCOUNT:
        bban = bban or norwegian_bban("account", token)
        iban = norwegian_iban(bban)
    else:
        iban, bban = "", ""
        masked_pan = masked_pan or _masked_pan(token)
    account = Account.objects.create(
        resource_id=resource_id or opaque_id("account", token),
        owner=customer,
        kind=kind,
        iban=iban,
        bban=bban,
        bic=BIC,
        masked_pan=masked_pan,
        currency=currency,
        name=name,
        product=product,
        credit_limit=credit_limit,
        booked_balance=balance,
        created_at=now,
    )
    if customer.customer_type == CustomerType.PRIVATE:
        for agreement in Agreement.objects.filter(owner=customer, context=AgreementContext.PRIVATE):
            agreement.accounts.add(account)
    return account


def account_set_balance(*, account: Account, amount: Decimal) -> Account:
    """Sandbox balance update: sets the booked balance (pending items still add to the expected balance)."""
    Account.objects.filter(pk=account.pk).update(booked_balance=amount)
    account.booked_balance = amount
    return account


@dataclass(frozen=True)
class MockTransaction:
    amount: Decimal  # positive; the direction follows from who the debtor is
    currency: str
    debtor_iban: str
    creditor_iban: str
    counterparty_name: str
    remittance: str
    kid: str
    end_to_end_id: str
    booking_status: str
    booking_date: dt.date


def transaction_create_mock(*, account: Account, data: MockTransaction, now: dt.datetime) -> Transaction:
    """Add a transaction to a mock account: a debit when the account is the debtor, else a credit.

    Refused when another account of this bank is the debtor: its owner has to create it on that account.
    """
    if data.currency != account.currency:
        raise DomainError(
            f"The transaction currency must be the account currency {account.currency}.",
            field="transactionAmount.currency",
        )
    own_ibans = {account.iban} if account.iban else set()
    if data.debtor_iban and data.debtor_iban not in own_ibans:
        if Account.objects.filter(iban=data.debtor_iban).exclude(pk=account.pk).exists():
            raise DomainError(
                "Another account of the bank is the debtor; create the transaction on that account.",
                field="debtorAccount",
            )
    outgoing = bool(data.debtor_iban) and data.debtor_iban in own_ibans
    if outgoing and data.creditor_iban in own_ibans:
        raise DomainError("Debtor and creditor are the same account.", field="creditorAccount")
    if not outgoing and data.creditor_iban and data.creditor_iban not in own_ibans:
        raise DomainError(
            "The mock account must be the debtor or the creditor of the transaction.", field="creditorAccount"
        )
    if account.kind == AccountKind.CARD and not outgoing and not data.debtor_iban:
        outgoing = True  # a card transaction without a debtor is a purchase
    amount = -data.amount if outgoing else data.amount
    counterparty_iban = data.creditor_iban if outgoing else data.debtor_iban
    pending = data.booking_status == BookingStatus.PENDING
    token = secrets.token_hex(8)
    with transaction.atomic():
        created = Transaction.objects.create(
            account=account,
            transaction_id=opaque_id("mock", account.resource_id, token),
            booking_status=data.booking_status,
            booking_date=data.booking_date,
            value_date=None if pending else data.booking_date,
            books_on=data.booking_date + dt.timedelta(days=1) if pending else None,
            amount=amount,
            currency=data.currency,
            counterparty_name=data.counterparty_name,
            counterparty_iban=counterparty_iban,
            remittance_lines=[data.remittance] if data.remittance else [],
            kid=data.kid,
            end_to_end_id=data.end_to_end_id,
            bank_transaction_code="R_741" if account.kind == AccountKind.CARD else "R_710",
            sequence=1000 + Transaction.objects.filter(account=account, booking_date=data.booking_date).count(),
        )
        if not pending:
            Account.objects.filter(pk=account.pk).update(booked_balance=F("booked_balance") + amount)
    return created


def transactions_settle_due(*, today: dt.date, account: Account | None = None) -> int:
    """Book pending items whose day has come, each under a new transactionId (as the bank does)."""
    due = Transaction.objects.filter(booking_status=BookingStatus.PENDING, books_on__lte=today)
    if account is not None:
        due = due.filter(account=account)
    if not due.exists():
        return 0
    settled = 0
    with transaction.atomic():
        for item in due.select_for_update().order_by("id"):
            booked_on = item.books_on or today
            Transaction.objects.create(
                account_id=item.account_id,
                transaction_id=opaque_id(item.transaction_id, "booked"),
                booking_status=BookingStatus.BOOKED,
                booking_date=booked_on,
                value_date=item.booking_date,
                amount=item.amount,
                currency=item.currency,
                original_amount=item.original_amount,
                original_currency=item.original_currency,
                counterparty_name=item.counterparty_name,
                counterparty_iban=item.counterparty_iban,
                counterparty_bban=item.counterparty_bban,
                remittance_lines=[line.replace("Reservasjon ", "") for line in item.remittance_lines],
                kid=item.kid,
                end_to_end_id=item.end_to_end_id,
                bank_transaction_code=item.bank_transaction_code,
                additional_information=item.additional_information,
                sequence=item.sequence,
            )
            Account.objects.filter(pk=item.account_id).update(booked_balance=F("booked_balance") + item.amount)
            item.delete()
            settled += 1
    return settled


# --- PSU identities, consents, TPP sessions --------------------------------------------------------------


def psu_identity_get_or_create(*, tpp_org_id: str, customer: Customer, now: dt.datetime) -> PsuIdentity:
    """The persistent PSU-ID of ``customer`` for this TPP: random (uuid4) when first made, then kept (also
    across sandbox resets, ``sandbox_initialize``)."""
    psu, _ = PsuIdentity.objects.get_or_create(
        tpp_org_id=tpp_org_id, customer=customer, defaults={"psu_id": uuid.uuid4(), "created_at": now}
    )
    return psu


def _consent_move(consent: Consent, *, to: str, now: dt.datetime, reason: str) -> None:
    ConsentEvent.objects.create(consent=consent, at=now, from_status=consent.status, to_status=to, reason=reason)
    consent.status = to
    consent.save(update_fields=["status"])


def consent_grant(
    *, psu: PsuIdentity, agreement: Agreement, accounts: Iterable[Account], now: dt.datetime
) -> Consent:
    """A new valid consent for 180 days; the PSU's earlier consent for the same agreement is replaced."""
    with transaction.atomic():
        for old in Consent.objects.select_for_update().filter(
            psu=psu, agreement=agreement, status=ConsentStatus.VALID
        ):
            _consent_move(old, to=ConsentStatus.REPLACED, now=now, reason="a new consent was given through SCA")
        consent = Consent.objects.create(
            psu=psu,
            agreement=agreement,
            status=ConsentStatus.VALID,
            sca_completed_at=now,
            valid_until=now + CONSENT_VALIDITY,
        )
        consent.accounts.set(list(accounts))
        ConsentEvent.objects.create(
            consent=consent, at=now, from_status="", to_status=ConsentStatus.VALID, reason="PSU approved in SCA"
        )
    return consent


def consent_expire(*, consent: Consent, now: dt.datetime) -> None:
    if consent.status == ConsentStatus.VALID and consent.valid_until <= now:
        _consent_move(consent, to=ConsentStatus.EXPIRED, now=now, reason="180 days after its SCA")


def consent_terminate_by_tpp(*, psu: PsuIdentity, agreement: Agreement, now: dt.datetime) -> Consent | None:
    """The TPP ends its valid consent for ``psu`` and ``agreement`` (DELETE /v1/bank-offered-consents); None
    when there is none to end."""
    with transaction.atomic():
        consent = (
            Consent.objects.select_for_update()
            .filter(psu=psu, agreement=agreement, status=ConsentStatus.VALID)
            .first()
        )
        if consent is None:
            return None
        _consent_move(
            consent, to=ConsentStatus.TERMINATED_BY_TPP, now=now, reason="ended by the TPP (DELETE consent)"
        )
    return consent


def consents_revoke(*, customer: Customer, now: dt.datetime) -> int:
    """The PSU withdraws every consent it gave, directly with the bank (sandbox control)."""
    revoked = 0
    with transaction.atomic():
        for consent in Consent.objects.select_for_update().filter(
            psu__customer=customer, status=ConsentStatus.VALID
        ):
            _consent_move(consent, to=ConsentStatus.REVOKED_BY_PSU, now=now, reason="revoked by the PSU")
            revoked += 1
    return revoked


def tpp_session_record_sca(*, tpp_org_id: str, customer: Customer, tpp_session_id: str, now: dt.datetime) -> None:
    """A completed SCA in ``tpp_session_id``: valid one hour, and it ends the PSU's other sessions at this TPP."""
    if not tpp_session_id:
        return
    with transaction.atomic():
        TppSession.objects.filter(tpp_org_id=tpp_org_id, customer=customer, invalidated_at__isnull=True).exclude(
            tpp_session_id=tpp_session_id
        ).update(invalidated_at=now)
        TppSession.objects.update_or_create(
            tpp_org_id=tpp_org_id,
            customer=customer,
            tpp_session_id=tpp_session_id,
            defaults={"sca_at": now, "invalidated_at": None},
        )


def unattended_access_record(*, tpp_org_id: str, account: Account, kind: str, now: dt.datetime) -> None:
    if kind not in AccessKind.values:
        raise DomainError(f"unknown access kind {kind!r}")
    UnattendedAccess.objects.create(tpp_org_id=tpp_org_id, account=account, kind=kind, at=now)


# --- SCA --------------------------------------------------------------------------------------------------


def sca_start(
    *,
    purpose: str,
    tpp_org_id: str,
    tpp_name: str,
    tpp_session_id: str,
    redirect_uri: str,
    now: dt.datetime,
    psu: PsuIdentity | None = None,
    context: str = "",
    agreement: Agreement | None = None,
) -> ScaSession:
    """A new SCA redirect. With a PSU-ID whose TPP session had an SCA within the hour, identification is skipped
    (spec section 3) except for purposes that need dynamic linking."""
    if purpose not in ScaPurpose.values:
        raise DomainError(f"unknown SCA purpose {purpose!r}")
    session = ScaSession(
        token=secrets.token_urlsafe(32),
        purpose=purpose,
        tpp_org_id=tpp_org_id,
        tpp_name=tpp_name,
        tpp_session_id=tpp_session_id,
        redirect_uri=redirect_uri,
        requested_psu=psu,
        requested_context=context,
        requested_agreement=agreement,
        created_at=now,
        expires_at=now + dt.timedelta(seconds=settings.BANK_SIM_SCA_TTL),
    )
    handler = PURPOSES.get(purpose)
    if handler is None:
        raise DomainError(f"no SCA screens for purpose {purpose!r}")
    if (
        psu is not None
        and not handler.dynamic_linking
        and tpp_session_sca_valid(
            tpp_org_id=tpp_org_id, customer=psu.customer, tpp_session_id=tpp_session_id, now=now
        )
    ):
        session.customer = psu.customer
        session.status = ScaStatus.IDENTIFIED
        session.reused_session_sca = True
    session.save()
    return session


def _sca_move(session: ScaSession, *, expected: tuple[str, ...], to: str, **fields: object) -> None:
    """Conditional update: a finished or concurrently advanced SCA cannot move again."""
    updated = ScaSession.objects.filter(pk=session.pk, status__in=expected).update(status=to, **fields)
    if updated != 1:
        raise DomainError("This authentication is no longer in progress.")
    session.status = to
    for name, value in fields.items():
        setattr(session, name, value)


def sca_identify(*, session: ScaSession, customer: Customer) -> None:
    _sca_move(session, expected=(ScaStatus.STARTED,), to=ScaStatus.IDENTIFIED, customer=customer)


def sca_record_failed_attempt(*, session: ScaSession) -> int:
    ScaSession.objects.filter(pk=session.pk).update(failed_attempts=F("failed_attempts") + 1)
    session.failed_attempts += 1
    return session.failed_attempts


def sca_choose_context(*, session: ScaSession, agreement: Agreement) -> None:
    _sca_move(session, expected=(ScaStatus.IDENTIFIED,), to=ScaStatus.CONTEXT_CHOSEN, agreement=agreement)


def sca_finalise(
    *, session: ScaSession, psu: PsuIdentity, now: dt.datetime, consent: Consent | None = None
) -> None:
    _sca_move(
        session,
        expected=(ScaStatus.CONTEXT_CHOSEN,),
        to=ScaStatus.FINALISED,
        psu=psu,
        consent=consent,
        finished_at=now,
    )
    if not session.reused_session_sca:  # a skipped identification does not extend the session's hour
        tpp_session_record_sca(
            tpp_org_id=session.tpp_org_id, customer=psu.customer, tpp_session_id=session.tpp_session_id, now=now
        )


def sca_fail(*, session: ScaSession, code: str, now: dt.datetime) -> None:
    _sca_move(
        session,
        expected=(ScaStatus.STARTED, ScaStatus.IDENTIFIED, ScaStatus.CONTEXT_CHOSEN),
        to=ScaStatus.FAILED,
        failure_code=code,
        finished_at=now,
    )
