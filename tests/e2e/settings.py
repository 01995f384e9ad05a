"""Settings of the portal processes of the end-to-end browser suite (tests/e2e): the product's own settings,
with the faster clocks of the fault tests (tests/faults/settings.py: payment polls every few seconds) and

* the account-refresh planner and the consent-expiry task run by beat every few seconds (instead of every five
  minutes and every hour), so that a journey sees the background work within seconds;
* the bank's SCA screens allowed as a form target: the portal's ``BANK_BASE_URL`` is the fault proxy in front of
  the bank, while the bank names its own address (``PRODUCT_BANK_URL``, set by tests/product.py) in scaRedirect,
  and a form that leads there through a redirect must be allowed by ``form-action``, as it is in a deployment
  where both are the same address.

The behaviour is the product's; only the clocks are faster.
"""

from __future__ import annotations

import os
from datetime import timedelta

from tests.faults.settings import *  # noqa: F403
from tests.faults.settings import CELERY_BEAT_SCHEDULE, CONTENT_SECURITY_POLICY

_FAST = {"plan-account-refreshes", "expire-consents"}
CELERY_BEAT_SCHEDULE = {
    name: {**entry, "schedule": 3.0} if name in _FAST else entry for name, entry in CELERY_BEAT_SCHEDULE.items()
}

_bank = os.environ["PRODUCT_BANK_URL"]
CONTENT_SECURITY_POLICY = {
    **CONTENT_SECURITY_POLICY,
    "DIRECTIVES": {
        **CONTENT_SECURITY_POLICY["DIRECTIVES"],
        "form-action": [*CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"], _bank],
    },
}

# Payment status (added for tests/e2e/test_payment_journeys.py): the bank's batches run when a journey asks (its
# sandbox control), not at the five daily slots, so the portal polls with its backoff from 2 s, at most every
# 5 s, instead of waiting for the next slot of the real day (BANK_BATCH_TIMES).
BANK_BATCH_TIMES = ()
PAYMENT_POLL_MAX_INTERVAL = timedelta(seconds=5)
