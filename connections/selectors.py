"""Reads about bank connections (the database), and the one bank read that lists a PSU's agreements."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from connections.models import (
    CONSENT_REMINDER_DAYS,
    BankConnection,
    ConnectionAccess,
    ConnectionState,
    PsuContextChoice,
)
from core.bank import bank_audit_context, bank_client
from users.security import get_owned_or_404
from xs2a import models as bank_models
from xs2a.psu import PsuContext


def connections_for(*, user: Any) -> list[BankConnection]:
    """The connections page: the user's connections that are not disconnected, each with ``consented_accounts``
    (the accounts the bank's latest consent covers; the accounts app keeps them on the relation "accounts")."""
    connections = list(
        BankConnection.objects.filter(user=user)
        .exclude(state=ConnectionState.DISCONNECTED)
        .prefetch_related("accounts")
        .order_by("created_at", "pk")
    )
    for connection in connections:
        connection.consented_accounts = [a for a in connection.accounts.all() if a.consented]
    return connections


class ConnectionNeed:
    """Why a connection needs its user (the home page puts these first)."""

    RECONNECT = "reconnect"  # the bank refused the consent, or asks for it again
    EXPIRED = "expired"  # the consent's end has passed
    EXPIRING = "expiring"  # the consent ends within the reminders' horizon (CONSENT_REMINDER_DAYS)


@dataclasses.dataclass(frozen=True)
class ConnectionAttention:
    connection: BankConnection
    need: str  # a ConnectionNeed
    days_left: int = 0  # EXPIRING: whole days until the consent ends


@dataclasses.dataclass(frozen=True)
class ConnectionsAtAGlance:
    """The home page's view of the user's connections: every one that is not disconnected, and those that need
    the user, most urgent first."""

    connections: list[BankConnection]
    needing_user: list[ConnectionAttention]


def connections_at_a_glance(*, user: Any, now: datetime | None = None) -> ConnectionsAtAGlance:
    """The user's live connections and which of them need the user (one query): a refused or renewed-asked
    consent (NEEDS_RECONNECT), a consent past its end, or one ending within the reminders' horizon."""
    now = now or timezone.now()
    horizon = now + timedelta(days=max(CONSENT_REMINDER_DAYS))
    connections = list(
        BankConnection.objects.filter(user=user)
        .exclude(state=ConnectionState.DISCONNECTED)
        .order_by("created_at", "pk")
    )
    needing = []
    for connection in connections:
        until = connection.consent_valid_until
        if connection.state == ConnectionState.NEEDS_RECONNECT:
            needing.append(ConnectionAttention(connection, ConnectionNeed.RECONNECT))
        elif connection.access != ConnectionAccess.ACCOUNTS or until is None:
            continue
        elif until <= now:
            needing.append(ConnectionAttention(connection, ConnectionNeed.EXPIRED))
        elif until <= horizon:
            days = (until - now).days
            needing.append(ConnectionAttention(connection, ConnectionNeed.EXPIRING, days_left=days))
    order = [ConnectionNeed.RECONNECT, ConnectionNeed.EXPIRED, ConnectionNeed.EXPIRING]
    needing.sort(key=lambda a: (order.index(a.need), a.days_left))
    return ConnectionsAtAGlance(connections=connections, needing_user=needing)


def connection_for(*, user: Any, pk: Any) -> BankConnection:
    """One of the user's connections (404 for anyone else's, or a disconnected one)."""
    return get_owned_or_404(BankConnection.objects.exclude(state=ConnectionState.DISCONNECTED), user=user, pk=pk)


def bank_agreements_for(
    *, connection: BankConnection, presence: PsuContext, user: Any
) -> list[bank_models.Agreement]:
    """The corporate agreements the connection's PSU may act for (GET /v1/agreements, PSU present).

    Raises ``xs2a.errors.Xs2aError`` when the bank refuses or fails.
    """
    psu = dataclasses.replace(presence, psu_id=connection.psu_id)
    with bank_audit_context(user=user, obj=connection):
        return bank_client().consents.agreements(psu=psu)


def connection_for_agreement(*, user: Any, corporate_id_hash: str) -> BankConnection | None:
    """The user's own active connection to the corporate agreement with this PSU-Corporate-ID hash (a co-signer
    approves a company's payment with it), the newest SCA first."""
    return (
        BankConnection.objects.filter(
            user=user, psu_corporate_id_hash=corporate_id_hash, state=ConnectionState.ACTIVE
        )
        .exclude(psu_id_hash="")
        .order_by("-sca_at", "-pk")
        .first()
    )


def agreement_users(*, psu_corporate_id_hash: str) -> list[int]:
    """The users with an active corporate connection to the agreement of ``psu_corporate_id_hash`` (the company's
    signers in the portal; the inverse of :func:`confirmed_agreement_hashes`)."""
    if not psu_corporate_id_hash:
        return []
    return sorted(
        set(
            BankConnection.objects.filter(
                context=PsuContextChoice.CORPORATE,
                state=ConnectionState.ACTIVE,
                psu_corporate_id_hash=psu_corporate_id_hash,
            ).values_list("user_id", flat=True)
        )
    )


def confirmed_agreement_hashes(*, user: Any) -> list[str]:
    """The PSU-Corporate-ID hashes of the user's active corporate connections: the agreements the bank confirmed
    for this user (it listed them with the user's own PSU-ID, and answered with the connection)."""
    return list(
        BankConnection.objects.filter(user=user, context=PsuContextChoice.CORPORATE, state=ConnectionState.ACTIVE)
        .exclude(psu_corporate_id_hash="")
        .values_list("psu_corporate_id_hash", flat=True)
        .distinct()
    )
