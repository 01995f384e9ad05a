"""Payment initiation pages: the form (cross-border or domestic), the review, the one submission, the start of
the approval at the bank (SCA), the check of a payment whose answer was lost, and the SCA callback of a payment.

Thin: forms check, payments.services.* write, selectors read. Every page is a sensitive page; a payment of
another user is a 404. Submitting needs the password typed recently (require_recent_authentication).
"""

from __future__ import annotations

import logging
import uuid

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors as accounts_selectors
from accounts import services as accounts_services
from connections.errors import IdentityMismatch, ScaStateRejected
from connections.forms import failure_context
from connections.models import BankConnection, PsuContextChoice, ScaState
from connections.outcomes import ScaReturn
from connections.psu import psu_presence
from payments import selectors
from payments.forms import CrossBorderPaymentForm, DebtorAccountOption, DomesticPaymentForm
from payments.forms_review import ApproveForm, PaymentSubmitForm
from payments.models import Payment, PaymentProduct, PaymentState
from payments.reporting_text import payment_rate_phrase
from payments.review_facts import instruction_facts
from payments.selectors import payment_for_viewer, payment_owned
from payments.services import approval_steps, authorisation, drafts, polling, reconciliation, submission
from payments.services.lifecycle import EDITABLE_STATES
from payments.spec import NOK
from payments.status import status_text
from users.security import require_recent_authentication, sensitive_page, session_forget_reauthentication

logger = logging.getLogger(__name__)

_FORMS = {PaymentProduct.CROSS_BORDER: CrossBorderPaymentForm, PaymentProduct.DOMESTIC: DomesticPaymentForm}


def payment_page(payment: Payment) -> str:
    """Where a payment is shown now: its review while unsent, the form again when refused, the check while
    the bank's answer is unknown, else the payment's own page."""
    if payment.state == PaymentState.DRAFT:
        return reverse("payment-review", args=[payment.pk])
    if payment.state == PaymentState.REFUSED:
        return reverse("payment-edit", args=[payment.pk])
    if payment.state in (PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN, PaymentState.UNCONFIRMED):
        return reverse("payment-reconcile", args=[payment.pk])
    return reverse("payment-detail", args=[payment.pk])


# --- the form ------------------------------------------------------------------------------------------------


def _debtors(user, product: str) -> list[selectors.DebtorChoice]:
    return selectors.debtor_choices(user=user, currency=NOK if product == PaymentProduct.DOMESTIC else None)


def _form(product: str, choices: list[selectors.DebtorChoice], data=None, **kwargs):
    options = (
        [
            DebtorAccountOption(key=c.key, label=c.label, currency=c.currency, iban=c.iban, bban=c.bban)
            for c in choices
        ]
        if choices
        else None
    )
    return _FORMS[product](data, debtor_accounts=options, **kwargs)


def _intent(request) -> uuid.UUID | None:
    """The intent key the payment form was first shown with (posted back with it), or None. ``intent_kept``
    (static/js/payment_intent.js) comes first: the browser puts it back on Back, when the page fetched again
    holds a new ``intent``."""
    for name in ("intent_kept", "intent"):
        try:
            return uuid.UUID(str(request.POST.get(name, "")))
        except ValueError:
            continue
    return None


def _already_sent(request, payment: Payment):
    """A payment form posted again (Back, reload, a second tab, a double click): its payment, never a new one."""
    messages.info(request, _("This form was sent already. Here is the payment made from it."))
    return redirect(payment_page(payment))


def _draft_from_form(request, product: str, form, choices, *, replaces=None, allow_duplicate=False) -> Payment:
    if choices:
        chosen = next(c for c in choices if c.key == form.cleaned_data["debtor_account"])
        connection = BankConnection.objects.get(pk=chosen.connection_id, user=request.user)
        context = chosen.context
    else:
        connection = selectors.payment_connection_for_typed_account(user=request.user)
        context = PsuContextChoice.PRIVATE
    requirement = getattr(form, "reporting_requirement", None)
    equivalent = requirement.equivalent if requirement else None
    return drafts.payment_draft_create(
        user=request.user,
        product=product,
        context=context,
        connection=connection,
        instruction=form.instruction(),
        form_data={key: value for key, value in form.data.items() if key in form.fields},
        exchange_rate=equivalent,
        allow_logical_duplicate=allow_duplicate,
        replaces=replaces,
        intent_key=_intent(request),
    )


