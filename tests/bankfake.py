"""The bank of the portal's tests: ``FakeBank``, a requests transport adapter that answers in-process.

Installed for the whole portal by the ``fake_bank`` (or ``override_bank``) fixture of tests/conftest.py, it sits
behind every client the portal builds (``core.bank.use_test_bank``: xs2a's ``http_adapter``), so the portal's
own code prepares, signs, sends, retries, audits, reads and maps each call, and only the HTTP exchange is
answered here. Tests say what the bank answers and check what went over the wire::

    def test_x(fake_bank):
        fake_bank.add("POST", "/v1/payments/{product}", bankfake.payment_initiated("p-1"))
        ...
        [sent] = fake_bank.sent("POST", "/v1/payments/{product}")
        assert sent.json["instructedAmount"] == {...}

Answers are queued per (method, path template) (``add``): each request takes the next one, the last one repeats;
an answer is an ``Answer`` (status, body, headers; ``drop``/``not_sent`` for a lost answer), a JSON body (200),
or a callable taking the ``Received`` request. Every request is recorded (``received``: method, target, headers,
body). The answers are signed with the development bank seal (var/pki/bank-signing.*) when given one, so a portal
that verifies the bank's signatures (BANK_RESPONSE_CERT) believes them.

Without a queued answer, the bank starts every SCA (consents, /v1/users) with a scaRedirect, ends a consent (204),
lists to each PSU-ID what ``accounts_of``, ``card_accounts_of`` and ``agreements_of`` hold (with ``session_rule``,
only to a PSU who completed SCA in the TPP-Session-ID named: ``sca_done``), and its account-information endpoints
keep the bank's rules that the refresh and sync tests need: ``booked``/``pending`` transactions in pages of
``page_size`` (the bank's default, 200) with ``next`` links (limit/offset), the count of requests without
PSU-IP-Address per account and kind in a rolling 24 hours with 429 ACCESS_EXCEEDED beyond 4, the 90-day limit for
unattended reads; ``fail_with`` an HTTP status for every such read (and list), ``fail_on_page`` for one page. A
booked transaction's details are its list record with the fields of ``details[transactionId]`` added. Anything
else unknown answers 404 RESOURCE_UNKNOWN.

The helpers below the class build the answers' JSON in the sandbox bank's shapes (bank_simulator/representations
.py), which xs2a/models.py reads.

Also here, shared with the client's wire tests (tests/xs2a/server.py, a real HTTP server): ``Received``,
``Answer``, ``check_signature`` and ``signed_answer``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from xs2a import signing
from xs2a.credentials import load_certificate, load_private_key
from xs2a.transport import mark_not_sent

LIMIT = 4  # requests without the PSU per account and kind in WINDOW
WINDOW = timedelta(hours=24)
DEFAULT_PAGE_SIZE = 200  # the bank's (spec 4.3)
IBAN = "NO9386011117947"


# --- what went over the wire, and what comes back ------------------------------------------------------------


@dataclass
class Received:
    method: str
    target: str  # raw path and query as sent
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    @property
    def params(self) -> dict[str, str]:
        """The query's parameters (the first value of each)."""
        return {k: v[0] for k, v in parse_qs(self.query).items()}

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Answer:
    status: int = 200
    body: Any = None  # dict/list -> JSON; bytes as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a timeout test)
    drop: bool = False  # no answer after the request arrived: the request may have changed something
    not_sent: bool = False  # FakeBank only: the connection failed before any byte was written

    def encoded(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode("utf-8")


Responder = Callable[[Received], Answer]


_PART = re.compile(r'([A-Za-z]+)="((?:[^"\\]|\\.)*)"(?:,|$)')


def _decode_signature(value: str) -> dict[str, str]:
    """The parts of a Signature header: each ``name="quoted-string"``, its backslash escapes undone."""
    if value.startswith("=?utf-8?B?") and value.endswith("?="):
        value = base64.b64decode(value[len("=?utf-8?B?") : -2]).decode("utf-8")
    parts = {m[1]: re.sub(r"\\(.)", r"\1", m[2]) for m in _PART.finditer(value)}
    assert ",".join(f'{k}="{v}"' for k, v in ((m[1], m[2]) for m in _PART.finditer(value))) == value
    return parts


def check_signature(received: Received, certificate: x509.Certificate) -> list[str]:
    """Verify the request's Signature with ``certificate``; returns the signed header names."""
    params = _decode_signature(received.headers["signature"])
    names = params["headers"].split(" ")
    lines = []
    for name in names:
        if name == "(request-target)":
            lines.append(f"(request-target): {received.method.lower()} {received.target}")
        else:
            lines.append(f"{name}: {received.headers[name]}")
    certificate.public_key().verify(  # type: ignore[union-attr]
        base64.b64decode(params["signature"]),
        "\n".join(lines).encode("utf-8"),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )
    return names


def _seal_headers(
    seal,
    received: Received,
    data: bytes,
    *,
    request_id: str | None = None,
    age: timedelta = timedelta(0),
    names: Sequence[str] = ("date", "digest", "x-request-id"),
    digest: bool = True,
    digest_of: bytes | None = None,
) -> dict[str, str]:
    moment = parsedate_to_datetime(received.headers["date"]) - age
    headers = {
        "Date": format_datetime(moment, usegmt=True),
        "X-Request-ID": received.headers["x-request-id"] if request_id is None else request_id,
    }
    if digest:
        hashed = hashlib.sha256(data if digest_of is None else digest_of).digest()
        headers["Digest"] = "SHA-256=" + base64.b64encode(hashed).decode()
    lowered = {k.lower(): v for k, v in headers.items()}
    signed = [name for name in names if name in lowered]
    text = "\n".join(f"{name}: {lowered[name]}" for name in signed)
    raw = seal.key.sign(text.encode(), padding.PKCS1v15(), hashes.SHA256())
    key_id = signing.key_id(seal.certificate)
    headers["Signature"] = (
        f'keyId={signing.quoted_string(key_id)},algorithm="rsa-sha256",headers="{" ".join(signed)}",'
        f'signature="{base64.b64encode(raw).decode()}"'
    )
    return headers


def signed_answer(
    seal,
    received: Received,
    body: dict | None,
    *,
    status: int = 200,
    request_id: str | None = None,
    age: timedelta = timedelta(0),
    names: Sequence[str] = ("date", "digest", "x-request-id"),
    digest: bool = True,
    digest_of: bytes | None = None,
) -> Answer:
    """An answer as the bank signs one with its seal (an ``Issued``: key and certificate), to ``received``: its
    Date is the request's less ``age``, its X-Request-ID the request's unless ``request_id`` is given; ``names``
    are signed (those present), ``digest`` False leaves Digest out, ``digest_of`` hashes other bytes than the
    body. The signing string is built here, apart from ``xs2a.signing`` (only the keyId is written by it)."""
    data = json.dumps(body).encode("utf-8") if body is not None else b""
    headers = _seal_headers(
        seal, received, data, request_id=request_id, age=age, names=names, digest=digest, digest_of=digest_of
    )
    return Answer(status, data if body is not None else None, headers)


@dataclass(frozen=True)
class Seal:
    key: Any
    certificate: x509.Certificate


@functools.cache
def development_seal(pki_dir: Path) -> Seal:
    """The development bank's seal (``make certs``: var/pki/bank-signing.*), as the sandbox bank signs with."""
    return Seal(
        load_private_key(pki_dir / "bank-signing.key", None), load_certificate(pki_dir / "bank-signing.pem")
    )


# --- the fake bank --------------------------------------------------------------------------------------------


def _template_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}/]+\})", template)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts) + "$")


