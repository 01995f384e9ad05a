"""The authenticator app of a staff user in the browser tests and the end-to-end suite: its secret and its codes,
computed with allauth.mfa's own TOTP functions (the ones the portal checks codes with), so that staff sign in
with a real second factor."""

from __future__ import annotations

import threading
import time

_used_steps: dict[str, int] = {}  # secret -> the last time step whose code was given out
_lock = threading.Lock()


def new_totp_secret() -> str:
    """A fresh authenticator secret, as allauth.mfa makes them."""
    from allauth.mfa.totp.internal.auth import generate_totp_secret

    return generate_totp_secret()


def totp_code(secret: str) -> str:
    """The code an authenticator app with ``secret`` shows now.

    The portal takes each code once (allauth.mfa refuses a code seen within its period), so a second code for the
    same secret within one period waits for the next period, as a person waits for the app's next code."""
    from allauth.mfa import app_settings
    from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value

    with _lock:
        step = int(time.time()) // app_settings.TOTP_PERIOD
        if _used_steps.get(secret, -1) >= step:
            step = _used_steps[secret] + 1
            time.sleep(max(0.0, step * app_settings.TOTP_PERIOD - time.time()) + 0.2)
        _used_steps[secret] = step
        return format_hotp_value(hotp_value(secret, step))