def _new(request, product: str):
    choices = _debtors(request.user, product)
    form = _form(product, choices, request.POST if request.method == "POST" else None)
    if request.method == "POST":
        earlier = _intent_payment(request)
        if earlier is not None:
            return _already_sent(request, earlier)
    if request.method == "POST" and form.is_valid():
        try:
            payment = _draft_from_form(request, product, form, choices)
        except drafts.IntentAlreadySent as sent:
            return _already_sent(request, sent.payment)
        return redirect("payment-review", payment.pk)
    return render(
        request,
        "payments/form.html",
        {
            "form": form,
            "product": product,
            "typed_debtor": not choices,
            "domestic": product == PaymentProduct.DOMESTIC,
            "intent": _intent(request) or uuid.uuid4(),
        },
    )


def _intent_payment(request) -> Payment | None:
    intent = _intent(request)
    if intent is None:
        return None
    return Payment.objects.filter(user=request.user, intent_key=intent).first()


@sensitive_page
@require_http_methods(["GET", "POST"])
def payment_new(request):
    return _new(request, PaymentProduct.CROSS_BORDER)


@sensitive_page
@require_http_methods(["GET", "POST"])
def payment_new_domestic(request):
    return _new(request, PaymentProduct.DOMESTIC)


def _is_logical_duplicate(payment: Payment) -> bool:
    return submission.is_logical_duplicate(payment.tpp_messages)


@sensitive_page
@require_http_methods(["GET", "POST"])
def payment_edit(request, pk):
    """The form again, filled in as the payment was typed. Saving makes a new payment (a submitted one is never
    changed); for a payment the bank refused, its messages stand next to the fields they name."""
    if request.method == "POST":
        # This form posted again (Back, reload): its payment, even when the draft it was edited from is gone
        # (an edited draft is replaced, so its address no longer answers).
        earlier = _intent_payment(request)
        if earlier is not None and earlier.pk != pk:
            return _already_sent(request, earlier)
    payment = payment_owned(user=request.user, pk=pk)
    if payment.state not in EDITABLE_STATES:
        # Sent, or perhaps sent (its outcome unknown): never edited into another payment.
        messages.error(request, _("This payment was sent to the bank, so it cannot be changed."))
        return redirect(payment_page(payment))
    choices = _debtors(request.user, payment.product)
    duplicate = refused_as_duplicate = payment.state == PaymentState.REFUSED and _is_logical_duplicate(payment)
    # "Pay it again" only when every payment alike of the user's is over, naming the one it would duplicate;
    # while one is not (unknown outcome, awaiting approval, processing), that payment is shown instead.
    alike_open = selectors.payment_alike_open(payment=payment) if duplicate else None
    duplicates = selectors.payment_alike_final(payment=payment) if duplicate and alike_open is None else None
    duplicate = duplicate and alike_open is None
    if request.method == "POST":
        form = _form(payment.product, choices, request.POST)
        allow_duplicate = duplicate and request.POST.get("allow_logical_duplicate") == "on"
        if form.is_valid():
            try:
                new = _draft_from_form(
                    request, payment.product, form, choices, replaces=payment, allow_duplicate=allow_duplicate
                )
            except drafts.IntentAlreadySent as sent:
                return _already_sent(request, sent.payment)
            return redirect("payment-review", new.pk)
        bank_errors: list[str] = []
    else:
        form = _form(payment.product, choices, payment.form_data or None)
        bank_errors = []
        if payment.state == PaymentState.REFUSED:
            form.is_valid()  # bind and check: the bank's messages are added beside the typed values
            said = payment.tpp_messages
            if refused_as_duplicate:  # the page says it in plain words (the payment alike, or "pay it again")
                said = [m for m in said if m.get("path") != "allowLogicalDuplicate"]
            by_field, bank_errors = submission.bank_errors_by_field(said)
            for name, texts in by_field.items():
                for text in texts:
                    if name in form.fields:
                        form.add_error(name, text)
                    else:
                        bank_errors.append(text)
    return render(
        request,
        "payments/form.html",
        {
            "form": form,
            "product": payment.product,
            "typed_debtor": not choices,
            "domestic": payment.product == PaymentProduct.DOMESTIC,
            "edited": payment,
            "bank_errors": bank_errors,
            "offer_duplicate": duplicate,
            "duplicates": duplicates,
            "alike_open": alike_open,
            "intent": _intent(request) or uuid.uuid4(),
        },
    )