class FakeBank(BaseAdapter):
    """The bank, answering in-process (see the module's doc). ``now``: the clock of the 24-hour count; ``seal``:
    signs every answer (``development_seal``); ``prefix``: the path of BANK_BASE_URL, left off before routing."""

    def __init__(self, *, now: Callable[[], datetime] | None = None, seal: Any = None, prefix: str = "") -> None:
        super().__init__()
        self.seal = seal
        self.prefix = prefix
        self.received: list[Received] = []
        self.routes: dict[tuple[str, str], deque[Any]] = defaultdict(deque)
        self.slept: list[float] = []  # the client's waits between attempts (``sleep``)
        # The account-information rules (the module's doc).
        self.booked: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []
        self.details: dict[str, dict[str, Any]] = {}  # transactionId: the fields only the details answer has
        self.page_size = DEFAULT_PAGE_SIZE
        self.balance_fields: dict[str, Any] = {}  # added to every balance (odd optional fields)
        self.fail_with: int | None = None  # every account-information read answers this status
        self.fail_on_page: int | None = None  # only this page (1-based offset page) fails with 503
        self.retry_after: str | None = None
        self.now = now or (lambda: datetime.now(UTC))
        self.unattended: dict[tuple[str, str], list[datetime]] = defaultdict(list)
        self.too_many = 0  # 429 answers given by the 24-hour rule
        # What the bank lists to each PSU (by PSU-ID): account, card account and agreement JSON (``account``...).
        self.accounts_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.card_accounts_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.agreements_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        # With ``session_rule``, a read with the PSU present naming a TPP-Session-ID is answered only for a PSU
        # who completed SCA in that session (``sca_done``), as the sandbox bank does; else 401 SCA_NOT_FOUND.
        self.session_rule = False
        self.sca_in: dict[str, set[str]] = defaultdict(set)
        self._lock = threading.Lock()
        self._defaults = [
            ("POST", _template_pattern("/v1/bank-offered-consents"), lambda r: Answer(201, consent_created())),
            ("DELETE", _template_pattern("/v1/bank-offered-consents"), lambda r: Answer(204)),
            ("GET", _template_pattern("/v1/users"), lambda r: Answer(200, consent_created())),
            ("GET", _template_pattern("/v1/accounts"), self._listed(self.accounts_of, "accounts")),
            ("GET", _template_pattern("/v1/card-accounts"), self._listed(self.card_accounts_of, "cardAccounts")),
            ("GET", _template_pattern("/v1/agreements"), self._listed(self.agreements_of, "agreements")),
            ("GET", _template_pattern("/v1/{kind}/{accountId}/balances"), self._balances),
            ("GET", _template_pattern("/v1/{kind}/{accountId}/transactions"), self._transactions),
            ("GET", _template_pattern("/v1/accounts/{accountId}/transactions/{transactionId}"), self._details),
        ]

    # -- what the test says --
    def add(self, method: str, template: str, *answers: Answer | dict | list | Responder) -> None:
        """Queue answers for ``method`` on a path matching ``template`` (``{name}`` stands for one path segment,
        below the prefix); each request takes the next, the last one repeats. A dict or list is a 200 JSON body.
        """
        self.routes[(method.upper(), template)].extend(answers)

    def answer(self, method: str, template: str, *answers: Answer | dict | list | Responder) -> None:
        """Like ``add``, in place of what was queued for that route."""
        self.routes[(method.upper(), template)].clear()
        self.add(method, template, *answers)

    def sleep(self, seconds: float) -> None:
        """The client's wait between attempts: recorded, not waited."""
        self.slept.append(seconds)

    def sent(self, method: str | None = None, template: str | None = None) -> list[Received]:
        """The requests received, those of ``method`` on paths matching ``template`` when given."""
        pattern = _template_pattern(template) if template else None
        return [
            r
            for r in self.received
            if (method is None or r.method == method.upper())
            and (pattern is None or pattern.match(self._routed_path(r)))
        ]

    def calls(self, *, present: bool | None = None, kind: str | None = None) -> int:
        """The account-information reads received: with or without PSU-IP-Address (``present``), of one ``kind``
        (balances, transactions, details)."""
        return sum(
            1
            for r in self.received
            if (k := _ais_kind(self._routed_path(r))) is not None
            and (present is None or ("psu-ip-address" in r.headers) == present)
            and (kind is None or k == kind)
        )

    # -- the HTTP exchange --
    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        parts = urlsplit(request.url or "")
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = {k.lower(): v for k, v in request.headers.items()}
        received = Received(request.method or "GET", target, headers, body)
        with self._lock:
            self.received.append(received)
        answer = self._answer_for(received)
        if answer.delay:
            time.sleep(answer.delay)
        if answer.not_sent:
            raise mark_not_sent(requests.ConnectionError("the fake bank refused the connection"))
        if answer.drop:
            raise requests.ConnectionError("the fake bank closed the connection without answering")
        data = answer.encoded()
        headers = {"Date": format_datetime(datetime.now(UTC), usegmt=True)}
        if data:
            headers["Content-Type"] = "application/json"
        if self.seal is not None and "Signature" not in answer.headers:
            headers.update(_seal_headers(self.seal, received, data))
        headers.update(answer.headers)
        headers["Content-Length"] = str(len(data))
        response = requests.Response()
        response.status_code = answer.status
        response.headers = CaseInsensitiveDict(headers)
        response.raw = io.BytesIO(data)
        response.url = request.url or ""
        response.request = request
        response.reason = "fake"
        return response

    def close(self) -> None:
        pass

    def _routed_path(self, received: Received) -> str:
        path = received.path
        return path[len(self.prefix) :] if self.prefix and path.startswith(self.prefix) else path

    def _answer_for(self, received: Received) -> Answer:
        path = self._routed_path(received)
        matching = [
            (template.count("{"), queue)
            for (method, template), queue in self.routes.items()
            if method == received.method and queue and _template_pattern(template).match(path)
        ]
        if matching:
            queue = min(matching, key=lambda item: item[0])[1]  # the most literal template
            item = queue.popleft() if len(queue) > 1 else queue[0]
        else:
            item = next(
                (answer for method, p, answer in self._defaults if method == received.method and p.match(path)),
                Answer(404, tpp_messages("RESOURCE_UNKNOWN", "no such resource")),
            )
        if callable(item):
            item = item(received)
        return item if isinstance(item, Answer) else Answer(200, item)

    def sca_done(self, tpp_session_id: str, psu_id: str) -> None:
        """The PSU of ``psu_id`` completed SCA at the bank in the TPP session ``tpp_session_id``."""
        self.sca_in[tpp_session_id].add(psu_id)

    # -- the bank's account-information rules --
    def _listed(self, lists: dict[str, list[dict[str, Any]]], key: str) -> Responder:
        def answer(received: Received) -> Answer:
            psu_id = received.headers.get("psu-id", "")
            session = received.headers.get("tpp-session-id")
            if self.fail_with is not None:
                return error(self.fail_with, "SYSTEM_ERROR", "no")
            present = "psu-ip-address" in received.headers
            if self.session_rule and present and session and psu_id not in self.sca_in[session]:
                refused = tpp_messages("SCA_NOT_FOUND", "No SCA of this PSU in this TPP session.")
                return Answer(401, {**refused, "_links": {"scaRedirect": link("https://bank.test/sca/authorize")}})
            return Answer(200, {key: list(lists.get(psu_id, []))})

        return answer

    def _gate(self, resource: str, kind: str, received: Received) -> Answer | None:
        """The bank's checks before the answer; None when it may be answered."""
        present = "psu-ip-address" in received.headers
        with self._lock:
            if self.fail_with == 401:
                return error(401, "CONSENT_EXPIRED", "The consent expired; send the PSU to scaRedirect.")
            if self.fail_with is not None:
                headers = {"Retry-After": self.retry_after} if self.retry_after else {}
                code = "ACCESS_EXCEEDED" if self.fail_with == 429 else "INTERNAL"
                return error(self.fail_with, code, "no", headers=headers)
            if not present:
                now = self.now()
                recent = [t for t in self.unattended[(resource, kind)] if t > now - WINDOW]
                if len(recent) >= LIMIT:
                    self.too_many += 1
                    text = "Without PSU-IP-Address at most 4 requests per account are allowed in 24 hours."
                    return error(429, "ACCESS_EXCEEDED", text)
                self.unattended[(resource, kind)] = [*recent, now]
        return None

    def _balances(self, received: Received) -> Answer:
        account_id = self._routed_path(received).split("/")[3]
        refused = self._gate(account_id, "balances", received)
        if refused is not None:
            return refused
        total = sum((Decimal(b["transactionAmount"]["amount"]) for b in self.booked), Decimal("1000.00"))
        return Answer(200, balances(str(total), fields=self.balance_fields))

    def _details(self, received: Received) -> Answer:
        parts = self._routed_path(received).split("/")
        account_id, transaction_id = parts[3], unquote(parts[5])
        refused = self._gate(account_id, "details", received)
        if refused is not None:
            return refused
        record = next((b for b in self.booked if b.get("transactionId") == transaction_id), None)
        if record is None:
            return error(404, "RESOURCE_UNKNOWN", "No such transaction on this account.")
        return Answer(200, {"transactionsDetails": {**record, **self.details.get(transaction_id, {})}})

    def _transactions(self, received: Received) -> Answer:
        path = self._routed_path(received)
        account_id = path.split("/")[3]
        query = received.params
        limit = int(query.get("limit", str(self.page_size)))
        offset = int(query.get("offset", "0"))
        if self.fail_on_page is not None and offset // limit + 1 == self.fail_on_page:
            return error(503, "SERVICE_UNAVAILABLE", "The bank is busy.")
        refused = self._gate(account_id, "transactions", received)
        if refused is not None:
            return refused
        date_from = date.fromisoformat(query["dateFrom"]) if "dateFrom" in query else None
        if "psu-ip-address" not in received.headers:
            oldest = self.now().date() - timedelta(days=90)
            if date_from and date_from < oldest:
                return error(403, "FORBIDDEN", "Transactions older than 90 days need the PSU.")
        # The date part: a booking date may be sent as a date-time (an odd bank).
        items = [
            b for b in self.booked if date_from is None or date.fromisoformat(b["bookingDate"][:10]) >= date_from
        ]
        page = items[offset : offset + limit]
        more = offset + limit < len(items)
        following = f"{path}?{urlencode({**query, 'limit': limit, 'offset': offset + limit})}" if more else None
        # Like production (spec 4.3 known issue): every pending item on every page.
        card = path.startswith("/v1/card-accounts/")
        return Answer(200, transactions_page(page, self.pending, next_href=following, card=card))


