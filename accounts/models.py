"""Bank accounts of a connection, their balances and transactions, and the ledger of unattended bank calls.

The connection itself (PSU identity, consent, SCA) is the connections app's. Writes go through
accounts/services.py, accounts/sync.py, accounts/refresh.py, accounts/ledger.py and accounts/planner.py. Field
labels are translated like the pages (the admin shows them in the staff member's language).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from core.money import amount_plain


class AccountKind(models.TextChoices):
    ACCOUNT = "account", _("Account")  # /v1/accounts
    CARD = "card", _("Card account")  # /v1/card-accounts


class BankAccount(models.Model):
    """An account a connection's consent covers (spec 4.3; docs/bank-interface.md, reference 2)."""

    connection = models.ForeignKey(
        "connections.BankConnection",
        verbose_name=_("connection"),
        on_delete=models.CASCADE,
        related_name="accounts",
    )
    kind = models.CharField(_("kind"), max_length=10, choices=AccountKind.choices, default=AccountKind.ACCOUNT)
    resource_id = models.CharField(_("resourceId"), max_length=200, help_text=_("The bank's opaque id."))
    iban = models.CharField(_("IBAN"), max_length=34, blank=True)
    bban = models.CharField(_("BBAN"), max_length=30, blank=True)
    masked_pan = models.CharField(_("card number"), max_length=35, blank=True)
    currency = models.CharField(_("currency"), max_length=3, blank=True)
    name = models.CharField(_("name"), max_length=70, blank=True)
    product = models.CharField(_("product"), max_length=70, blank=True)
    cash_account_type = models.CharField(_("account type"), max_length=10, blank=True)
    consented = models.BooleanField(
        _("consented"), default=True, help_text=_("Covered by the latest consent; earlier accounts are kept.")
    )
    balances_refreshed_at = models.DateTimeField(_("balances refreshed"), null=True, blank=True)
    transactions_refreshed_at = models.DateTimeField(_("transactions refreshed"), null=True, blank=True)
    # The sync cursor (accounts/sync.py): booked transactions up to this date are stored. Moved only after a
    # complete sync, so a failed or cut-short sync starts again from the same point.
    transactions_synced_to = models.DateField(_("transactions synced to"), null=True, blank=True)
    # The start of the contiguous history stored (a first sync without the PSU reads only 90 days; the next sync
    # with the PSU present reads the rest).
    transactions_synced_from = models.DateField(_("transactions synced from"), null=True, blank=True)
    # The background refresh (accounts/refresh.py): when the planner next refreshes this account unattended,
    # and, after the bank answered 429, until when no unattended call is made.
    next_refresh_at = models.DateTimeField(_("next planned refresh"), null=True, blank=True)
    refresh_blocked_until = models.DateTimeField(_("refresh blocked until"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("bank account")
        verbose_name_plural = _("bank accounts")
        ordering = ["connection_id", "kind", "name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "kind", "resource_id"], name="bankaccount_resource_unique"
            )
        ]
        indexes = [
            # The planner (accounts.planner.refresh_plan): accounts whose unattended refresh is due.
            models.Index(fields=["next_refresh_at"], name="bankaccount_refresh_due_idx"),
            # Every portal account on one bank account (the bank counts its allowance per bank account): each
            # unattended refresh locks them, a 429 blocks them. Without it each refresh reads the whole table.
            models.Index(fields=["kind", "resource_id"], name="bankaccount_bank_account_idx"),
        ]

    def __str__(self) -> str:
        return self.name or self.iban or self.bban or self.masked_pan or self.resource_id

    @property
    def company(self) -> str:
        """The company a corporate account belongs to (its connection's agreement, named by the bank); empty for
        a private account. Two companies' accounts may carry the same name ("Driftskonto")."""
        connection = self.connection
        return connection.agreement_name if connection.is_corporate else ""


#: Plain names of the balance types seen (docs/bank-interface.md, reference 2), one per balance; the bank's own
#: code is shown only behind the account page's "details". Another type is shown as sent.
BALANCE_TYPE_LABELS = {
    "openingBooked": _("Balance at the start of the day"),
    "closingBooked": _("Balance at the end of the last day"),
    "interimBooked": _("Balance so far today"),
    "interimAvailable": _("Available now"),
    "expected": _("Balance with payments on their way"),
    "authorised": _("Available with credit"),
    "forwardAvailable": _("Available later"),
}


class BalanceSnapshot(models.Model):
    """One balance of an account as the bank reported it at ``fetched_at`` (kept, for charts over time)."""

    account = models.ForeignKey(
        BankAccount, verbose_name=_("account"), on_delete=models.CASCADE, related_name="balance_snapshots"
    )
    balance_type = models.CharField(_("type"), max_length=40)
    amount = models.DecimalField(_("amount"), max_digits=20, decimal_places=4)
    currency = models.CharField(_("currency"), max_length=3)
    reference_date = models.DateField(_("reference date"), null=True, blank=True)
    fetched_at = models.DateTimeField(_("fetched"))

    class Meta:
        verbose_name = _("balance snapshot")
        verbose_name_plural = _("balance snapshots")
        ordering = ["account_id", "-fetched_at", "balance_type"]
        constraints = [
            # Also the index of the two readers: the accounts overview (the latest fetch of each account,
            # fetched_at = balances_refreshed_at) and the balance chart (an account's snapshots over time).
            models.UniqueConstraint(
                fields=["account", "fetched_at", "balance_type"], name="balancesnapshot_fetch_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.type_label} {amount_plain(self.amount, self.currency)}"

    @property
    def amount_as_sent(self) -> Decimal:
        """The amount without the column's padding zeros (it keeps 4 fraction digits): ``money`` shows every
        fraction digit it is given, and the currency's own minor units at least."""
        value = self.amount.normalize()
        return value if value.as_tuple().exponent <= 0 else value.quantize(Decimal(1))

    @property
    def type_label(self) -> str:
        return str(BALANCE_TYPE_LABELS.get(self.balance_type, self.balance_type))


class TransactionStatus(models.TextChoices):
    BOOKED = "booked", _("Booked")
    PENDING = "pending", _("Pending")


class Transaction(models.Model):
    """One transaction of an account as the bank reported it (accounts/sync.py keeps them in step).

    Booked rows are upserted by the bank's ``transactionId``; a pending row is replaced when its booked
    counterpart arrives (same id, else the same ``fingerprint``: amount, date and text).
    """

    account = models.ForeignKey(
        BankAccount, verbose_name=_("account"), on_delete=models.CASCADE, related_name="transactions"
    )
    transaction_id = models.CharField(_("transactionId"), max_length=200, blank=True)
    status = models.CharField(_("status"), max_length=10, choices=TransactionStatus.choices)
    booking_date = models.DateField(_("booking date"), null=True, blank=True)
    value_date = models.DateField(_("value date"), null=True, blank=True)
    amount = models.DecimalField(_("amount"), max_digits=23, decimal_places=5, help_text=_("Negative: money out."))
    currency = models.CharField(_("currency"), max_length=3)
    counterparty_name = models.CharField(_("counterparty"), max_length=140, blank=True)
    counterparty_account = models.CharField(_("counterparty account"), max_length=34, blank=True)
    remittance = models.TextField(_("remittance information"), blank=True)
    kid = models.CharField(_("KID"), max_length=35, blank=True)
    end_to_end_id = models.CharField(_("end-to-end id"), max_length=35, blank=True)
    fingerprint = models.CharField(_("fingerprint"), max_length=64, editable=False)
    raw = models.JSONField(_("as sent by the bank"), default=dict, blank=True)
    # The bank's transaction details record (GET .../transactions/{transactionId}), read while the user looked
    # at the transaction and kept for TRANSACTION_DETAILS_FRESH (accounts.services.transaction_details_read).
    details = models.JSONField(_("details as sent by the bank"), null=True, blank=True)
    details_read_at = models.DateTimeField(_("details read"), null=True, blank=True)
    first_seen_at = models.DateTimeField(_("first seen"))
    updated_at = models.DateTimeField(_("updated"))

    class Meta:
        verbose_name = _("transaction")
        verbose_name_plural = _("transactions")
        ordering = ["account_id", "-booking_date", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "transaction_id"],
                condition=~Q(transaction_id=""),
                name="transaction_bank_id_unique",
            ),
        ]
        indexes = [
            # The transactions list (keyset pagination, newest first) and its status filter.
            models.Index(
                "account",
                "status",
                models.F("booking_date").desc(),
                models.F("id").desc(),
                name="transaction_keyset_idx",
            ),
            # Matching a pending row to its booked counterpart by fingerprint.
            models.Index(fields=["account", "fingerprint"], name="transaction_fingerprint_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.booking_date or self.value_date or '-'} {amount_plain(self.amount, self.currency)}"


#: How long the bank's details of a transaction are shown without asking the bank again.
TRANSACTION_DETAILS_FRESH = timedelta(hours=6)


class RefreshKind(models.TextChoices):
    """What an unattended bank call read; the bank counts each kind separately (4 per account per 24h)."""

    BALANCES = "balances", _("Balances")
    TRANSACTIONS = "transactions", _("Transactions")


#: The bank's allowance for unattended reads (bank-api-spec: 4 per account per kind per rolling 24 hours).
UNATTENDED_CALLS_PER_DAY = 4
UNATTENDED_WINDOW = timedelta(hours=24)


class RefreshCall(models.Model):
    """The ledger of unattended bank calls: one row reserved BEFORE each call without PSU-IP-Address.

    accounts/ledger.py reserves under a row lock on the account and refuses when the account already has
    UNATTENDED_CALLS_PER_DAY rows of that kind in the last UNATTENDED_WINDOW, so several workers, a task
    delivered twice or two planners never spend more than the bank allows. A reserved call counts whether or not
    it succeeded (the bank counts every request).
    """

    account = models.ForeignKey(
        BankAccount, verbose_name=_("account"), on_delete=models.CASCADE, related_name="refresh_calls"
    )
    # The bank counts per TPP and bank account, not per portal connection: two connections (e.g. two users of
    # one corporate agreement) sharing an account share its allowance. "<kind>:<resourceId>".
    resource_key = models.CharField(_("bank account"), max_length=220)
    kind = models.CharField(_("kind"), max_length=12, choices=RefreshKind.choices)
    reserved_at = models.DateTimeField(_("reserved"))

    class Meta:
        verbose_name = _("unattended bank call")
        verbose_name_plural = _("unattended bank calls")
        ordering = ["-reserved_at", "-id"]
        indexes = [
            models.Index(fields=["resource_key", "kind", "reserved_at"], name="refreshcall_window_idx"),
            models.Index(fields=["reserved_at"], name="refreshcall_prune_idx"),
        ]

    def __str__(self) -> str:
        return _("%(kind)s of account #%(account)s at %(at)s") % {
            "kind": self.get_kind_display(),
            "account": self.account_id,
            "at": f"{self.reserved_at:%Y-%m-%d %H:%M}",
        }

    @staticmethod
    def key_for(account: BankAccount) -> str:
        return f"{account.kind}:{account.resource_id}"
