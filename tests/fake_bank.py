"""An in-process stand-in for the bank's account-information endpoints, for refresh and sync tests.

It is a requests transport adapter behind a real ``Xs2aClient`` (``FakeBank.client``; ``fake.accounts`` and
``fake.card_accounts`` are that client's services, so the fake can stand in wherever the portal takes a bank
client): every call is prepared, signed, sent, audited (into BankCall, as the portal's client does), read and
mapped to its error by the client's own code, and only the HTTP exchange is answered here. It keeps the bank's
rules that matter: pages of ``page_size`` items (the bank's default, 200) with ``next`` links (limit/offset), the
count of requests without PSU-IP-Address per account and kind in a rolling 24 hours with 429 ACCESS_EXCEEDED
beyond 4, and the 90-day limit for unattended reads. Tests change ``booked``/``pending``, ``page_size``, or set
``fail_with`` to an HTTP status. A booked transaction's details (``GET .../transactions/{transactionId}``) are
its list record with the fields of ``details[transactionId]`` added (what the bank gives only there).
"""

from __future__ import annotations

import functools
import io
import json
import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from devtools import pki
from xs2a.client import ClientConfig, RetryPolicy, Xs2aClient

LIMIT = 4
WINDOW = timedelta(hours=24)
BASE_URL = "https://bank.test"
DEFAULT_PAGE_SIZE = 200  # the bank's (spec 4.3)


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


@functools.cache
def _credentials() -> pki.Issued:
    return pki.issue_qseal(pki.issue_ca())


def _error_body(code: str, text: str) -> dict[str, Any]:
    return {"tppMessages": [{"category": "ERROR", "code": code, "text": text}]}


