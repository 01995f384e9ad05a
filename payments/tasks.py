"""Background work of payments. Tasks stay thin: they call a service and decide about retrying."""

from __future__ import annotations

import logging
import random

from celery import shared_task

from payments.rates import RateSourceMalformed, RateSourceUnavailable
from payments.services import notifications, polling, reconciliation
from payments.services.dispatch import enqueue_now
from payments.services.exchange_rates import exchange_rates_refresh

logger = logging.getLogger(__name__)

RATE_REFRESH_MAX_RETRIES = 3
RATE_REFRESH_BACKOFF_SECONDS = 60  # 1, 2, 4 minutes (plus jitter): far below the broker's visibility timeout


def _backoff(retries: int) -> int:
    base = RATE_REFRESH_BACKOFF_SECONDS * 2**retries
    return base + random.randint(0, base // 2)  # noqa: S311 - jitter, not cryptography


@shared_task(
    bind=True, name="payments.refresh_exchange_rates", ignore_result=True, max_retries=RATE_REFRESH_MAX_RETRIES
)
def refresh_exchange_rates(self) -> dict | None:
    """Fetch Norges Bank's daily rates and store them (beat runs it each business day).

    When Norges Bank cannot be reached it retries a bounded number of times, then logs and ends normally:
    the stored rates stay as they are, and a missing day is filled in by the next run (the fetch asks for
    the last few business days). A malformed answer is logged and not retried.
    """
    try:
        summary = exchange_rates_refresh()
    except RateSourceUnavailable as exc:
        if self.request.retries < RATE_REFRESH_MAX_RETRIES:
            logger.warning(
                "exchange rates: Norges Bank unavailable (%s); retry %d of %d",
                exc,
                self.request.retries + 1,
                RATE_REFRESH_MAX_RETRIES,
            )
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc
        logger.error(
            "exchange rates: Norges Bank unavailable after %d retries (%s); keeping the stored rates",
            RATE_REFRESH_MAX_RETRIES,
            exc,
        )
        return None
    except RateSourceMalformed as exc:
        logger.error("exchange rates: Norges Bank's answer was not understood (%s); keeping the stored rates", exc)
        return None
    return {"created": summary.created, "updated": summary.updated, "unchanged": summary.unchanged}


@shared_task(name="payments.poll_payment", ignore_result=True)
def poll_payment(payment_id: int) -> str:
    """Read one payment's status from the bank (payments.services.polling.payment_poll: one poller per
    payment).

    Not retried by Celery: a failed poll plans its own next try in ``Payment.next_poll_at``, which beat's
    dispatcher picks up; a duplicate delivery finds the lease taken or the poll already done.
    """
    return polling.payment_poll(payment_id=payment_id).status


@shared_task(name="payments.dispatch_due_polls", ignore_result=True)
def dispatch_due_polls() -> int:
    """Enqueue the status polls that are due (beat runs it every minute; polling resumes after a restart)."""
    return len(polling.polls_dispatch())


@shared_task(name="payments.reconcile_payment", ignore_result=True)
def reconcile_payment(payment_id: int) -> str:
    """The background's look at an initiation whose answer was lost (payments.services.reconciliation.
    reconciliation_check: never a replay; past the replay window the payment goes to staff). Not retried by
    Celery: the service plans its own next look in ``Payment.reconcile_at``, which beat's dispatcher picks up."""
    return reconciliation.reconciliation_check(payment_id=payment_id)


@shared_task(name="payments.dispatch_due_reconciliations", ignore_result=True)
def dispatch_due_reconciliations() -> int:
    """Enqueue the reconciliations that are due (beat, every minute: they resume after a restart)."""
    ids = reconciliation.reconciliations_due()
    for payment_id in ids:
        reconcile_payment.delay(payment_id)
    return len(ids)


@shared_task(name="payments.find_unconfirmed_payments", ignore_result=True)
def find_unconfirmed_payments() -> int:
    """Look for the payments the bank did not confirm in their debtor accounts' stored transactions (beat)."""
    return reconciliation.unconfirmed_find_all()


@shared_task(
    name="payments.send_payment_mails",
    ignore_result=True,
    autoretry_for=(OSError,),
    retry_backoff=60,
    retry_kwargs={"max_retries": 5},
)
def send_payment_mails(user_id: int) -> int:
    """Mail one user what happened to their payments (payments.services.notifications). A mail server that does
    not answer is retried with backoff; events held back by the hour's limit are sent by beat's dispatcher."""
    return notifications.payment_mails_send(user_id).events


@shared_task(name="payments.dispatch_payment_mails", ignore_result=True)
def dispatch_payment_mails() -> int:
    """Enqueue a sender for every user whose payment mails wait (beat, every 5 minutes): after a lost enqueue,
    a failed mail or the hour's limit."""
    users = notifications.users_with_waiting_mails()
    for user_id in users:
        enqueue_now(notifications.SEND_TASK, user_id)
    return len(users)