@sensitive_page
@require_http_methods(["GET", "POST"])
def payment_draft_delete(request, pk):
    """Delete a draft (saved, never sent) after the user confirms it: the owner's only (another user's is a
    404), drafts only (a payment that was sent is shown instead, with a message)."""
    payment = payment_owned(user=request.user, pk=pk)
    if request.method == "POST":
        if drafts.payment_draft_delete(user=request.user, payment_id=payment.pk):
            messages.success(request, _("The draft was deleted."))
            return redirect("payment-list")
        payment = Payment.objects.filter(pk=payment.pk).first()  # sent, or deleted, meanwhile
        if payment is None:
            return redirect("payment-list")
    if payment.state != PaymentState.DRAFT or payment.submitted_at is not None:
        messages.error(request, _("This payment was sent to the bank, so it cannot be deleted."))
        return redirect(payment_page(payment))
    return render(request, "payments/draft_delete.html", {"payment": payment})


# --- review and submission -----------------------------------------------------------------------------------


def _review(request, payment: Payment, form: PaymentSubmitForm, *, status: int = 200, blocking=None):
    account = accounts_selectors.payable_account(
        user=request.user, number=payment.debtor_account, connection_id=payment.connection_id
    )
    funds, funds_unread = _funds(request, payment, account)
    return render(
        request,
        "payments/review.html",
        {
            "payment": payment,
            "form": form,
            "body": payment.body_json,
            "instruction": instruction_facts(payment, debtor_account=account),
            "domestic": payment.product == PaymentProduct.DOMESTIC,
            "funds": funds,
            "funds_unread": funds_unread,
            "nok_rate": payment_rate_phrase(payment),
            "blocking": blocking,
            "blocking_message": submission.alike_unknown_message(blocking) if blocking is not None else "",
        },
        status=status,
    )


def _funds(request, payment: Payment, account) -> tuple[selectors.FundsCheck | None, bool]:
    """The debtor account's available balance, read now with the user present, compared with the payment; None
    when no consent of the user covers the account (``account`` None) or the bank gave no available balance. The
    second value is True when the bank could not be asked (the page says so; nothing is blocked)."""
    if account is None:
        return None, False
    balance = accounts_services.account_available_balance_read(
        account=account, presence=psu_presence(request), actor=request.user
    )
    if balance.problem is not None:
        return None, True
    if balance.amount is None:
        return None, False
    check = selectors.funds_check(
        payment=payment, available=balance.amount, currency=balance.currency, read_at=balance.read_at
    )
    return check, False


def _to_approval(request, payment: Payment, *, in_app: bool = False):
    try:
        href = authorisation.authorisation_start(
            payment=payment,
            signer=request.user,
            session_key=request.session.session_key,
            presence=psu_presence(request),
            in_app=in_app,
        )
    except authorisation.AuthorisationNotStarted as error:
        messages.error(request, _("The bank could not start the approval: %(text)s") % {"text": error.message})
        return redirect(payment_page(payment))
    if href is None:  # the bank asked for no approval, or asks the signer in its app: its status tells
        if not authorisation.signature_counted(payment=payment, signer=request.user):
            messages.info(request, authorisation.IN_APP_MESSAGE)
        else:
            messages.info(request, approval_steps.no_approval_message(payment))
        return redirect(payment_page(payment))
    return redirect(href)


