"""The id of the request or task being served, for logs and for the X-Request-ID response header."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

current_request_id: ContextVar[str] = ContextVar("current_request_id", default="-")

# An inbound X-Request-ID is kept only when it looks like an id (a proxy's UUID, say), never arbitrary text.
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")


def choose_request_id(inbound: str | None) -> str:
    if inbound and _ACCEPTABLE.match(inbound):
        return inbound
    return str(uuid.uuid4())
