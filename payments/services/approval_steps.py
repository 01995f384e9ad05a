"""What a bank's answer asks of the portal next: send the PSU to the bank, start the approval, or none.

The bank may ask for no approval, or start it with the initiation itself (spec 3 rule 2, 5 rule 7: it may
exempt any transaction or require SCA on any). The answer's links decide, whatever its status (spec 2.7):
``scaRedirect`` sends the PSU there (its redirect back reaches connections' one callback like any other); a
startAuthorisation link leaves the payment INITIATED (the startAuthorisation call follows); neither means the
bank asks for no approval, and the status is read at once. A startAuthorisation answer is read the same way
(``authorisation_step``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.utils.translation import gettext_lazy

from payments.models import FINAL_TRANSACTION_STATUSES, Payment, PaymentState

#: The SCA purpose of a payment's approval (registered with connections.plugins by PaymentsConfig.ready).
PAYMENT_PURPOSE = "payment"
#: Bank statuses that wait for an approval: the PSU's SCA (RCVD) or further signers' (PATC).
APPROVAL_STATUSES = frozenset({"RCVD", "PATC"})
#: scaStatus by which the bank says it asks no SCA of this PSU for this payment (Berlin Group's value).
NO_SCA_STATUSES = frozenset({"exempted"})
#: Bank statuses after which no signature was given: the payment ended without one.
ENDED_UNSIGNED = frozenset({"RJCT", "CANC"})

# What an answer that may start the approval asks of the portal next (approval_step).
STEP_REDIRECT = "redirect"  # send the PSU to the bank's scaRedirect
STEP_NONE = "none"  # the bank asks for no approval: read its status
STEP_START = "start"  # the approval is still to be started (startAuthorisation)
STEP_IN_APP = "in_app"  # the bank asks the PSU in its app (no scaRedirect): its status is read

#: The timeline's note when the bank asked for no approval.
NO_APPROVAL_DETAIL = gettext_lazy("The bank did not ask for approval (exempted from SCA).")
#: What the user is told when the bank asked for no approval.
NO_APPROVAL_MESSAGE = gettext_lazy(
    "The bank did not ask you to approve this payment. It is being processed; this page shows its status."
)
NO_APPROVAL_FINAL_MESSAGE = gettext_lazy(
    "The bank did not ask you to approve this payment. This page shows what the bank did with it."
)


def _usable_redirect(href: str | None) -> bool:
    parts = urlsplit(href or "")
    return parts.scheme in {"http", "https"} and bool(parts.netloc)


#: The links by which a bank asks the TPP to start the approval (Berlin Group: any "startAuthorisation..." link).
START_LINKS = (
    "startAuthorisation",
    "startAuthorisationWithPsuIdentification",
    "startAuthorisationWithPsuAuthentication",
    "startAuthorisationWithEncryptedPsuAuthentication",
    "startAuthorisationWithAuthenticationMethodSelection",
    "startAuthorisationWithTransactionAuthorisation",
)


def approval_step(*, sca_redirect: str | None, links) -> str:
    """What an initiation answer asks of the portal next. The links decide (spec 2.7), whatever the status
    (RCVD, ACTC, ACCP, PDNG ...): a usable ``scaRedirect``, STEP_REDIRECT; a startAuthorisation link,
    STEP_START; neither, STEP_NONE (the bank asks for no approval: its status is read)."""
    if _usable_redirect(sca_redirect):
        return STEP_REDIRECT
    if any(name in (links or {}) for name in START_LINKS):
        return STEP_START
    return STEP_NONE


def start_link(links) -> str | None:
    """The href of the answer's startAuthorisation link (any of START_LINKS), or None."""
    for name in START_LINKS:
        href = (links or {}).get(name)
        if isinstance(href, str) and href:
            return href
    return None


def authorisation_step(*, sca_redirect: str | None, sca_status: str | None) -> str:
    """What a startAuthorisation answer asks next: STEP_REDIRECT (a usable scaRedirect), STEP_NONE (scaStatus
    "exempted"), else STEP_IN_APP: the approval happens in the bank's app (decoupled); its status is read on a
    backoff until the bank says."""
    if _usable_redirect(sca_redirect):
        return STEP_REDIRECT
    if (sca_status or "").strip().lower() in NO_SCA_STATUSES:
        return STEP_NONE
    return STEP_IN_APP


def state_without_approval(transaction_status: str) -> str:
    """The payment's state once the bank asked for no approval: FINAL for a final status, AUTHORISING while the
    bank waits for other signers (PATC), else AWAITING_STATUS (RCVD and an unknown status included: the status
    read at once says whether the bank still waits for an approval)."""
    if transaction_status in FINAL_TRANSACTION_STATUSES:
        return PaymentState.FINAL
    if transaction_status == "PATC":
        return PaymentState.AUTHORISING
    return PaymentState.AWAITING_STATUS


def no_approval_message(payment: Payment) -> str:
    return str(NO_APPROVAL_FINAL_MESSAGE if payment.state == PaymentState.FINAL else NO_APPROVAL_MESSAGE)