@sensitive_post_parameters("national_identity_number")  # never in an error report
@require_recent_authentication
@require_http_methods(["GET", "POST"])
def payment_review(request, pk):
    """Shows exactly what will be signed and sent; posting it sends the payment once and goes on to the bank's
    approval. The password must have been typed recently (the decorator asks for it again)."""
    payment = payment_owned(user=request.user, pk=pk)
    needs_identity = payment.connection_id is None
    if payment.state != PaymentState.DRAFT:
        return redirect(payment_page(payment))
    if request.method == "GET":
        form = PaymentSubmitForm(
            initial={"idempotency_key": payment.idempotency_key}, needs_identity=needs_identity
        )
        blocking = selectors.payment_alike_unknown(payment=payment)
        if blocking is not None:  # said before the user fills anything in (the submit refuses it too)
            return _review(request, payment, form, status=409, blocking=blocking)
        return _review(request, payment, form)
    form = PaymentSubmitForm(request.POST, needs_identity=needs_identity)
    if not form.is_valid():
        return _review(request, payment, form, status=400)
    if request.session.session_key is None:
        request.session.save()
    try:
        outcome = submission.payment_submit(
            payment=payment,
            user=request.user,
            idempotency_key=str(form.cleaned_data["idempotency_key"]),
            presence=psu_presence(request),
            national_identity_number=form.cleaned_data.get("national_identity_number", ""),
            session_key=request.session.session_key,
            in_app=form.cleaned_data["in_app"],
        )
    except submission.PaymentNotSubmittable as error:
        if error.blocking is not None:
            return _review(request, payment, form, status=409, blocking=error.blocking)
        if error.field and error.field in form.fields:
            form.add_error(error.field, error.message)
        else:
            form.add_error(None, error.message)
        return _review(request, payment, form, status=400)
    payment = outcome.payment
    if outcome.duplicate_submit:
        return redirect(payment_page(payment))
    session_forget_reauthentication(request)
    if payment.state == PaymentState.INITIATED:
        return _to_approval(request, payment, in_app=form.cleaned_data["in_app"])
    if outcome.sca_redirect:  # the bank started the approval with the initiation itself
        return redirect(outcome.sca_redirect)
    if outcome.approval_skipped:
        messages.info(request, outcome.message)
        return redirect(payment_page(payment))
    if payment.state == PaymentState.DRAFT:  # not delivered: the same page may be sent again
        form = PaymentSubmitForm(
            initial={"idempotency_key": payment.idempotency_key}, needs_identity=needs_identity
        )
        form.cleaned_data = {}  # an unbound form takes an error only with cleaned data (Form.add_error)
        form.add_error(None, outcome.message)
        return _review(request, payment, form, status=503)
    if outcome.message:
        messages.warning(request, outcome.message)
    return redirect(payment_page(payment))


@sensitive_page
@require_POST
def payment_approve(request, pk):
    """Send the signer to the bank to approve the payment: the initiator (again, when an approval failed or
    was abandoned) or, for a corporate payment waiting for more signatures, another signer of the company."""
    payment = payment_for_viewer(user=request.user, pk=pk)
    if request.session.session_key is None:
        request.session.save()
    choice = ApproveForm(request.POST)
    return _to_approval(request, payment, in_app=choice.is_valid() and choice.cleaned_data["in_app"])


