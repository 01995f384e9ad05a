"""What other apps plug into the connections app, registered in their ``AppConfig.ready()``.

- **SCA purposes.** The one TPP-Redirect-URI callback (connections.views.callback) consumes the SCA state,
  checks the identity the redirect claims against the bank, and hands the result to the handler registered for
  the state's purpose: this app registers its own (connect, reconnect, agreement, users), payments registers
  "payment". A failure redirect (which names no state) goes to the purpose of the browser session's open state.
- **A granted consent.** When the PSU has consented (a connection established or renewed for account
  information), every registered reader is called while the PSU is present (accounts reads the accounts,
  balances and transactions). Its outcome says what the bank answered.
- **An ended connection.** When a user disconnects, every registered cleaner removes what it kept for the
  connection (accounts removes its accounts, balances and transactions).

An app never writes another app's rows: these are the calls by which the other apps do their part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

    from connections.models import BankConnection, ScaState
    from connections.outcomes import FetchOutcome, ScaReturn
    from xs2a.psu import PsuContext


@dataclass(frozen=True)
class Purpose:
    """The handlers of one SCA purpose.

    ``accept(request, sca_return)`` answers a successful redirect whose state was consumed and whose identity the
    bank confirmed. ``failed(request, state, failure)`` answers a failure redirect for the session's open state of
    this purpose; the state is NOT spent (a failure redirect carries no session id, so anyone can forge one): the
    handler reads the real outcome from the bank and shows that.
    """

    name: str
    accept: Callable[[HttpRequest, ScaReturn], HttpResponse]
    failed: Callable[[HttpRequest, ScaState, dict[str, str]], HttpResponse]
    #: The purpose in words, as staff read it in the admin (a lazy translation); the name where none is given.
    label: Any = None


_purposes: dict[str, Purpose] = {}


def register_purpose(
    name: str, *, accept: Callable[..., Any], failed: Callable[..., Any], label: Any = None
) -> None:
    if name in _purposes and _purposes[name] != Purpose(name, accept, failed, label):
        raise RuntimeError(f"the SCA purpose {name!r} is registered twice")
    _purposes[name] = Purpose(name, accept, failed, label)


def purpose_label(name: str) -> str:
    """The words for the purpose ``name`` in the active language; the name itself when it has none."""
    registered = _purposes.get(name)
    return str(registered.label) if registered is not None and registered.label is not None else name


def purpose(name: str) -> Purpose:
    """The handlers of ``name``; LookupError for a purpose nobody registered."""
    try:
        return _purposes[name]
    except KeyError:
        raise LookupError(f"no handler is registered for the SCA purpose {name!r}") from None


def is_registered(name: str) -> bool:
    return name in _purposes


ConsentReader = Callable[..., "FetchOutcome"]
_consent_readers: list[ConsentReader] = []


def on_consent_granted(reader: ConsentReader) -> None:
    """``reader(*, connection, presence, actor, tpp_session_id) -> FetchOutcome`` runs after each consent."""
    if reader not in _consent_readers:
        _consent_readers.append(reader)


def consent_granted(
    *, connection: BankConnection, presence: PsuContext, actor: Any, tpp_session_id: str | None
) -> list[FetchOutcome]:
    return [
        reader(connection=connection, presence=presence, actor=actor, tpp_session_id=tpp_session_id)
        for reader in _consent_readers
    ]


ConnectionCleaner = Callable[..., None]
_connection_cleaners: list[ConnectionCleaner] = []


def on_connection_ended(cleaner: ConnectionCleaner) -> None:
    """``cleaner(*, connection)`` runs inside the transaction that disconnects ``connection``."""
    if cleaner not in _connection_cleaners:
        _connection_cleaners.append(cleaner)


def connection_ended(*, connection: BankConnection) -> None:
    for cleaner in _connection_cleaners:
        cleaner(connection=connection)
