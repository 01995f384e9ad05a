"""The authenticator app of a staff user in the browser tests and the end-to-end suite: its secret and its codes,
computed with allauth.mfa's own TOTP functions (the ones the portal checks codes with), so that staff sign in
with a real second factor."""

from __future__ import annotations

import threading
import time

_used_steps: dict[str, int] = {}  # secret -> the last time step whose code was given out
_lock = threading.Lock()
FRESH_FOR = 10.0  # seconds a code given out stays valid at least: filling it in and sending it take time


def new_totp_secret() -> str:
    """A fresh authenticator secret, as allauth.mfa makes them."""
    from allauth.mfa.totp.internal.auth import generate_totp_secret

    return generate_totp_secret()


def totp_code(secret: str) -> str:
    """The code an authenticator app with ``secret`` shows now, with at least ``FRESH_FOR`` seconds left.

    The portal takes a code only within its own period (allauth.mfa's TOTP_TOLERANCE is 0) and each code once
    (it refuses a code seen within its period). A code given out in the last seconds of its period can reach the
    portal in the next one on a busy machine and be refused; so near a period's end, and for a second code of
    the same secret within one period, this waits for the next period, as a person waits for the app's next
    code."""
    from allauth.mfa import app_settings
    from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value

    period = app_settings.TOTP_PERIOD
    with _lock:
        now = time.time()
        step = int(now) // period
        if (step + 1) * period - now < FRESH_FOR:
            step += 1
        step = max(step, _used_steps.get(secret, -1) + 1)
        if step * period > now:  # the code of a period still to come: wait until it begins
            time.sleep(step * period - time.time() + 0.2)
        _used_steps[secret] = step
        return format_hotp_value(hotp_value(secret, step))
