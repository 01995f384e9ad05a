"""Reads about bank connections and accounts (the database), and the one bank read that lists agreements."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import F, Prefetch, QuerySet

from accounts.models import BalanceSnapshot, BankAccount, BankConnection, ConnectionEvent, ConnectionState
from accounts.security import get_owned_or_404
from tpp_portal.bank import bank_audit_context, bank_client
from xs2a import models as bank_models
from xs2a.psu import PsuContext


def connections_for(*, user: Any) -> QuerySet[BankConnection]:
    """The connections page: the user's connections that are not disconnected, with their consented accounts."""
    return (
        BankConnection.objects.filter(user=user)
        .exclude(state=ConnectionState.DISCONNECTED)
        .prefetch_related(
            Prefetch("accounts", queryset=BankAccount.objects.filter(consented=True), to_attr="consented_accounts")
        )
        .order_by("created_at", "pk")
    )


def connection_for(*, user: Any, pk: Any) -> BankConnection:
    """One of the user's connections (404 for anyone else's, or a disconnected one)."""
    return get_owned_or_404(BankConnection.objects.exclude(state=ConnectionState.DISCONNECTED), user=user, pk=pk)


def connection_events(*, connection: BankConnection) -> QuerySet[ConnectionEvent]:
    return connection.events.select_related("actor").order_by("at", "pk")


def accounts_overview(*, user: Any) -> QuerySet[BankAccount]:
    """The accounts overview: every consented account of the user's live connections with the balances of its
    latest fetch (a constant number of queries, whatever the number of accounts)."""
    latest = BalanceSnapshot.objects.filter(fetched_at=F("account__balances_refreshed_at")).order_by(
        "balance_type"
    )
    return (
        BankAccount.objects.filter(connection__user=user, consented=True)
        .exclude(connection__state=ConnectionState.DISCONNECTED)
        .select_related("connection")
        .prefetch_related(Prefetch("balance_snapshots", queryset=latest, to_attr="latest_balances"))
        .order_by("connection__created_at", "connection_id", "kind", "name", "pk")
    )


def bank_agreements_for(
    *, connection: BankConnection, presence: PsuContext, user: Any
) -> list[bank_models.Agreement]:
    """The corporate agreements the connection's PSU may act for (GET /v1/agreements, PSU present).

    Raises ``xs2a.errors.Xs2aError`` when the bank refuses or fails.
    """
    psu = dataclasses.replace(presence, psu_id=connection.psu_id)
    with bank_audit_context(user=user, obj=connection):
        return bank_client().agreements(psu=psu)
