"""The domain errors of bank connections: raised by the SCA (connections/sca.py) and the connections
(connections/services.py), caught by the views of every app that starts an SCA."""

from __future__ import annotations


class ConnectionServiceError(Exception):
    """Base of the domain errors of the connections app."""


class IllegalTransition(ConnectionServiceError):
    """The connection cannot move to that state (from its current one, or it changed meanwhile)."""


class ScaStateRejected(ConnectionServiceError):
    """The callback's tpp-session-id is unknown, foreign, used or expired. ``reason`` says which (for logs and
    tests); the page shown does not tell a stranger whether a state exists."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IdentityMismatch(ConnectionServiceError):
    """The SCA was done as another bank user (or agreement) than the one expected (reconnect, a co-signer)."""


class IdentityRefused(ConnectionServiceError):
    """The identity the redirect claims is not believed: the PSU-ID is another portal user's, the bank does not
    confirm it in the SCA's session, or the bank does not list the PSU-Corporate-ID among the PSU's agreements.
    Recorded in ``IdentityRefusal``; ``reason`` is its reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IdentityUnconfirmed(ConnectionServiceError):
    """The bank could not be asked to confirm the identity (it failed or did not answer); nothing is stored."""


class BankStartFailed(ConnectionServiceError):
    """The bank did not give a usable scaRedirect link."""


class AppApprovalNotOffered(BankStartFailed):
    """Approval in the bank's app was asked for (TPP-Redirect-Preferred: false) and the bank answered without a
    scaRedirect. A connection cannot be made that way: the PSU-ID only ever comes back in the redirect."""
