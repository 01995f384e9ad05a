"""Pieces shared by the API views."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings

from bank_simulator.models import ScaSession


def sca_url(session: ScaSession) -> str:
    query = {"state": session.token}
    if session.requested_context:
        query["context"] = session.requested_context
    return f"{settings.BANK_SIM_PUBLIC_URL}/sca/authorize?{urlencode(query)}"


def sca_redirect_link(session: ScaSession) -> dict[str, Any]:
    return {"href": sca_url(session), "verbs": ["GET"]}
