"""The one beat schedule of the product: which task runs when (schedules live in code; run exactly one beat
process). The settings hand it to Celery as CELERY_BEAT_SCHEDULE; the tasks are named, not imported."""

from celery.schedules import crontab

BEAT_SCHEDULE = {
    "refresh-exchange-rates": {
        "task": "payments.refresh_exchange_rates",
        # Times in UTC (CELERY_TIMEZONE). Norges Bank publishes about 16:00 Oslo time on business days, so
        # 15:30 UTC is after publication all year; the morning run fills a missed day.
        "schedule": crontab(minute=30, hour="7,15", day_of_week="mon-fri"),
    },
    "send-consent-reminders": {
        "task": "connections.send_consent_reminders",
        # Mails 14, 7 and 1 days before a consent expires; each reminder is sent once per consent.
        "schedule": crontab(minute=15, hour=6),
    },
    "prune-bank-calls": {
        "task": "tpp_portal.prune_bank_calls",
        # Deletes audit rows of bank calls older than BANK_CALL_RETENTION_DAYS, in batches, at a quiet hour.
        "schedule": crontab(minute=40, hour=2),
    },
    "dispatch-payment-status-polls": {
        "task": "payments.dispatch_due_polls",
        # Enqueues the payments whose next status poll (Payment.next_poll_at) is due: polling resumes after a
        # restart, and a poll lost with a killed worker is enqueued again.
        "schedule": 60.0,
    },
    "dispatch-payment-reconciliations": {
        "task": "payments.dispatch_due_reconciliations",
        # Enqueues the initiations whose answer was lost (OUTCOME_UNKNOWN) and whose next check
        # (Payment.reconcile_at) is due: reconciliation resumes after a restart.
        "schedule": 60.0,
    },
    "find-unconfirmed-payments": {
        "task": "payments.find_unconfirmed_payments",
        # Payments the bank did not confirm (UNCONFIRMED) are looked for in their debtor accounts' transactions,
        # as the account refreshes store them: found, the user is told the bank has the payment.
        "schedule": 300.0,
    },
    "dispatch-payment-mails": {
        "task": "payments.dispatch_payment_mails",
        # Enqueues the payment mails that wait (payments/services/notifications.py): after a lost enqueue, a
        # refused mail or the hour's limit per user.
        "schedule": 300.0,
    },
    "plan-account-refreshes": {
        "task": "accounts.plan_refreshes",
        # Enqueues the unattended refreshes of accounts whose next_refresh_at is due (every 6 hours + jitter per
        # account, so the bank's 4 unattended calls per 24 hours hold; the ledger RefreshCall enforces it).
        "schedule": 300.0,
    },
    "prune-refresh-calls": {
        "task": "accounts.prune_refresh_calls",
        # Deletes the ledger's rows of unattended calls older than its 24-hour window, in batches: the table
        # holds about one day of calls (8 rows per account) whatever the portal's age.
        "schedule": crontab(minute=50),
    },
    "expire-consents": {
        "task": "connections.expire_consents",
        # Connections whose consent passed consent_valid_until become needs_reconnect.
        "schedule": crontab(minute=5),
    },
    "check-certificates": {
        "task": "tpp_portal.check_certificates",
        # The QSealC, the bank's seal and the bank's TLS certificate (a TLS handshake): days left, logged and kept
        # for the dashboard and the metrics. Also run when a worker starts.
        "schedule": crontab(minute=20, hour=5),
    },
}
