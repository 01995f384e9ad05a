"""The bank client: the portal's one door to the bank (docs/bank-interface.md, spec 4).

``Xs2aClient(config)`` holds one core (``xs2a.core.Requester``: prepare, sign, send, retry, verify, audit, map
errors, over one pooled session) and one service object per resource of the interface::

    client.consents        consent start, /v1/users, agreements
    client.accounts        accounts, balances, transactions (page by page: transaction_pages), details
    client.card_accounts   card accounts, balances, transactions
    client.payments        initiate, start_authorisation, status, get, delete
    client.sandbox         the /v1/sandbox mock-data operations, apart from the production ones

Each operation returns a typed record (``xs2a.models``) or raises an ``xs2a.errors.Xs2aError``. ``request`` is
the low-level door for operator tools and sandbox controls the services do not name: it returns the answer,
whatever its status.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import requests

from xs2a.audit import AuditHook
from xs2a.config import DEFAULT_ACCEPT_FIX, DEFAULT_MAX_RESPONSE_BYTES, ClientConfig, RetryPolicy
from xs2a.core import BankResponse, Requester
from xs2a.psu import PsuContext
from xs2a.services import (
    CROSS_BORDER,
    DOMESTIC,
    AccountsService,
    CardAccountsService,
    ConsentsService,
    PaymentsService,
    SandboxService,
)

__all__ = [
    "CROSS_BORDER",
    "DEFAULT_ACCEPT_FIX",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DOMESTIC",
    "BankResponse",
    "ClientConfig",
    "RetryPolicy",
    "Xs2aClient",
]


class Xs2aClient:
    """The portal's only door to the bank. One instance holds one pooled session; share it, close it at exit.

    ``http_adapter``: a requests transport adapter to use instead of the network for the bank's address (a test
    stand-in for the bank); everything else (signing, retries, audit, errors) runs as in production.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        audit_hook: AuditHook | None = None,
        clock: Callable[[], datetime] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        http_adapter: requests.adapters.BaseAdapter | None = None,
    ) -> None:
        self._requester = Requester(
            config,
            audit_hook=audit_hook,
            clock=clock or (lambda: datetime.now(UTC)),
            sleep=sleep,
            rng=rng,
            http_adapter=http_adapter,
        )
        self.consents = ConsentsService(self._requester)
        self.accounts = AccountsService(self._requester)
        self.card_accounts = CardAccountsService(self._requester)
        self.payments = PaymentsService(self._requester)
        self.sandbox = SandboxService(self._requester)

    @property
    def config(self) -> ClientConfig:
        return self._requester.config

    @property
    def session(self) -> requests.Session:
        return self._requester.session

    def close(self) -> None:
        self._requester.close()

    def __enter__(self) -> Xs2aClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str | None = None,
        *,
        href: str | None = None,
        query: Mapping[str, str] | None = None,
        json_body: Any = None,
        body: bytes | None = None,
        psu: PsuContext | None = None,
        request_id: str | None = None,
        tpp_session_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        endpoint: str | None = None,
        redact: Iterable[str] = (),
    ) -> BankResponse:
        """Send one request (signed, audited, with safe retries) and return the bank's answer, whatever its
        status (``raise_for_error``/``read`` in ``xs2a.core`` turn it into a record or an exception).

        ``path`` is an API path (``/v1/...``) below the base address, or ``href`` a link from an answer.
        ``redact``: further personal values sent in the body that the bank may echo in a tppMessage text.
        Raises TransportError when no answer came and the request changed nothing (it never left, or it was a
        GET), OutcomeUnknownError when a request that changes something may have reached the bank without its
        answer, ResponseSignatureError when the answer's signature is missing, does not verify, or does not bind
        it to this request now (with the bank's seal configured; to a request that changes something it is a
        ResponseSignatureOutcomeUnknownError, an OutcomeUnknownError too).
        """
        call = self._requester.prepare(
            method,
            path,
            href=href,
            query=query,
            json_body=json_body,
            body=body,
            psu=psu,
            request_id=request_id,
            tpp_session_id=tpp_session_id,
            headers=headers,
            endpoint=endpoint,
            redact=redact,
        )
        return self._requester.send(call)