@sensitive_page
@require_http_methods(["GET", "POST"])
def payment_reconcile(request, pk):
    """A payment whose answer from the bank was lost: what is known, and "Check now" (inside the replay window
    the same request is replayed; the bank answers with the payment it made, or makes it once). UNCONFIRMED
    (the bank refused the replay, or the window passed): the user is told to check at the bank; the payment is
    looked for in the account's transactions and staff settle it with the bank. It is never made anew from
    here, and a payment alike cannot be sent until it is settled."""
    payment = payment_owned(user=request.user, pk=pk)
    if payment.state not in (PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN, PaymentState.UNCONFIRMED):
        return redirect(payment_page(payment))
    if payment.state == PaymentState.UNCONFIRMED and reconciliation.unconfirmed_find(payment_id=payment.pk):
        messages.success(request, reconciliation.FOUND_MESSAGE)
        return redirect("payment-detail", payment.pk)
    if payment.state == PaymentState.UNCONFIRMED:  # staff settle it with the bank; never made anew from here
        return render(request, "payments/reconcile.html", {"payment": payment})
    if request.method == "POST":  # the service refuses while another caller holds the payment
        outcome = reconciliation.payment_reconcile(
            payment_id=payment.pk, actor=request.user, presence=psu_presence(request)
        )
        payment.refresh_from_db()
        if payment.state == PaymentState.INITIATED:
            messages.success(request, _("The bank has the payment. Approve it at the bank to send it."))
            return _to_approval(request, payment)
        if outcome.sca_redirect:  # the bank started the approval with the initiation it answered
            return redirect(outcome.sca_redirect)
        if outcome.approval_skipped:
            messages.info(request, outcome.message)
            return redirect(payment_page(payment))
        if payment.state == PaymentState.REFUSED:
            return redirect(payment_page(payment))
        if outcome.message:
            messages.info(request, outcome.message)
        elif not outcome.attempted:
            messages.info(request, _("The payment is being checked with the bank right now."))
        return redirect("payment-reconcile", payment.pk)
    return render(request, "payments/reconcile.html", {"payment": payment, "check_after": _check_after(payment)})


def _check_after(payment: Payment) -> int | None:
    """In how many seconds the reconcile page checks by itself (the payer is on it): inside the replay window
    only, after the backoff or the bank's Retry-After; None: it does not."""
    now = timezone.now()
    if payment.state != PaymentState.OUTCOME_UNKNOWN or not reconciliation.replay_allowed(payment, now):
        return None
    if payment.replay_not_before is None or payment.replay_not_before <= now:
        return 0
    return int((payment.replay_not_before - now).total_seconds()) + 1


# --- the redirect back from the bank (handlers of the SCA purpose "payment", registered in PaymentsConfig) ---


def payment_sca_accept(request, sca_return: ScaReturn):
    """The bank sent the signer back after approving (connections' callback consumed the state and checked the
    identity). The signature is recorded; the payment's outcome is the status the bank reports."""
    try:
        payment = authorisation.payment_sca_accept(sca_return=sca_return)
    except ScaStateRejected as exc:
        logger.info("payment SCA callback rejected", extra={"reason": exc.reason})
        return render(request, "payments/callback_rejected.html", {"reason": exc.reason}, status=400)
    except IdentityMismatch:
        return render(request, "payments/callback_rejected.html", {"reason": "identity"}, status=400)
    messages.success(request, _("You approved the payment at the bank. We are following its status."))
    return redirect("payment-detail", payment.pk)


def payment_sca_failed(request, state: ScaState, code: str):
    """A failure redirect while this session was approving a payment. It proves nothing (anyone can make one up):
    nothing is changed, the approval stays open, and the page shows the status the bank reports now."""
    payment = authorisation.payment_for_failed_sca(state=state, user=request.user)
    if payment is None:
        return render(request, "connections/callback_failed.html", failure_context(request.GET, code))
    polling.payment_poll(payment_id=payment.pk, actor=request.user)
    payment.refresh_from_db()
    failure = failure_context(request.GET, code)
    if payment.transaction_status:
        failure["details"].append((_("Status code at the bank"), payment.transaction_status))
    context = {
        "payment": payment,
        **failure,
        "status": status_text(payment.transaction_status, payment.funds_available),
        "may_approve": payment.transaction_status in ("", "RCVD", "PATC"),
    }
    return render(request, "payments/callback_failed.html", context)
