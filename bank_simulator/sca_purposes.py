"""What an SCA approves, one handler per ``ScaPurpose``.

The SCA screens are the same for every purpose (identity number, then context and agreement); the last screen
and what "approve" does belong to the purpose: its handler, registered in PURPOSES at start-up. The payments
register a PAYMENT handler that shows the amount, currency, creditor name and account (dynamic linking) and
authorises the payment. This module holds only the registry and its types, so the services may read it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Protocol

from django.http import QueryDict

from bank_simulator.models import Consent, PsuIdentity, ScaSession


class PurposeInputError(Exception):
    """The PSU's input on the review screen is not acceptable; shown on the same screen."""


@dataclass(frozen=True)
class Approval:
    psu: PsuIdentity
    consent: Consent | None = None


class PurposeHandler(Protocol):
    title: str  # shown on the screens (translated when shown)
    template: str
    # Dynamic-linking purposes always ask for identification, even within a TPP session's valid hour.
    dynamic_linking: bool

    def review_context(self, session: ScaSession) -> dict[str, Any]: ...

    def approve(self, session: ScaSession, data: QueryDict, now: dt.datetime) -> Approval: ...


#: The handler of each purpose: consents and users' identification (bank_simulator/sca_handlers.py) registered by
#: the sandbox bank's AppConfig.ready(), payments (bank_simulator/pis/sca.py) by the payments app's.
PURPOSES: dict[str, PurposeHandler] = {}