def _ais_kind(path: str) -> str | None:
    parts = path.split("/")
    if len(parts) < 5 or parts[2] not in {"accounts", "card-accounts"}:
        return None
    if len(parts) == 5 and parts[4] in {"balances", "transactions"}:
        return parts[4]
    if len(parts) == 6 and parts[4] == "transactions":
        return "details"
    return None


# --- the bank's answers ---------------------------------------------------------------------------------------


def link(href: str) -> dict[str, str]:
    return {"href": href}


def tpp_messages(code: str, text: str = "", *, category: str = "ERROR") -> dict[str, Any]:
    """A body of one tppMessage (the bank's error body)."""
    message = {"category": category, "code": code}
    if text:
        message["text"] = text
    return {"tppMessages": [message]}


def error(status: int, code: str, text: str = "", *, headers: dict[str, str] | None = None) -> Answer:
    """An error answer: ``status`` with one tppMessage."""
    return Answer(status, tpp_messages(code, text), dict(headers or {}))


def lost(*, sent: bool = True) -> Answer:
    """No answer: the connection failed after the request may have reached the bank (``sent``, the default), or
    before any byte of it was written (xs2a/transport.py: ``mark_not_sent``)."""
    return Answer(drop=sent, not_sent=not sent)


def account(
    resource_id: str,
    *,
    iban: str = IBAN,
    currency: str = "NOK",
    name: str = "Brukskonto",
    cash_account_type: str = "CACC",
    product: str = "Brukskonto",
    **extra: Any,
) -> dict[str, Any]:
    """One account of GET /v1/accounts."""
    base = f"/v1/accounts/{resource_id}"
    return {
        "resourceId": resource_id,
        "iban": iban,
        "bban": iban[4:],
        "currency": currency,
        "name": name,
        "product": product,
        "cashAccountType": cash_account_type,
        "_links": {"balances": link(base + "/balances"), "transactions": link(base + "/transactions")},
        **extra,
    }


