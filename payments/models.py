"""Payments' tables. Exchange rates give the NOK equivalent of a foreign-currency amount (regulatory threshold)."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from connections.crypto import EncryptedTextField
from connections.models import PsuContextChoice
from core.money import amount_plain
from payments.validators import validate_currency


class ExchangeRateSource(models.TextChoices):
    """Where a rate came from. For one currency and date, the first in this order wins (see selectors)."""

    # Entered by staff in the admin (a correction, or a currency Norges Bank does not quote).
    MANUAL = "manual", _("Entered by staff")
    # Fetched from Norges Bank's open data API by payments.tasks.refresh_exchange_rates.
    NORGES_BANK = "norges-bank", _("Norges Bank")
    # Shipped with the portal (migration 0002) so it works offline before the first fetch.
    SEED = "seed", _("Seed (shipped with the portal)")


class ExchangeRate(models.Model):
    """``rate`` Norwegian kroner buy ``unit`` units of ``currency`` on ``rate_date`` (a middle rate).

    Norges Bank quotes some currencies per 100 units (JPY, SEK, DKK ...): the quoted figure is stored as is
    with ``unit=100``, so a stored rate can be compared with the published table. NOK per one unit is
    ``rate / unit``.
    """

    currency = models.CharField(_("currency"), max_length=3, validators=[validate_currency])
    rate = models.DecimalField(
        _("rate (NOK)"),
        max_digits=18,
        decimal_places=6,
        help_text=_("Norwegian kroner for the number of units below."),
    )
    unit = models.PositiveIntegerField(
        _("units"), default=1, help_text=_("How many units of the currency the rate is for (for example 100).")
    )
    rate_date = models.DateField(_("rate date"))
    source = models.CharField(_("source"), max_length=16, choices=ExchangeRateSource.choices)
    fetched_at = models.DateTimeField(_("fetched at"), default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("edited by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The staff member who last edited this rate; the fetcher never overwrites an edited rate."),
    )
    updated_at = models.DateTimeField(_("edited at"), null=True, blank=True)

    class Meta:
        verbose_name = _("exchange rate")
        verbose_name_plural = _("exchange rates")
        ordering = ["-rate_date", "currency", "source"]
        constraints = [
            # One rate per currency, day and source: the fetcher upserts on this key (fetching twice is harmless).
            models.UniqueConstraint(
                fields=["currency", "rate_date", "source"], name="exchangerate_unique_day_source"
            ),
            models.CheckConstraint(condition=models.Q(rate__gt=0), name="exchangerate_rate_positive"),
            models.CheckConstraint(condition=models.Q(unit__gt=0), name="exchangerate_unit_positive"),
        ]
        indexes = [
            # payments.selectors.exchange_rate_latest: the latest rate of a currency on or before a date.
            models.Index(fields=["currency", "-rate_date"], name="exchangerate_latest_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.unit} {self.currency} = {self.rate} NOK ({self.rate_date}, {self.get_source_display()})"

    @property
    def nok_per_unit(self):
        return self.rate / self.unit


# --- payments ------------------------------------------------------------------------------------------------


class PaymentProduct(models.TextChoices):
    """Payment products of the bank (spec 4.3); the value is the path segment of POST /v1/payments/{product}."""

    CROSS_BORDER = "norwegian-cross-border-credit-transfers", _("Cross-border credit transfer")
    DOMESTIC = "norwegian-domestic-credit-transfers", _("Domestic credit transfer")


class PaymentState(models.TextChoices):
    """The portal's own life of a payment, beside the bank's ``transaction_status``.

    DRAFT (reviewed, not sent) -> SUBMITTING (claimed for the one initiation call; the row is committed before
    the bank is called) -> one of: INITIATED (the bank answered with a paymentId), REFUSED (the bank answered
    4xx: nothing exists at the bank), OUTCOME_UNKNOWN (timeout or 5xx: reconciliation finds out). INITIATED ->
    AUTHORISING (the PSU was sent to SCA) -> AWAITING_STATUS (polling until a final bank status) -> FINAL.
    OUTCOME_UNKNOWN -> UNCONFIRMED (the bank refused the replay: it may or may not hold the payment) -> FOUND
    (the portal's reference was seen in a debit of the debtor account: the bank has it).
    """

    DRAFT = "draft", _("Not sent")
    SUBMITTING = "submitting", _("Sending to the bank")
    OUTCOME_UNKNOWN = "outcome_unknown", _("Checking with the bank")
    REFUSED = "refused", _("Refused by the bank")
    UNCONFIRMED = "unconfirmed", _("Sent; check with your bank")
    FOUND = "found", _("Found in your account")
    NOT_AT_BANK = "not_at_bank", _("Not at the bank (checked by our staff)")
    INITIATED = "initiated", _("Waiting for your approval")
    AUTHORISING = "authorising", _("Being approved at the bank")
    AWAITING_STATUS = "awaiting_status", _("Processing at the bank")
    FINAL = "final", _("Completed")


#: Bank statuses after which nothing changes any more: polling stops. ACCC (credited to the creditor) is past
#: ACSC; a bank may end a payment there instead (Berlin Group: "settlement on the creditor's account completed").
FINAL_TRANSACTION_STATUSES = frozenset({"ACSC", "ACCC", "RJCT", "CANC"})


#: The portal's states in which whether the bank holds the payment is not known: never editable, never sent
#: anew, and a payment alike (same debtor, creditor, amount, currency) is not sent while one of them is.
UNKNOWN_OUTCOME_STATES = frozenset(
    {PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN, PaymentState.UNCONFIRMED}
)


class Payment(models.Model):
    """One payment the user asked for: saved (with its idempotency key and X-Request-ID) before the bank is
    called, so that a double submit is one payment and a lost answer can be reconciled.

    The instruction is stored as the exact JSON bytes that are signed and sent (``body_json``); the columns
    beside it (amount, currency, creditor ...) are copies for lists, filters and the review page.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("initiated by"), on_delete=models.PROTECT, related_name="payments"
    )
    # The connection whose PSU-ID (and PSU-Corporate-ID) the payment is made with; empty for a single-SCA
    # payment (X-PSU-IDENTITY) until the bank gives a PSU-ID.
    connection = models.ForeignKey(
        "connections.BankConnection",
        verbose_name=_("connection"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="payments",
    )
    product = models.CharField(_("product"), max_length=50, choices=PaymentProduct.choices)
    context = models.CharField(_("context"), max_length=10, choices=PsuContextChoice.choices)
    state = models.CharField(_("state"), max_length=20, choices=PaymentState.choices, default=PaymentState.DRAFT)
    # Made when the review page is shown and posted back with it: the unique constraint turns a double submit
    # into one row.
    idempotency_key = models.UUIDField(_("idempotency key"), unique=True, editable=False)
    # Made when the payment form is first shown and carried by every post of it (Back, reload, a second tab): a
    # form already sent shows its payment instead of making another
    # (payments.services.drafts.payment_draft_create).
    intent_key = models.UUIDField(_("intent key"), null=True, blank=True, editable=False)
    request_id = models.UUIDField(_("X-Request-ID of the initiation"), unique=True, editable=False)
    tpp_session_id = models.CharField(_("TPP-Session-ID of the initiation"), max_length=64, blank=True)
    # The SCA state whose TPP-Redirect-URI the initiation carried (the PSU's browser session was known): an
    # approval the bank starts with the initiation itself comes back to the callback with it.
    initiation_sca_state = models.ForeignKey(
        "connections.ScaState",
        verbose_name=_("SCA state of the initiation"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The portal's reference, first in the message to the recipient (remittanceInformationUnstructured), so that
    # a payment the bank did not confirm (UNCONFIRMED) can be found in the debtor account's transactions.
    reference = models.CharField(_("portal reference"), max_length=10, blank=True, db_index=True, editable=False)
    body_json = models.TextField(_("instruction as sent"), help_text=_("The exact JSON bytes signed and sent."))
    # What the user typed (the form's data), to fill the form again for "Edit" (which makes a new payment).
    form_data = models.JSONField(_("form as typed"), default=dict, blank=True)
    # allowLogicalDuplicate=true: the user confirmed paying again what the bank saw as a logical duplicate.
    allow_logical_duplicate = models.BooleanField(_("logical duplicate allowed"), default=False)
    # The payer chose to approve in the bank's app: the initiation (and its replays) carry
    # TPP-Redirect-Preferred: false.
    approve_in_app = models.BooleanField(_("approve in the bank's app"), default=False)
    # Single SCA (X-PSU-IDENTITY) and the PSU headers of the initiation, encrypted, kept only while the bank's
    # answer is unknown: a reconciliation replays the same request (same X-Request-ID, body and headers).
    psu_identity = EncryptedTextField(_("X-PSU-IDENTITY"), blank=True)
    initiation_psu = EncryptedTextField(_("PSU headers of the initiation"), blank=True)

    amount = models.DecimalField(_("amount"), max_digits=23, decimal_places=5)
    currency = models.CharField(_("currency"), max_length=3)
    debtor_account = models.CharField(_("debtor account"), max_length=34)
    creditor_name = models.CharField(_("creditor"), max_length=70)
    creditor_account = models.CharField(_("creditor account"), max_length=34)
    requested_execution_date = models.DateField(_("requested execution date"), null=True, blank=True)
    nok_equivalent = models.DecimalField(
        _("NOK equivalent"), max_digits=23, decimal_places=5, null=True, blank=True, help_text=_("At review time.")
    )
    # The exchange rate the NOK equivalent was reckoned at (payments.selectors.nok_equivalent), shown with it.
    nok_rate = models.DecimalField(
        _("exchange rate (NOK)"), max_digits=18, decimal_places=6, null=True, blank=True
    )
    nok_rate_unit = models.PositiveIntegerField(_("exchange rate per units"), null=True, blank=True)
    nok_rate_date = models.DateField(_("exchange rate date"), null=True, blank=True)
    nok_rate_source = models.CharField(
        _("exchange rate source"), max_length=16, blank=True, choices=ExchangeRateSource.choices
    )

    # The bank's answers.
    payment_id = models.CharField(_("paymentId"), max_length=200, blank=True, db_index=True)
    transaction_status = models.CharField(_("bank status"), max_length=4, blank=True)
    funds_available = models.BooleanField(_("funds available"), null=True, blank=True)
    fee_amount = models.DecimalField(_("fee"), max_digits=23, decimal_places=5, null=True, blank=True)
    fee_currency = models.CharField(_("fee currency"), max_length=3, blank=True)
    fee_indicator = models.BooleanField(_("fee charged"), null=True, blank=True)
    psu_message = models.CharField(_("bank's message to the payer"), max_length=512, blank=True)
    tpp_messages = models.JSONField(_("bank's tppMessages"), default=list, blank=True)
    links = models.JSONField(_("bank's links"), default=dict, blank=True, help_text=_("name -> href"))

    # Status polling (payments.services.polling): the next poll is stored here, not as a long countdown in the
    # broker; ``poll_lease_until`` is the single-poller lease (a conditional UPDATE takes it).
    next_poll_at = models.DateTimeField(_("next status poll"), null=True, blank=True)
    poll_count = models.PositiveIntegerField(_("status polls"), default=0)
    poll_lease_until = models.DateTimeField(_("poll lease until"), null=True, blank=True)
    poll_lease_token = models.CharField(_("poll lease"), max_length=64, blank=True)
    # Reconciliation of OUTCOME_UNKNOWN (payments.services): attempts and next try.
    reconcile_attempts = models.PositiveSmallIntegerField(_("reconciliation attempts"), default=0)
    reconcile_at = models.DateTimeField(_("next reconciliation"), null=True, blank=True)
    # The user's "check now" replays no earlier than this (backoff, the bank's Retry-After).
    replay_not_before = models.DateTimeField(_("no replay before"), null=True, blank=True)

    # Set when the portal cannot settle the payment by itself (no final status within the poll horizon, a lost
    # answer past the replay window that its account does not show): the staff queue of the admin.
    staff_flagged_at = models.DateTimeField(_("passed to staff"), null=True, blank=True, db_index=True)
    staff_reason = models.CharField(_("why staff"), max_length=300, blank=True)

    created_at = models.DateTimeField(_("created"), default=timezone.now)
    submitted_at = models.DateTimeField(_("sent to the bank"), null=True, blank=True)
    final_at = models.DateTimeField(_("final status at"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("payment")
        verbose_name_plural = _("payments")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="payment_amount_positive"),
            # A paymentId names one payment at the bank: two rows never share it.
            models.UniqueConstraint(
                fields=["product", "payment_id"], condition=~models.Q(payment_id=""), name="payment_bank_id_unique"
            ),
            # One intent (a payment form as first shown), one payment: a form posted twice finds the first.
            models.UniqueConstraint(
                fields=["intent_key"], condition=models.Q(intent_key__isnull=False), name="payment_intent_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="payment_user_created_idx"),
            # payments.services.polling: due polls.
            models.Index(
                fields=["next_poll_at"],
                condition=models.Q(next_poll_at__isnull=False),
                name="payment_poll_due_idx",
            ),
            models.Index(fields=["state"], name="payment_state_idx"),
            # payments.services.reconciliation.reconciliations_due: OUTCOME_UNKNOWN payments whose next try has
            # come.
            models.Index(
                fields=["reconcile_at"],
                condition=models.Q(reconcile_at__isnull=False),
                name="payment_reconcile_due_idx",
            ),
        ]

    def __str__(self) -> str:
        amount = amount_plain(self.amount, self.currency) if self.amount is not None else "-"
        return _("Payment #%(pk)s %(amount)s to %(name)s") % {
            "pk": self.pk,
            "amount": amount,
            "name": self.creditor_name,
        }

    @property
    def creditor_address(self) -> dict | None:
        """The creditorAddress of the body as sent (spec 2.4), or None."""
        try:
            address = json.loads(self.body_json or "{}").get("creditorAddress")
        except (ValueError, AttributeError):
            return None
        return address if isinstance(address, dict) else None

    @property
    def is_final(self) -> bool:
        return self.transaction_status in FINAL_TRANSACTION_STATUSES


class PaymentEventKind(models.TextChoices):
    CREATED = "created", _("Created")
    SUBMITTED = "submitted", _("Sent to the bank")
    STATUS = "status", _("Status from the bank")
    SCA_STARTED = "sca_started", _("Approval started")
    SCA_DONE = "sca_done", _("Approved at the bank")
    SCA_FAILED = "sca_failed", _("Approval failed")
    SIGNATURE = "signature", _("Signature added")
    CANCEL_REQUESTED = "cancel", _("Cancellation requested")
    BANK_ERROR = "bank_error", _("Bank error")
    OUTCOME_UNKNOWN = "unknown", _("Outcome unknown")
    RECONCILED = "reconciled", _("Reconciled with the bank")
    FOUND = "found", _("Found in your account")
    STAFF = "staff", _("Passed to staff")
    STAFF_RESOLVED = "staff_resolved", _("Settled by staff")
    NOTE = "note", _("Note")


class PaymentEvent(models.Model):
    """The payment's timeline: every bank status seen (with time) and every step of the portal's handling."""

    payment = models.ForeignKey(
        Payment, verbose_name=_("payment"), on_delete=models.CASCADE, related_name="events"
    )
    at = models.DateTimeField(_("at"), default=timezone.now)
    kind = models.CharField(_("kind"), max_length=20, choices=PaymentEventKind.choices)
    transaction_status = models.CharField(_("bank status"), max_length=4, blank=True)
    funds_available = models.BooleanField(_("funds available"), null=True, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    detail = models.CharField(
        _("detail"), max_length=512, blank=True, help_text=_("Bank's text or the portal's note.")
    )

    class Meta:
        verbose_name = _("payment event")
        verbose_name_plural = _("payment events")
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["payment", "at"], name="paymentevent_timeline_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.transaction_status}".strip()


class PaymentAuthorisation(models.Model):
    """One signer's SCA of a payment (startAuthorisation + scaRedirect). A corporate payment in PATC gets one
    per further signer; each is tied to the SCA state (TPP-Session-ID) its callback must bring back."""

    payment = models.ForeignKey(
        Payment, verbose_name=_("payment"), on_delete=models.CASCADE, related_name="authorisations"
    )
    signer = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("signer"), on_delete=models.PROTECT, related_name="+"
    )
    sca_state = models.OneToOneField(
        "connections.ScaState",
        verbose_name=_("SCA state"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The bank's authorisation (startAuthorisation's answer): its id and scaStatus link, read by the status polls
    # while the signer approves in the bank's app (no redirect back comes then).
    authorisation_id = models.CharField(_("authorisationId"), max_length=200, blank=True)
    sca_status_href = models.CharField(_("scaStatus link"), max_length=1000, blank=True)
    sca_status = models.CharField(_("scaStatus"), max_length=40, blank=True)
    started_at = models.DateTimeField(_("started"), default=timezone.now)
    completed_at = models.DateTimeField(_("signed"), null=True, blank=True)
    failed_at = models.DateTimeField(_("failed"), null=True, blank=True)
    failure = models.CharField(_("failure"), max_length=512, blank=True)

    class Meta:
        verbose_name = _("payment authorisation")
        verbose_name_plural = _("payment authorisations")
        ordering = ["started_at", "id"]
        constraints = [
            # One signature per signer and payment (a second attempt reuses the row until it is completed).
            models.UniqueConstraint(
                fields=["payment", "signer"],
                condition=models.Q(completed_at__isnull=False),
                name="paymentauthorisation_one_signature_per_signer",
            ),
        ]

    def __str__(self) -> str:
        return _("Approval of payment #%(payment)s by user #%(user)s") % {
            "payment": self.payment_id,
            "user": self.signer_id,
        }


class PaymentMailKind(models.TextChoices):
    """What happened to a payment that its owner is mailed about (payments.services.notifications)."""

    NEEDS_SIGNER = "needs_signer", _("Needs another signer")
    REJECTED = "rejected", _("Rejected")
    CANCELLED = "cancelled", _("Cancelled")
    SETTLED = "settled", _("Settled")


class PaymentMail(models.Model):
    """One event of a payment to mail a user about, written in the transaction that stored the bank's status.

    At most one per payment, event and user (the unique constraint): a status read twice, or by two pollers at
    once, is one row. The owner is mailed; a payment that needs another signer is mailed to the company's other
    signers in the portal too (those who have not signed). A mail claims the user's waiting rows (``claim``:
    rows mailed together share it) before it is sent, so that no row goes in two mails; ``sent_at`` is set once
    the mail server took it.
    """

    payment = models.ForeignKey(Payment, verbose_name=_("payment"), on_delete=models.CASCADE, related_name="mails")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("mailed to"), on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(_("event"), max_length=20, choices=PaymentMailKind.choices)
    transaction_status = models.CharField(_("bank status"), max_length=4, blank=True)
    created_at = models.DateTimeField(_("happened at"), default=timezone.now)
    claim = models.CharField(_("mail"), max_length=32, blank=True, help_text=_("Events mailed together share it."))
    claimed_at = models.DateTimeField(_("mail started at"), null=True, blank=True)
    sent_at = models.DateTimeField(_("mailed at"), null=True, blank=True)
    dropped_at = models.DateTimeField(
        _("not mailed at"),
        null=True,
        blank=True,
        help_text=_("The user turned the payment mails off, or has no address."),
    )

    class Meta:
        verbose_name = _("payment mail")
        verbose_name_plural = _("payment mails")
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["payment", "kind", "user"], name="paymentmail_once_per_event")
        ]
        indexes = [models.Index(fields=["user", "claimed_at"], name="paymentmail_user_claimed_idx")]

    def __str__(self) -> str:
        return _("%(kind)s: payment #%(payment)s") % {"kind": self.get_kind_display(), "payment": self.payment_id}