class FakeBank(BaseAdapter):
    def __init__(self, *, now=None) -> None:
        super().__init__()
        self.booked: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []
        self.details: dict[str, dict[str, Any]] = {}  # transactionId: the fields only the details answer has
        self.page_size = DEFAULT_PAGE_SIZE
        self.balance_fields: dict[str, Any] = {}  # added to every balance (odd optional fields)
        self.fail_with: int | None = None  # every request answers this status
        self.fail_on_page: int | None = None  # only this page (1-based offset page) fails with 503
        self.retry_after: str | None = None
        self.now = now or (lambda: datetime.now(UTC))
        self.unattended: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        self.requests: list[dict[str, Any]] = []
        self.too_many = 0  # 429 answers given
        self._lock = threading.Lock()
        self.client = self._client()
        # The client's services: the fake stands in for a bank client.
        self.accounts = self.client.accounts
        self.card_accounts = self.client.card_accounts

    def _client(self) -> Xs2aClient:
        from tpp_portal.bank import record_bank_call

        credentials = _credentials()
        config = ClientConfig(
            base_url=BASE_URL,
            signing_key=credentials.key,
            signing_certificate=credentials.certificate,
            redirect_uri="https://portal.example/bank/callback",
            retry=RetryPolicy(max_attempts=1),
        )
        return Xs2aClient(config, audit_hook=record_bank_call, http_adapter=self)

    # -- the HTTP exchange --
    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        parts = urlsplit(request.url or "")
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        present = "PSU-IP-Address" in request.headers
        if parts.path.endswith("/balances"):
            status, body, headers = self._balances(parts.path, present)
        elif parts.path.endswith("/transactions"):
            status, body, headers = self._transactions(parts.path, query, present)
        elif parts.path.split("/")[-2:-1] == ["transactions"]:
            status, body, headers = self._transaction_details(parts.path, present)
        else:
            status, body, headers = 404, _error_body("RESOURCE_UNKNOWN", "no such resource"), {}
        return self._response(request, status, body, headers)

    def close(self) -> None:
        pass

    @staticmethod
    def _response(request: requests.PreparedRequest, status: int, body: Any, headers: dict[str, str]):
        data = json.dumps(body).encode()
        response = requests.Response()
        response.status_code = status
        response.headers = CaseInsensitiveDict(
            {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}
        )
        response.raw = io.BytesIO(data)
        response.url = request.url or ""
        response.request = request
        return response

    # -- the bank's rules --
    def _gate(self, resource: str, kind: str, present: bool, url: str, path: str):
        """The bank's checks before the answer; records the request; None when it may be answered."""
        with self._lock:
            self.requests.append({"path": path, "present": present, "kind": kind, "url": url})
            if self.fail_with == 401:
                return 401, _error_body("CONSENT_EXPIRED", "The consent expired; send the PSU to scaRedirect."), {}
            if self.fail_with is not None:
                headers = {"Retry-After": self.retry_after} if self.retry_after else {}
                code = "ACCESS_EXCEEDED" if self.fail_with == 429 else "INTERNAL"
                return self.fail_with, _error_body(code, "no"), headers
            if not present:
                now = self.now()
                recent = [t for t in self.unattended[(resource, kind)] if t > now - WINDOW]
                if len(recent) >= LIMIT:
                    self.too_many += 1
                    text = "Without PSU-IP-Address at most 4 requests per account are allowed in 24 hours."
                    return 429, _error_body("ACCESS_EXCEEDED", text), {}
                self.unattended[(resource, kind)] = [*recent, now]
        return None

    def calls(self, *, present: bool | None = None, kind: str | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if (present is None or r["present"] == present) and (kind is None or r["kind"] == kind)
        )

    def _balances(self, path: str, present: bool):
        account_id = path.split("/")[3]
        refused = self._gate(account_id, "balances", present, path, path)
        if refused is not None:
            return refused
        total = sum((Decimal(b["transactionAmount"]["amount"]) for b in self.booked), Decimal("1000.00"))
        body = {
            "account": {"iban": "NO9386011117947"},
            "balances": [
                {
                    "balanceType": kind,
                    "balanceAmount": {"amount": str(total), "currency": "NOK"},
                    **self.balance_fields,
                }
                for kind in ("closingBooked", "interimAvailable")
            ],
        }
        return 200, body, {}

    def _transaction_details(self, path: str, present: bool):
        account_id, transaction_id = path.split("/")[3], unquote(path.split("/")[5])
        refused = self._gate(account_id, "details", present, path, path)
        if refused is not None:
            return refused
        record = next((b for b in self.booked if b.get("transactionId") == transaction_id), None)
        if record is None:
            return 404, _error_body("RESOURCE_UNKNOWN", "No such transaction on this account."), {}
        return 200, {"transactionsDetails": {**record, **self.details.get(transaction_id, {})}}, {}

    def _transactions(self, path: str, query: dict[str, str], present: bool):
        account_id = path.split("/")[3]
        url = f"{path}?{urlencode(query)}"
        limit = int(query.get("limit", str(self.page_size)))
        offset = int(query.get("offset", "0"))
        if self.fail_on_page is not None and offset // limit + 1 == self.fail_on_page:
            with self._lock:
                self.requests.append({"path": path, "present": present, "kind": "transactions", "url": url})
            return 503, _error_body("SERVICE_UNAVAILABLE", "The bank is busy."), {}
        refused = self._gate(account_id, "transactions", present, url, path)
        if refused is not None:
            return refused
        date_from = date.fromisoformat(query["dateFrom"]) if "dateFrom" in query else None
        if not present:
            oldest = self.now().date() - timedelta(days=90)
            if date_from and date_from < oldest:
                return 403, _error_body("FORBIDDEN", "Transactions older than 90 days need the PSU."), {}
        # The date part: a booking date may be sent as a date-time (an odd bank).
        items = [
            b for b in self.booked if date_from is None or date.fromisoformat(b["bookingDate"][:10]) >= date_from
        ]
        page = items[offset : offset + limit]
        links: dict[str, Any] = {}
        if offset + limit < len(items):
            links["next"] = {"href": f"{path}?{urlencode({**query, 'limit': limit, 'offset': offset + limit})}"}
        key = "cardTransactions" if path.startswith("/v1/card-accounts/") else "transactions"
        # Like production (spec 4.3 known issue): every pending item on every page.
        body = {
            "account": {"iban": "NO9386011117947"},
            key: {"booked": page, "pending": self.pending, "_links": links},
        }
        return 200, body, {}
