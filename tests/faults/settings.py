"""Settings of the portal processes of the fault tests: the product's own settings with its waiting times
shortened (beat's dispatchers every few seconds, a short poll lease), so that recovery after a fault is seen
within seconds instead of minutes. The behaviour is the same; only the clocks are faster.

``PRODUCT_CLOCK_SKEW_SECONDS`` (fault tests only) moves the clock of the portal's bank client (the Date header
it signs) that many seconds away from real time: the portal's clock off the bank's.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import xs2a.client
from tpp_portal.settings import *  # noqa: F403
from tpp_portal.settings import CELERY_BEAT_SCHEDULE

PAYMENT_POLL_LEASE = timedelta(seconds=6)
# A submission's hold on its payment while it waits for the bank; after it, reconciliation takes the payment
# over. BANK_TIMEOUT is 2 s here, and the bank (behind the tests' proxy) answers in one read, so a call ends
# within about 4 s (connect and read); the portal never takes less than twice BANK_TIMEOUT.
PAYMENT_CALL_LEASE = timedelta(seconds=8)
PAYMENT_POLL_MIN_INTERVAL = timedelta(seconds=2)
CELERY_BEAT_SCHEDULE = {
    name: {**entry, "schedule": 3.0}
    if name in {"dispatch-payment-status-polls", "dispatch-payment-reconciliations"}
    else entry
    for name, entry in CELERY_BEAT_SCHEDULE.items()
}

_skew = timedelta(seconds=float(os.environ.get("PRODUCT_CLOCK_SKEW_SECONDS") or 0))
if _skew:

    class _SkewedDatetime(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz or UTC) + _skew

    xs2a.client.datetime = _SkewedDatetime
