"""The bank's payment statuses in plain words (Berlin Group TransactionStatus, ISO 20022; spec 3).

Every status the bank may answer has a short label and a sentence saying what it means for the payer. ACCP with
``fundsAvailable`` false is the bank's way of saying the account lacks the money (spec 3 rule 3): it gets its
own wording, not "accepted".

For staff, :func:`payment_outcome` says what became of a payment (settled, rejected, cancelled, being processed,
unknown...) from the bank's status and the portal's state, and :func:`outcome_query` is the same rule as a
filter of the ORM.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from decimal import Decimal
from functools import reduce

from django.db.models import Q
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from payments.models import FINAL_TRANSACTION_STATUSES, PaymentState

#: Bank statuses of a payment that was not carried out: no fee is charged for it.
NOT_CARRIED_OUT = frozenset({"CANC", "RJCT"})


@dataclass(frozen=True)
class ChargedFee:
    """The fee of a payment as the page and the export both give it: ``amount`` None when the bank has not said."""

    amount: Decimal | None
    currency: str
    not_carried_out: bool = False


def charged_fee(payment) -> ChargedFee:
    """What the payment costs: the bank's fee, or zero for a payment the bank did not carry out (cancelled or
    rejected), whatever the bank estimated before."""
    currency = payment.fee_currency or payment.currency
    if payment.transaction_status in NOT_CARRIED_OUT:
        return ChargedFee(amount=Decimal(0), currency=currency, not_carried_out=True)
    return ChargedFee(amount=payment.fee_amount, currency=currency)


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


def rejection_reason(payment, *, lacked_funds: bool = False) -> str:
    """Why the bank rejected ``payment``, in plain words: the money lacking (the bank said so with ACCP and
    fundsAvailable false before it rejected: ``lacked_funds``, or ``payment.lacked_funds`` when a query
    annotated it), else the bank's own words to the payer, else its first message, else that it gave no
    reason. The home page's notices and the payment page both say it with this one function."""
    if _lacked(payment, lacked_funds):
        return gettext("The account did not have enough money for the payment and its fee. No money was moved.")
    said = _bank_words(payment)
    if said:
        return gettext("No money was moved. The bank says: %(text)s") % {"text": said}
    return gettext("No money was moved. The bank gave no reason; your bank can tell you more.")


def rejection_reason_html(payment, *, lacked_funds: bool = False) -> str:
    """rejection_reason() for a page: the bank's own words in it marked translate="no" (quoted as the bank sent
    them, in the bank's language: not the portal's words to translate)."""
    said = _bank_words(payment)
    if said and not _lacked(payment, lacked_funds):
        before, _text, after = gettext("No money was moved. The bank says: %(text)s").partition("%(text)s")
        return format_html('{}<span translate="no">{}</span>{}', before, said, after)
    return rejection_reason(payment, lacked_funds=lacked_funds)


def _lacked(payment, lacked_funds: bool) -> bool:
    return lacked_funds or getattr(payment, "lacked_funds", False) or payment.funds_available is False


def _bank_words(payment) -> str:
    return payment.psu_message or next(
        (str(m.get("text")) for m in payment.tpp_messages or [] if isinstance(m, dict) and m.get("text")), ""
    )


# --- the outcome, for staff ----------------------------------------------------------------------------------

#: The bank's statuses that mean the money has moved (ACSC: off the debtor's account; ACCC: on the creditor's).
SETTLED_STATUSES = frozenset({"ACSC", "ACCC"})


@dataclass(frozen=True)
class PaymentOutcome:
    key: str
    label: str
    tone: str  # as StatusText.tone


#: What became of a payment, in the words of the bank's statuses above where they exist. The portal's state
#: FINAL reads "Completed" whatever the bank said; staff need to know whether the bank settled, rejected or
#: cancelled it, or whether nobody knows yet.
OUTCOMES: dict[str, tuple] = {
    "settled": (_("Settled"), "ok"),
    "rejected": (_("Rejected"), "bad"),
    "cancelled": (_("Cancelled"), "bad"),
    "processing": (_("Being processed"), "progress"),
    "unknown": (_("Unknown - check with the bank"), "warn"),
    "at_bank": (_("At the bank, no final status"), "ok"),
    "never_at_bank": (_("Never at the bank: no money moved"), "bad"),
    "not_sent": (_("Not sent yet"), "progress"),
}

#: The rule, first match wins: (outcome, field of the payment, values). The bank's final status decides
#: whatever the portal's state; without one, the state does. Anything else (sending, answer lost, not
#: confirmed, or FINAL without a final status) is "unknown". payment_outcome() and outcome_query() both read
#: this table, so the page and the admin's filter cannot disagree.
_OUTCOME_RULES: tuple[tuple[str, str, frozenset], ...] = (
    ("settled", "transaction_status", SETTLED_STATUSES),
    ("rejected", "transaction_status", frozenset({"RJCT"})),
    ("cancelled", "transaction_status", frozenset({"CANC"})),
    ("not_sent", "state", frozenset({PaymentState.DRAFT})),
    ("never_at_bank", "state", frozenset({PaymentState.REFUSED, PaymentState.NOT_AT_BANK})),
    ("at_bank", "state", frozenset({PaymentState.FOUND})),
    (
        "processing",
        "state",
        frozenset({PaymentState.INITIATED, PaymentState.AUTHORISING, PaymentState.AWAITING_STATUS}),
    ),
)
_FALLBACK_OUTCOME = "unknown"


def _outcome(key: str) -> PaymentOutcome:
    label, tone = OUTCOMES[key]
    return PaymentOutcome(key=key, label=str(label), tone=tone)


def payment_outcome(payment) -> PaymentOutcome:
    """What the bank made of the payment, from its status and the portal's state (see _OUTCOME_RULES)."""
    for key, field, values in _OUTCOME_RULES:
        if getattr(payment, field) in values:
            return _outcome(key)
    return _outcome(_FALLBACK_OUTCOME)


def outcome_query(key: str) -> Q:
    """The payments whose payment_outcome() is ``key``, as a filter: matched by one of its rules and by no
    rule before it."""
    if key not in OUTCOMES:
        raise ValueError(f"unknown outcome {key!r}")
    earlier = Q()
    parts = []
    for rule_key, field, values in _OUTCOME_RULES:
        condition = Q(**{f"{field}__in": sorted(values)})
        if rule_key == key:
            parts.append(condition & ~earlier)
        earlier |= condition
    if key == _FALLBACK_OUTCOME:
        parts.append(~earlier)
    return reduce(operator.or_, parts)
