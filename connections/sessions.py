"""The user's TPP-Session-ID (bank-api-spec section 3): one per user for the bank's hour, given to every SCA
that starts in it, and the PSU-ID of the SCA that started the hour (sent with the next SCA, so that the bank
may let that SCA hold)."""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from connections.models import TPP_SESSION_LIFETIME, TPP_SESSION_MARGIN, TppSession


def tpp_session_for(*, user: Any, now: datetime | None = None) -> TppSession:
    """The user's TPP-Session-ID for an SCA starting now: the same one for the bank's hour (from the first SCA
    completed in it, or from its first use when none was), then a new one. One per user, so that a new one never
    ends the hour of another of the user's sessions at the bank before its time (spec section 3).

    An SCA starting within ``TPP_SESSION_MARGIN`` of the hour's end gets a new one: the bank may let the old
    session's SCA hold for it, and its callback, up to 10 minutes later, is confirmed in the session it started
    in (``connections.sca.sca_return_accept``), which must still be valid at the bank then."""
    now = now or timezone.now()
    try:  # the common case: one read, no lock (one row per user: no ordering needed)
        current = TppSession.objects.get(user=user)
    except TppSession.DoesNotExist:
        current = None
    if current is not None and current.expires_at > now + TPP_SESSION_MARGIN:
        return current
    with transaction.atomic():
        session, created = TppSession.objects.select_for_update().get_or_create(
            user=user, defaults={"session_id": secrets.token_urlsafe(32), "started_at": now}
        )
        if not created and session.expires_at <= now + TPP_SESSION_MARGIN:
            session.session_id = secrets.token_urlsafe(32)
            session.started_at, session.sca_at, session.psu_id = now, None, ""
            session.save(update_fields=["session_id", "started_at", "sca_at", "psu_id"])
    return session


def tpp_session_sca_completed(*, user: Any, tpp_session_id: str, psu_id: str, now: datetime) -> None:
    """An SCA with ``tpp_session_id`` came back confirmed: the first one in the user's current TPP session starts
    its hour (later ones do not prolong it: the bank's hour may not be prolonged by an SCA it skipped)."""
    session = TppSession.objects.filter(user=user, sca_at__isnull=True).first()
    if session is None or not hmac.compare_digest(session.session_id, tpp_session_id):
        return  # the hour runs already, or the session was replaced meanwhile
    # started_at names this session: one replaced meanwhile (same row, new id) is not given this SCA.
    TppSession.objects.filter(pk=session.pk, sca_at__isnull=True, started_at=session.started_at).update(
        sca_at=now, psu_id=psu_id
    )


def tpp_session_known_psu(*, user: Any, now: datetime | None = None) -> str | None:
    """The PSU-ID of the SCA that started the user's TPP session, while its hour runs: sent when the user starts
    another SCA, so that the bank can let that SCA hold (never for a payment, which the bank always asks for)."""
    now = now or timezone.now()
    session = TppSession.objects.filter(user=user, sca_at__gt=now - TPP_SESSION_LIFETIME).first()
    return (session.psu_id or None) if session is not None else None