def card_account(resource_id: str, *, masked_pan: str = "525412******3241", currency: str = "NOK", **extra: Any):
    """One card account of GET /v1/card-accounts."""
    return {"resourceId": resource_id, "maskedPan": masked_pan, "currency": currency, "status": "enabled", **extra}


def accounts_list(*accounts: dict[str, Any]) -> dict[str, Any]:
    return {"accounts": list(accounts)}


def card_accounts_list(*accounts: dict[str, Any]) -> dict[str, Any]:
    return {"cardAccounts": list(accounts)}


def balances(
    amount: str = "1000.00",
    *,
    currency: str = "NOK",
    types: Sequence[str] = ("closingBooked", "interimAvailable"),
    iban: str = IBAN,
    fields: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """GET .../balances: one balance of each of ``types``, all of ``amount``."""
    return {
        "account": {"iban": iban},
        "balances": [
            {"balanceType": kind, "balanceAmount": {"amount": amount, "currency": currency}, **(fields or {})}
            for kind in types
        ],
    }


def booked(tid: str, amount: str, day: date, text: str = "Rema 1000", **extra: Any) -> dict[str, Any]:
    """A booked transaction record."""
    record = {
        "transactionId": tid,
        "bookingDate": day.isoformat(),
        "valueDate": day.isoformat(),
        "transactionAmount": {"amount": amount, "currency": "NOK"},
        "remittanceInformationUnstructured": text,
    }
    if Decimal(amount) < 0:
        record["creditorName"] = text
        record["creditorAccount"] = {"iban": IBAN}
    else:
        record["debtorName"] = text
    record.update(extra)
    return record


def pending(tid: str | None, amount: str, day: date, text: str = "Rema 1000") -> dict[str, Any]:
    """A pending transaction record (``tid`` None: without transactionId, as banks send them)."""
    record = booked(tid or "", amount, day, text)
    if tid is None:
        del record["transactionId"]
    return record


def transactions_page(
    booked: Sequence[dict[str, Any]] = (),
    pending: Sequence[dict[str, Any]] = (),
    *,
    next_href: str | None = None,
    card: bool = False,
) -> dict[str, Any]:
    """One page of GET .../transactions (``next_href``: the next page's link)."""
    links = {"next": link(next_href)} if next_href else {}
    key = "cardTransactions" if card else "transactions"
    return {"account": {"iban": IBAN}, key: {"booked": list(booked), "pending": list(pending), "_links": links}}


def consent_created(
    sca_redirect: str | None = "https://bank.test/sca?s=1", *, status: str = "received", consent_id: str = ""
) -> dict[str, Any]:
    """The answer to POST /v1/bank-offered-consents (and GET /v1/users): the scaRedirect to send the PSU to."""
    body: dict[str, Any] = {"consentStatus": status, "_links": {}}
    if consent_id:
        body["consentId"] = consent_id
    if sca_redirect:
        body["_links"]["scaRedirect"] = link(sca_redirect)
    return body


def agreement(agreement_id: str, name: str = "Firma AS", *, engagements: Sequence[str] = ()) -> dict[str, Any]:
    return {"id": agreement_id, "name": name, "engagements": list(engagements)}


def agreements_list(*agreements: dict[str, Any]) -> dict[str, Any]:
    return {"agreements": list(agreements)}


def payment_initiated(
    payment_id: str,
    status: str = "RCVD",
    *,
    product: str = "domestic-credit-transfers",
    sca_redirect: str | None = None,
    start_authorisation: bool = True,
    sca_status: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The answer to POST /v1/payments/{product}, with the links to the payment, its status and (unless
    ``start_authorisation`` is False) its startAuthorisation; ``sca_redirect`` when the bank starts SCA at once."""
    base = f"/v1/payments/{product}/{payment_id}"
    links = {"self": link(base), "status": link(base + "/status")}
    if start_authorisation:
        links["startAuthorisation"] = link(base + "/authorisations")
    if sca_redirect:
        links["scaRedirect"] = link(sca_redirect)
    body: dict[str, Any] = {"paymentId": payment_id, "transactionStatus": status, "_links": links, **extra}
    if sca_status:
        body["scaStatus"] = sca_status
    return body


def payment_status(status: str, *, funds_available: bool | None = None, **extra: Any) -> dict[str, Any]:
    """The answer to GET .../status."""
    body: dict[str, Any] = {"transactionStatus": status, **extra}
    if funds_available is not None:
        body["fundsAvailable"] = funds_available
    return body


def authorisation(
    sca_redirect: str | None = "https://bank.test/sca?a=1",
    *,
    authorisation_id: str = "auth-1",
    sca_status: str = "received",
    sca_status_href: str | None = None,
) -> dict[str, Any]:
    """The answer to POST .../authorisations (startAuthorisation)."""
    links: dict[str, Any] = {}
    if sca_redirect:
        links["scaRedirect"] = link(sca_redirect)
    if sca_status_href:
        links["scaStatus"] = link(sca_status_href)
    return {"scaStatus": sca_status, "authorisationId": authorisation_id, "_links": links}


def sca_status(status: str) -> dict[str, Any]:
    """The answer to GET on an authorisation's scaStatus link."""
    return {"scaStatus": status}


def refusal(status: int, *messages: tuple[str, str | None, str], headers: dict[str, str] | None = None) -> Answer:
    """An error answer with one tppMessage per ``(code, path, text)``; ``path`` (None: none) names the body field
    or header the bank refused, as in its format errors and logical-duplicate conflicts."""
    body = [
        {"category": "ERROR", "code": code, **({"path": path} if path else {}), "text": text}
        for code, path, text in messages
    ]
    return Answer(status, {"tppMessages": body}, dict(headers or {}))
