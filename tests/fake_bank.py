"""An in-process stand-in for the bank's account-information endpoints, for refresh and sync tests.

It answers the calls accounts/refresh.py and accounts/sync.py make (``request`` for transaction pages,
``balances``/``card_account_balances``) with real ``BankResponse`` objects and real error classes, and keeps the
bank's rules that matter here: pages with ``next`` links (limit/offset), the count of requests without
PSU-IP-Address per account and kind in a rolling 24 hours with 429 ACCESS_EXCEEDED beyond 4, and the 90-day
limit for unattended reads. Tests change ``booked``/``pending``, or set ``fail_with`` to an HTTP status.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from xs2a import models as bank_models
from xs2a.client import BankResponse
from xs2a.errors import error_from_response
from xs2a.psu import PsuContext

LIMIT = 4
WINDOW = timedelta(hours=24)


def booked(tid: str, amount: str, day: date, text: str = "Rema 1000", **extra: Any) -> dict[str, Any]:
    record = {
        "transactionId": tid,
        "bookingDate": day.isoformat(),
        "valueDate": day.isoformat(),
        "transactionAmount": {"amount": amount, "currency": "NOK"},
        "remittanceInformationUnstructured": text,
    }
    if Decimal(amount) < 0:
        record["creditorName"] = text
        record["creditorAccount"] = {"iban": "NO9386011117947"}
    else:
        record["debtorName"] = text
    record.update(extra)
    return record


def pending(tid: str | None, amount: str, day: date, text: str = "Rema 1000") -> dict[str, Any]:
    record = booked(tid or "", amount, day, text)
    if tid is None:
        del record["transactionId"]
    return record


class FakeBank:
    def __init__(self, *, now=None) -> None:
        self.booked: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []
        self.fail_with: int | None = None  # every request answers this status
        self.fail_on_page: int | None = None  # only this page (1-based offset page) fails with 503
        self.retry_after: str | None = None
        self.now = now or (lambda: datetime.now(UTC))
        self.unattended: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        self.requests: list[dict[str, Any]] = []
        self.too_many = 0  # 429 answers given
        self._lock = threading.Lock()

    # -- helpers --
    def _response(self, status: int, body: Any, url: str, headers: dict[str, str] | None = None) -> BankResponse:
        return BankResponse(
            status=status,
            headers=headers or {"Content-Type": "application/json"},
            body=json.dumps(body).encode(),
            method="GET",
            url=url,
            endpoint="/v1/accounts/{account_id}/transactions",
            request_id="req-" + str(len(self.requests)),
        )

    def _error(self, status: int, code: str, text: str, url: str, headers=None) -> BankResponse:
        return self._response(
            status, {"tppMessages": [{"category": "ERROR", "code": code, "text": text}]}, url, headers
        )

    def _gate(self, resource: str, kind: str, psu: PsuContext, url: str, path: str) -> BankResponse | None:
        """The bank's checks before the answer; records the request; None when it may be answered."""
        with self._lock:
            self.requests.append({"path": path, "present": psu.present, "kind": kind, "url": url})
            if self.fail_with == 401:
                return self._error(
                    401, "CONSENT_EXPIRED", "The consent expired; send the PSU to scaRedirect.", url
                )
            if self.fail_with is not None:
                headers = {"Retry-After": self.retry_after} if self.retry_after else None
                return self._error(
                    self.fail_with, "ACCESS_EXCEEDED" if self.fail_with == 429 else "INTERNAL", "no", url, headers
                )
            if not psu.present:
                now = self.now()
                recent = [t for t in self.unattended[(resource, kind)] if t > now - WINDOW]
                if len(recent) >= LIMIT:
                    self.too_many += 1
                    return self._error(
                        429,
                        "ACCESS_EXCEEDED",
                        "Without PSU-IP-Address at most 4 requests per account are allowed in 24 hours.",
                        url,
                    )
                self.unattended[(resource, kind)] = [*recent, now]
        return None

    def calls(self, *, present: bool | None = None, kind: str | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if (present is None or r["present"] == present) and (kind is None or r["kind"] == kind)
        )

    # -- the client's interface used by the portal --
    def balances(self, account_id: str, *, psu: PsuContext) -> bank_models.AccountBalances:
        url = f"/v1/accounts/{account_id}/balances"
        refused = self._gate(account_id, "balances", psu, url, url)
        if refused is not None:
            raise error_from_response(
                status=refused.status, body=refused.body, headers=refused.headers, request_id=refused.request_id
            )
        total = sum((Decimal(b["transactionAmount"]["amount"]) for b in self.booked), Decimal("1000.00"))
        return bank_models.AccountBalances.from_json(
            {
                "account": {"iban": "NO9386011117947"},
                "balances": [
                    {"balanceType": "closingBooked", "balanceAmount": {"amount": str(total), "currency": "NOK"}},
                    {
                        "balanceType": "interimAvailable",
                        "balanceAmount": {"amount": str(total), "currency": "NOK"},
                    },
                ],
            }
        )

    card_account_balances = balances

    def request(
        self, method: str, path: str | None = None, *, href=None, query=None, psu=None, **kw
    ) -> BankResponse:
        psu = psu or PsuContext()
        if href is not None:
            parts = urlsplit(href)
            path = parts.path
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query = dict(query or {})
        account_id = path.split("/")[3]
        url = f"{path}?{urlencode(query)}"
        limit = int(query.get("limit", "200"))
        offset = int(query.get("offset", "0"))
        if self.fail_on_page is not None and offset // limit + 1 == self.fail_on_page:
            with self._lock:
                self.requests.append({"path": path, "present": psu.present, "kind": "transactions", "url": url})
            return self._error(503, "SERVICE_UNAVAILABLE", "The bank is busy.", url)
        refused = self._gate(account_id, "transactions", psu, url, path)
        if refused is not None:
            return refused
        date_from = date.fromisoformat(query["dateFrom"]) if "dateFrom" in query else None
        if not psu.present:
            oldest = self.now().date() - timedelta(days=90)
            if date_from and date_from < oldest:
                return self._error(403, "FORBIDDEN", "Transactions older than 90 days need the PSU.", url)
        items = [b for b in self.booked if date_from is None or date.fromisoformat(b["bookingDate"]) >= date_from]
        page = items[offset : offset + limit]
        links: dict[str, Any] = {}
        if offset + limit < len(items):
            links["next"] = {"href": f"{path}?{urlencode({**query, 'limit': limit, 'offset': offset + limit})}"}
        # Like production (spec 4.3 known issue): every pending item on every page.
        body = {
            "account": {"iban": "NO9386011117947"},
            "transactions": {"booked": page, "pending": self.pending, "_links": links},
        }
        return self._response(200, body, url)
