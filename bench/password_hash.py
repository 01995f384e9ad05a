"""The time of one password hash: the portal's Argon2id (users/hashers.py: OWASP's m=19 MiB, t=2, p=1) against
Django's own Argon2 hasher (m=100 MiB, t=2, p=8), the baseline, in the same run.

``python -m bench.password_hash``: ROUNDS rounds, each hashing the same password once with each hasher (a fresh
salt each time, as a sign-up or a rewritten hash gets), alternating which goes first, so that both meet the same
load of a shared machine; the figures are the medians. Every sign-in verifies one such hash (and the hash of an
older hasher or of Django's parameters is rewritten with the portal's at that sign-in), so this is the hashing part
of bench.load's sign-in latency (whose goal, a p95 of at most 1 s, is the issue's); this figure has no goal of
its own.
"""

from __future__ import annotations

import os
import statistics
import time

from bench.report import emit

ROUNDS = 20
PASSWORD = "load test password 7"  # noqa: S105 - bench.load's password; nothing is stored


def _seconds(hasher) -> float:
    salt = hasher.salt()
    started = time.perf_counter()
    hasher.encode(PASSWORD, salt)
    return time.perf_counter() - started


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")
    import django

    django.setup()
    from django.contrib.auth.hashers import Argon2PasswordHasher

    from users.hashers import Argon2idPasswordHasher

    portal, django_default = Argon2idPasswordHasher(), Argon2PasswordHasher()
    for hasher in (portal, django_default):  # loads argon2-cffi and touches the memory once
        _seconds(hasher)
    times: dict[object, list[float]] = {portal: [], django_default: []}
    for round_number in range(ROUNDS):
        order = (portal, django_default) if round_number % 2 else (django_default, portal)
        for hasher in order:
            times[hasher].append(_seconds(hasher))
    ours, baseline = statistics.median(times[portal]), statistics.median(times[django_default])
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores; load average {load} (1, 5, 15 min)")
    print(
        f"one hash, median of {ROUNDS}: the portal's Argon2id (m=19456 KiB, t=2, p=1) {ours * 1000:.1f} ms; "
        f"Django's Argon2 (m=102400 KiB, t=2, p=8) {baseline * 1000:.1f} ms; ratio {ours / baseline:.3f}"
    )
    emit(
        "password hash (Argon2id, OWASP parameters)",
        ours * 1000,
        "ms",
        better="lower",
        baseline=baseline * 1000,
    )


if __name__ == "__main__":
    main()
