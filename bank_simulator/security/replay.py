"""Replay refusal: a Signature value the bank has already accepted is refused while its Date is still valid.

A signed request passes the Date check for ``BANK_SIM_DATE_TOLERANCE`` seconds on either side of its Date, so
a captured request could be sent again within that window. RSA PKCS#1 v1.5 signatures are deterministic: a
replay carries the same signature bytes. The bank keeps the SHA-256 of every accepted signature in its
database (``SeenSignature``), which every gunicorn process (and host) shares, until the signature's Date leaves
the window; the primary key refuses the second insert, so of two identical requests arriving at once exactly
one passes. Each process deletes the expired rows at most every ``PRUNE_INTERVAL`` seconds, so the table holds
at most the signatures of the last two windows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import time

from django.db import IntegrityError, connection, transaction

from bank_simulator.models import SeenSignature

PRUNE_INTERVAL = 10.0  # seconds between the deletions of expired rows, per process

_lock = threading.Lock()
_next_prune = 0.0


class ReplayedSignature(Exception):
    """This signature was accepted before and its Date is still within the window."""


def remember(*, signature: bytes, expires_at: dt.datetime, real_now: dt.datetime) -> None:
    """Keep ``signature`` until ``expires_at``; ReplayedSignature when it is kept already."""
    _prune_if_due(real_now)
    row = SeenSignature(digest=hashlib.sha256(signature).hexdigest(), expires_at=expires_at)
    try:
        if connection.in_atomic_block:  # a savepoint keeps the caller's transaction usable
            with transaction.atomic():
                row.save(force_insert=True)
        else:  # one INSERT in autocommit: SQLite's write lock is held for that statement only
            row.save(force_insert=True)
    except IntegrityError:
        raise ReplayedSignature from None


def prune(*, real_now: dt.datetime) -> int:
    """Delete the signatures whose Date window has passed; returns how many."""
    deleted, _ = SeenSignature.objects.filter(expires_at__lt=real_now).delete()
    return deleted


def _prune_if_due(real_now: dt.datetime) -> None:
    global _next_prune
    now = time.monotonic()
    with _lock:
        if now < _next_prune:
            return
        _next_prune = now + PRUNE_INTERVAL
    prune(real_now=real_now)
