"""Payments of the sandbox bank: the payment, its authorisations (SCA), its signatures and its timeline.

They reuse part 1's rows: ``PsuIdentity`` (who initiated and who signed), ``Agreement`` (private or corporate,
with ``signers_required``), ``Account`` (the debtor) and ``ScaSession`` (purpose PAYMENT).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from bank_simulator.models import Account, Agreement, Customer, PsuIdentity, ScaSession
from bank_simulator.pis import tables


class PaymentProduct(models.TextChoices):
    CROSS_BORDER = tables.CROSS_BORDER, "Cross-border credit transfer"
    DOMESTIC = tables.DOMESTIC, "Domestic credit transfer"


class TransactionStatus(models.TextChoices):
    """The statuses of spec section 3 this bank moves a payment through (ISO 20022 names)."""

    RCVD = "RCVD"  # received and valid; no SCA completed yet
    PATC = "PATC"  # partially authorised: the agreement needs more signers (same startAuthorisation link)
    PDNG = "PDNG"  # authorised by every signer; waiting for the next batch
    ACTC = "ACTC"  # technically validated in a batch; waits for its requested execution date
    ACCP = "ACCP"  # customer profile checked, funds missing (fundsAvailable false); checked again each batch
    ACSP = "ACSP"  # funds reserved, settlement in process; settles in the next batch
    ACSC = "ACSC"  # settled: debited and booked on the debtor account (final)
    ACCC = "ACCC"  # settled and the creditor's account credited (final; instead of ACSC, BANK_SIM_CREDIT_FINAL)
    RJCT = "RJCT"  # rejected, e.g. funds still missing on the day after the first check (final)
    CANC = "CANC"  # cancelled by DELETE before settlement began (final)


SETTLED_STATUSES = frozenset({TransactionStatus.ACSC, TransactionStatus.ACCC})
FINAL_STATUSES = SETTLED_STATUSES | {TransactionStatus.RJCT, TransactionStatus.CANC}
# Statuses the batches look at (``Payment.next_batch_at`` is set exactly for these).
BATCH_STATUSES = frozenset(
    {TransactionStatus.PDNG, TransactionStatus.ACTC, TransactionStatus.ACCP, TransactionStatus.ACSP}
)
AUTHORISED_STATUSES = BATCH_STATUSES | SETTLED_STATUSES  # approved by every signer (RJCT may or may not)


class Payment(models.Model):
    payment_id = models.CharField(max_length=64, unique=True)  # opaque, may hold '!' and '='
    product = models.CharField(max_length=60, choices=PaymentProduct.choices)
    status = models.CharField(max_length=4, choices=TransactionStatus.choices, default=TransactionStatus.RCVD)
    tpp_org_id = models.CharField(max_length=100)
    request_id = models.CharField(max_length=200)  # X-Request-ID of the initiation
    # X-Request-ID again when a repeated one is answered from this payment or refused (BANK_SIM_REQUEST_ID_REPLAY
    # same or conflict); empty when a repeated X-Request-ID is a new request (new).
    idempotency_key = models.CharField(max_length=200, blank=True)
    fingerprint = models.CharField(max_length=64)  # sha256 of product, PSU and body: a replay must match it
    tpp_session_id = models.CharField(max_length=200, blank=True)
    psu = models.ForeignKey(PsuIdentity, on_delete=models.CASCADE, related_name="payments")
    agreement = models.ForeignKey(Agreement, on_delete=models.CASCADE, related_name="payments")
    debtor_account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="payments")
    amount = models.DecimalField(max_digits=tables.PRECISION, decimal_places=tables.SCALE)
    currency = models.CharField(max_length=3)
    # What settlement takes from the debtor account, in its currency (amount converted at the fixed rates).
    debit_amount = models.DecimalField(max_digits=23, decimal_places=5)
    fee_amount = models.DecimalField(max_digits=23, decimal_places=5)  # debtor account currency
    creditor_name = models.CharField(max_length=70)
    creditor_iban = models.CharField(max_length=34, blank=True)
    creditor_bban = models.CharField(max_length=30, blank=True)
    execution_date = models.DateField()  # requestedExecutionDate, or the day of initiation
    submitted = models.JSONField()  # the known fields as sent; GET on the payment returns them
    signers_required = models.PositiveSmallIntegerField(default=1)
    authorised_at = models.DateTimeField(null=True, blank=True)  # when the last required signer approved
    funds_available = models.BooleanField(null=True, blank=True)  # set by the first funds check
    funds_missing_since = models.DateField(null=True, blank=True)
    # The scheduled batch that next looks at this payment; null outside BATCH_STATUSES.
    next_batch_at = models.DateTimeField(null=True, blank=True)
    # transactionId of the pending item on the debtor account while ACSP (no foreign key: part 1 deletes
    # transactions in bulk, and a reverse relation would make those deletes row by row).
    reservation_transaction_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tpp_org_id", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="pis_payment_request_unique",
            ),
        ]
        indexes = [
            # engine.run_due: payments whose scheduled batch has come.
            models.Index(fields=["next_batch_at"], name="pis_payment_due_idx"),
            # services.payment_initiate: logical duplicates on one debtor account and execution date.
            models.Index(fields=["debtor_account", "execution_date"], name="pis_payment_duplicate_idx"),
        ]

    def __str__(self) -> str:
        return f"payment {self.payment_id} {self.amount} {self.currency} {self.status}"


class PaymentEvent(models.Model):
    """One row per status change: when (business time), from, to and why."""

    payment = models.ForeignKey(Payment, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField()
    from_status = models.CharField(max_length=4, blank=True)
    to_status = models.CharField(max_length=4)
    reason = models.CharField(max_length=200)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.from_status or '-'} -> {self.to_status}: {self.reason}"


class PaymentAuthorisation(models.Model):
    """One POST on startAuthorisation (or the initiation, BANK_SIM_SCA_AT_INITIATION): the SCA redirect it
    issued, or none when the payment was exempted from SCA (BANK_SIM_SCA_EXEMPT_BELOW)."""

    authorisation_id = models.CharField(max_length=64, unique=True)
    payment = models.ForeignKey(Payment, on_delete=models.CASCADE, related_name="authorisations")
    sca_session = models.OneToOneField(
        ScaSession, null=True, blank=True, on_delete=models.CASCADE, related_name="payment_authorisation"
    )
    exempted = models.BooleanField(default=False)  # no SCA: scaStatus "exempted", no scaRedirect
    # SCA in the bank's app (BANK_SIM_SCA_APPROACH): no scaRedirect; the sandbox approves or refuses for the PSU.
    decoupled = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"authorisation {self.authorisation_id}"


class PaymentSignature(models.Model):
    """A completed SCA approving the payment; an agreement may need several, by different persons."""

    payment = models.ForeignKey(Payment, on_delete=models.CASCADE, related_name="signatures")
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="+")
    psu = models.ForeignKey(PsuIdentity, on_delete=models.CASCADE, related_name="+")
    authorisation = models.ForeignKey(PaymentAuthorisation, on_delete=models.CASCADE, related_name="+")
    signed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["payment", "customer"], name="pis_one_signature_per_person")
        ]

    def __str__(self) -> str:
        return f"signature of {self.customer_id} on {self.payment_id}"


class SimulatorBehaviour(models.Model):
    """One row (pk 1), shared by every process: the lost payment answers (BANK_SIM_DROP_PAYMENT_ANSWER)."""

    payment_answers = models.PositiveIntegerField(default=0)  # 201 initiation answers counted while dropping
    drop_next = models.CharField(max_length=10, blank=True)  # armed by the sandbox for the next answer only
    drop_next_delay = models.PositiveIntegerField(null=True, blank=True)  # seconds, for timeout

    def __str__(self) -> str:
        return f"behaviour {self.drop_next or '-'}"
