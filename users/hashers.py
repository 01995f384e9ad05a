"""The password hasher: Argon2id with the parameters of OWASP's Password Storage Cheat Sheet.

Django's own Argon2 hasher takes 100 MiB and 8 lanes for every hash: on a web host of 2 cores, a few sign-ins at
once keep both cores busy for seconds and queue every other request behind them. OWASP's Password Storage Cheat
Sheet (section "Argon2id", https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html)
gives equivalent settings for Argon2id, of which this is the first: "a minimum configuration of 19 MiB of memory,
an iteration count of 2, and 1 degree of parallelism" (m=19456 KiB, t=2, p=1).

The algorithm keeps Django's name ("argon2"), so a hash made with Django's parameters is read by this hasher and,
its parameters being other than these, rewritten with them at the next successful sign-in (Django's
``must_update``), as a hash of an older hasher (PBKDF2 ...) is.
"""

from __future__ import annotations

from django.contrib.auth.hashers import Argon2PasswordHasher


class Argon2idPasswordHasher(Argon2PasswordHasher):
    """Argon2id (Django's ``params()`` makes type ID), m=19 MiB, t=2, p=1 (OWASP, see the module's doc)."""

    memory_cost = 19 * 1024  # KiB
    time_cost = 2
    parallelism = 1
