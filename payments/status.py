"""The bank's payment statuses in plain words (Berlin Group TransactionStatus, ISO 20022; spec 3).

Every status the bank may answer has a short label and a sentence saying what it means for the payer. ACCP with
``fundsAvailable`` false is the bank's way of saying the account lacks the money (spec 3 rule 3): it gets its
own wording, not "accepted".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from payments.models import FINAL_TRANSACTION_STATUSES


@dataclass(frozen=True)
class StatusText:
    code: str
    label: str
    meaning: str
    tone: str  # "ok", "progress", "warn", "bad": the badge's colour class


_STATUSES: dict[str, tuple] = {
    "RCVD": (
        _("Received"),
        _("The bank has received the payment. It waits for your approval."),
        "progress",
    ),
    "PATC": (
        _("More signatures needed"),
        _("The payment is approved by some signers; the company's agreement needs more signatures."),
        "warn",
    ),
    "PDNG": (
        _("Pending"),
        _("The payment is approved and waits for the bank's next processing run."),
        "progress",
    ),
    "ACTC": (
        _("Accepted technically"),
        _("The bank has checked the payment; it will be processed on the execution date."),
        "progress",
    ),
    "ACCP": (
        _("Accepted"),
        _("The bank has accepted the payment and checked the account."),
        "progress",
    ),
    "ACWC": (
        _("Accepted with change"),
        _("The bank has accepted the payment with a change (for example of the execution date)."),
        "progress",
    ),
    "ACWP": (
        _("Accepted, not posted"),
        _("The bank has accepted the payment; it is not yet posted on the account."),
        "progress",
    ),
    "ACFC": (
        _("Accepted, funds checked"),
        _("The bank has accepted the payment and confirmed that the money is on the account."),
        "progress",
    ),
    "ACSP": (
        _("Being settled"),
        _("The money is reserved on your account and settlement is in process."),
        "progress",
    ),
    "ACSC": (
        _("Completed"),
        _("The payment is settled: the money has left your account."),
        "ok",
    ),
    "ACCC": (
        _("Credited"),
        _("The payment is settled on the recipient's account."),
        "ok",
    ),
    "PART": (
        _("Partly accepted"),
        _("Some of the payments in the batch were accepted, others not."),
        "warn",
    ),
    "RJCT": (
        _("Rejected"),
        _("The bank has rejected the payment. No money was moved."),
        "bad",
    ),
    "CANC": (
        _("Cancelled"),
        _("The payment was cancelled before it was carried out. No money was moved."),
        "bad",
    ),
}
_INSUFFICIENT_FUNDS = (
    _("Insufficient funds"),
    _(
        "The account does not have enough money for the payment and its fee. The bank tries again in its next "
        "runs; add money to the account or cancel the payment."
    ),
    "warn",
)

#: Every code the portal has words for (the rest are "being processed").
KNOWN_STATUSES = frozenset(_STATUSES)

#: Statuses after which the bank does not take a cancellation any more (settlement has begun or is over).
NOT_CANCELLABLE = frozenset({"ACSP", "ACSC", "ACCC", "ACWP"}) | FINAL_TRANSACTION_STATUSES


def status_text(code: str, funds_available: bool | None = None) -> StatusText:
    """Label and meaning of a bank status. A code this portal does not know is "being processed" (the code
    itself is kept for the details disclosure): the payment is polled on, up to the horizon, never taken as
    final."""
    if code == "ACCP" and funds_available is False:
        label, meaning, tone = _INSUFFICIENT_FUNDS
    elif code in _STATUSES:
        label, meaning, tone = _STATUSES[code]
    elif not code:
        return StatusText(code="", label=str(_("Not sent yet")), meaning="", tone="progress")
    else:
        return StatusText(
            code=code,
            label=str(_("Being processed")),
            meaning=str(_("The bank is processing the payment. This page shows its answer when it has one.")),
            tone="progress",
        )
    return StatusText(code=code, label=str(label), meaning=str(meaning), tone=tone)
