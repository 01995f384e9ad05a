"""The mails of signing up and in, sent by the worker: the page that asked for one answers at once, whether a
mail went out or not, and however long the mail server takes (no timing oracle)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.core.mail import EmailMultiAlternatives

logger = logging.getLogger(__name__)


@shared_task(
    name="users.send_account_mail",
    ignore_result=True,
    autoretry_for=(OSError,),
    retry_backoff=30,
    retry_kwargs={"max_retries": 5},
)
def send_account_mail(message: dict) -> None:
    """Send one rendered mail (``users.adapter.AccountAdapter.send_mail``): subject, body, from, to, and
    optionally an HTML alternative. A mail server that does not answer is retried with backoff."""
    mail = EmailMultiAlternatives(message["subject"], message["body"], message["from_email"], message["to"])
    for content, mimetype in message.get("alternatives", []):
        mail.attach_alternative(content, mimetype)
    mail.send()
    logger.info("account mail sent", extra={"template": message.get("template", "")})
