"""Background work asked for by the services, by task name: the services never import payments.tasks (the
tasks import the services), so the initiation/polling/tasks import circle is gone.

Every enqueue waits for the current transaction to commit (at once outside one) and is ``robust``: a broker
that cannot be reached never fails the request that asked; the work is due in the database anyway (a poll's
``next_poll_at``, a reconciliation's ``reconcile_at``) and beat's dispatchers enqueue it within a minute.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)

POLL = "payments.poll_payment"
RECONCILE = "payments.reconcile_payment"


def enqueue(task_name: str, *args, countdown: int | None = None) -> None:
    def send() -> None:
        current_app.tasks[task_name].apply_async(args=list(args), countdown=countdown)

    transaction.on_commit(send, robust=True)


def enqueue_now(task_name: str, *args) -> None:
    """Enqueue without waiting for a commit (the caller holds no transaction of its own: beat's dispatchers)."""
    current_app.tasks[task_name].apply_async(args=list(args))
