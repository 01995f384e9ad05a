"""The small value types that the connections app hands to the apps plugged into it (connections/plugins.py):
what the bank answered when a connection was used (``FetchOutcome``), and a successful redirect back from SCA
once every check has passed (``ScaReturn``). A module of their own, so that the services and the plugin
registry both import them and neither imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from connections.models import BankConnection, ScaState
from xs2a.psu import PsuContext


class FetchProblem:
    NEEDS_RECONNECT = "needs_reconnect"  # 401 with scaRedirect, or a consent error
    LIMIT = "limit"  # 429 / ACCESS_EXCEEDED
    UNAVAILABLE = "unavailable"  # any other bank failure (network, 5xx, unexpected answer)
    NO_ACCOUNTS = "no_accounts"  # the bank answered with the consent, and it covers no account
    INCOMPLETE = "incomplete"  # connected, but part of what is read with the new consent could not be read


@dataclass(frozen=True)
class FetchOutcome:
    """What the bank answered when a connection was used (accounts read, balances refreshed ...)."""

    connection: BankConnection
    accounts: int = 0
    balances: int = 0
    problem: str | None = None
    retry_at: datetime | None = None
    request_id: str | None = None
    message: str = ""  # the reader's own words for the user about the problem (INCOMPLETE), translated

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class ScaReturn:
    """A successful redirect back from SCA after the checks every purpose shares: its state consumed (single use,
    this user's, this browser session's), the PSU-ID confirmed by the bank in the SCA's session and bound to this
    user and to nobody else, and a PSU-Corporate-ID only when the bank listed it among the PSU's agreements (with
    the agreement's name)."""

    state: ScaState
    user: Any
    psu_id: str
    context: str
    corporate_id: str | None
    agreement_name: str
    presence: PsuContext
    at: datetime
