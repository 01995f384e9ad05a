"""The sandbox bank's data: customers, agreements, accounts, transactions, PSU identities, consents, SCA.

Payments (issue "bank_simulator, part 2") add their own models next to these; they reuse ``ScaSession`` with a
new ``ScaPurpose`` and the same ``PsuIdentity`` and ``Agreement`` rows.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class SimulatorClock(models.Model):
    """One row: how far the bank's business clock runs ahead of real time (sandbox "advance the clock").

    Business time (consent expiry, unattended-access windows, transaction history, batches) follows this clock.
    Transport checks (the Date header, certificate validity) follow real time, because the TPP signs with it.
    """

    offset_seconds = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"clock offset {self.offset_seconds}s"


class SeenSignature(models.Model):
    """A verified request signature, kept while a replay of it could still pass the Date check.

    The bank refuses a Signature value it has seen before (``security.replay``); the rows of every gunicorn
    process are in this one table, and rows whose Date window has passed are deleted.
    """

    # SHA-256 (hex) of the signature bytes: RSA PKCS#1 v1.5 is deterministic, so a replay has the same bytes.
    digest = models.CharField(max_length=64, primary_key=True)
    # The request's Date plus the allowed deviation: after this a replay fails the Date check anyway.
    expires_at = models.DateTimeField(db_index=True)  # security.replay prunes by it

    def __str__(self) -> str:
        return f"signature {self.digest[:12]}... until {self.expires_at:%H:%M:%S}"


class CustomerType(models.TextChoices):
    PRIVATE = "PRIVATE"  # a person; gets a private agreement over its own accounts automatically
    CORPORATE = "CORPORATE"  # a company; its accounts are reached through corporate agreements only


class Customer(models.Model):
    customer_id = models.CharField(max_length=64, unique=True)
    # The mocked national identity number the sandbox SCA screen asks for.
    customer_number = models.CharField(max_length=20, unique=True)
    customer_type = models.CharField(max_length=10, choices=CustomerType.choices)
    name = models.CharField(max_length=140)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.customer_number})"


class AgreementContext(models.TextChoices):
    PRIVATE = "PRIVATE"  # the customer's own accounts
    CORPORATE = "CORPORATE"  # accounts a company granted to the agreement's users


class Agreement(models.Model):
    """What a PSU may act on: a private customer's own accounts, or a company's agreement (PSU-Corporate-ID)."""

    agreement_id = models.UUIDField(unique=True, default=uuid.uuid4)
    owner = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="owned_agreements")
    context = models.CharField(max_length=10, choices=AgreementContext.choices)
    name = models.CharField(max_length=140)
    # Persons who may authenticate for this agreement (for a private agreement: the owner only).
    users = models.ManyToManyField(Customer, related_name="agreements", blank=True)
    # Accounts reachable through the agreement ("engagements").
    accounts = models.ManyToManyField("Account", related_name="agreements", blank=True)
    # Signatures a payment from this agreement needs (part 2, multi-signature).
    signers_required = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.context})"


class AccountKind(models.TextChoices):
    ACCOUNT = "ACCOUNT"  # a payment or savings account under /v1/accounts
    CARD = "CARD"  # a card account under /v1/card-accounts


class Account(models.Model):
    resource_id = models.CharField(max_length=64, unique=True)
    owner = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="accounts")
    kind = models.CharField(max_length=10, choices=AccountKind.choices)
    iban = models.CharField(max_length=34, blank=True)
    bban = models.CharField(max_length=30, blank=True)
    bic = models.CharField(max_length=11, blank=True)
    masked_pan = models.CharField(max_length=19, blank=True)
    currency = models.CharField(max_length=3)
    name = models.CharField(max_length=70)
    product = models.CharField(max_length=70)
    # ISO 20022 cash account type (sent as is with x-accept-fix cash-account-type-iso, else the bank's label).
    cash_account_type = models.CharField(max_length=4, default="CACC")
    credit_limit = models.DecimalField(max_digits=23, decimal_places=5, default=0)
    # Booked balance including every booked transaction; pending ones are added for the expected balance.
    booked_balance = models.DecimalField(max_digits=23, decimal_places=5, default=0)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["iban"], name="account_iban_idx")]  # mock transactions look up debtors

    def __str__(self) -> str:
        return f"{self.name} {self.iban or self.masked_pan}"


class BookingStatus(models.TextChoices):
    BOOKED = "booked"  # posted; its transactionId never changes
    PENDING = "pending"  # reserved; books later under a different transactionId


class Transaction(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="transactions")
    transaction_id = models.CharField(max_length=64, unique=True)
    booking_status = models.CharField(max_length=7, choices=BookingStatus.choices)
    # Booked: the booking day. Pending: the day the reservation was made (listings filter on it).
    booking_date = models.DateField()
    value_date = models.DateField(null=True, blank=True)
    # Pending only: the business day on which it books.
    books_on = models.DateField(null=True, blank=True)
    amount = models.DecimalField(max_digits=23, decimal_places=5)  # signed, account currency
    currency = models.CharField(max_length=3)
    original_amount = models.DecimalField(max_digits=23, decimal_places=5, null=True, blank=True)  # cards
    original_currency = models.CharField(max_length=3, blank=True)
    counterparty_name = models.CharField(max_length=70, blank=True)
    counterparty_iban = models.CharField(max_length=34, blank=True)
    counterparty_bban = models.CharField(max_length=30, blank=True)
    remittance_lines = models.JSONField(default=list)
    kid = models.CharField(max_length=25, blank=True)
    end_to_end_id = models.CharField(max_length=35, blank=True)
    bank_transaction_code = models.CharField(max_length=35, blank=True)
    additional_information = models.JSONField(default=dict)  # additionalInformationProprietaryN
    # Ordering within a day, newest first in listings.
    sequence = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            # selectors.transaction_page (one account's items, pending before booked, each newest first: the
            # index's order, no sort) and selectors.account_balances (the pending items and those booked from
            # today).
            models.Index(
                fields=["account", "-booking_status", "-booking_date", "-sequence", "-id"], name="tx_listing_idx"
            ),
            # transactions_settle_due: pending items whose booking day has come.
            models.Index(fields=["booking_status", "books_on"], name="tx_settle_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.transaction_id} {self.amount} {self.currency}"


class PsuIdentity(models.Model):
    """The persistent PSU-ID of one customer as seen by one TPP (spec 5.6: unique per TPP and bank)."""

    psu_id = models.UUIDField(unique=True, default=uuid.uuid4)
    tpp_org_id = models.CharField(max_length=100)  # organizationIdentifier of the TPP's certificate
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="psu_identities")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tpp_org_id", "customer"], name="psu_unique_per_tpp")]

    def __str__(self) -> str:
        return str(self.psu_id)


class ConsentStatus(models.TextChoices):
    VALID = "valid"  # SCA done, within 180 days
    EXPIRED = "expired"  # 180 days after its SCA
    REVOKED_BY_PSU = "revokedByPsu"  # the PSU withdrew it directly with the bank
    TERMINATED_BY_TPP = "terminatedByTpp"  # the TPP ended it (DELETE /v1/bank-offered-consents)
    REPLACED = "replaced"  # a newer consent for the same PSU, TPP and agreement took its place


class Consent(models.Model):
    """A bank-offered consent: details, balances and transactions of the accounts the PSU ticked."""

    consent_id = models.UUIDField(unique=True, default=uuid.uuid4)
    psu = models.ForeignKey(PsuIdentity, on_delete=models.CASCADE, related_name="consents")
    agreement = models.ForeignKey(Agreement, on_delete=models.CASCADE, related_name="consents")
    status = models.CharField(max_length=20, choices=ConsentStatus.choices)
    accounts = models.ManyToManyField(Account, related_name="consents", blank=True)
    sca_completed_at = models.DateTimeField()
    valid_until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["psu", "agreement"], condition=Q(status="valid"), name="one_valid_consent_per_agreement"
            )
        ]
        indexes = [
            # selectors.latest_consent (the consent screen) and psu_context (every account-information request):
            # a PSU's consents for one agreement, newest first.
            models.Index(fields=["psu", "agreement", "-id"], name="consent_latest_idx"),
        ]

    def __str__(self) -> str:
        return f"consent {self.consent_id} ({self.status})"


class ConsentEvent(models.Model):
    consent = models.ForeignKey(Consent, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField()
    from_status = models.CharField(max_length=20, blank=True)
    to_status = models.CharField(max_length=20)
    reason = models.CharField(max_length=200)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.from_status or '-'} -> {self.to_status}: {self.reason}"


class ScaPurpose(models.TextChoices):
    CONSENT = "CONSENT"  # bank-offered consent: the PSU ticks accounts
    USERS = "USERS"  # /v1/users: a PISP learns the PSU-ID
    PAYMENT = "PAYMENT"  # a payment (dynamic linking: amount, currency, creditor shown; bank_simulator.pis)


class ScaStatus(models.TextChoices):
    STARTED = "started"  # redirect issued, identity number not yet given
    IDENTIFIED = "psuIdentified"  # the PSU is known, choosing the context
    CONTEXT_CHOSEN = "contextChosen"  # PRIVATE or an agreement chosen, reviewing what to approve
    FINALISED = "finalised"  # approved; the PSU was redirected back with psu-id
    FAILED = "failed"  # cancelled, expired or refused; redirected back with the error


class ScaSession(models.Model):
    token = models.CharField(max_length=64, unique=True)  # the secret in the scaRedirect address
    purpose = models.CharField(max_length=20, choices=ScaPurpose.choices)
    status = models.CharField(max_length=20, choices=ScaStatus.choices, default=ScaStatus.STARTED)
    tpp_org_id = models.CharField(max_length=100)
    tpp_name = models.CharField(max_length=140, blank=True)
    tpp_session_id = models.CharField(max_length=200, blank=True)
    redirect_uri = models.CharField(max_length=2000)
    # What the starting request said (PSU-ID, PSU-Context, PSU-Corporate-ID), used to pre-fill the screens.
    requested_psu = models.ForeignKey(
        PsuIdentity, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_context = models.CharField(max_length=10, blank=True)
    requested_agreement = models.ForeignKey(
        Agreement, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    agreement = models.ForeignKey(Agreement, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # True when the identity step was skipped because this TPP session already had a valid SCA.
    reused_session_sca = models.BooleanField(default=False)
    failed_attempts = models.PositiveSmallIntegerField(default=0)
    failure_code = models.CharField(max_length=40, blank=True)
    psu = models.ForeignKey(PsuIdentity, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    consent = models.ForeignKey(Consent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"SCA {self.purpose} {self.status}"


class TppSession(models.Model):
    """A completed SCA within one TPP-Session-ID; valid one hour, ended early by a newer session's SCA."""

    tpp_org_id = models.CharField(max_length=100)
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="+")
    tpp_session_id = models.CharField(max_length=200)
    sca_at = models.DateTimeField()
    invalidated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tpp_org_id", "customer", "tpp_session_id"], name="tpp_session_unique")
        ]

    def __str__(self) -> str:
        return f"TPP session {self.tpp_session_id}"


class AccessKind(models.TextChoices):
    BALANCES = "balances"
    TRANSACTIONS = "transactions"


class UnattendedAccess(models.Model):
    """One successful request made without the PSU present (no PSU-IP-Address)."""

    tpp_org_id = models.CharField(max_length=100)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=AccessKind.choices)
    at = models.DateTimeField()

    class Meta:
        # selectors.unattended_count: requests of one TPP on one account in the last 24 hours.
        indexes = [models.Index(fields=["tpp_org_id", "account", "kind", "at"], name="unattended_window_idx")]

    def __str__(self) -> str:
        return f"{self.kind} at {self.at:%Y-%m-%d %H:%M}"
