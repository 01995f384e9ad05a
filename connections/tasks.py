"""Background work of bank connections. Tasks stay thin: they call a service."""

from __future__ import annotations

from celery import shared_task

from connections.services import consent_reminders_send, consents_expire


@shared_task(name="connections.send_consent_reminders", ignore_result=True)
def send_consent_reminders() -> int:
    """Mail reminders 14, 7 and 1 days before consents expire (run daily by beat; idempotent, so a second
    delivery or a second run sends nothing twice)."""
    return consent_reminders_send()


@shared_task(name="connections.expire_consents", ignore_result=True)
def expire_consents() -> int:
    """Mark connections whose consent expired as needing a reconnect (beat, hourly; idempotent)."""
    return consents_expire()
