"""Typed records of the bank's JSON (docs/bank-interface.md).

Every record is a dataclass read with ``from_json``; amounts are ``Decimal``; dates are ``date``; fields the
client does not know are kept in ``extra`` (never dropped), so a newer bank release loses nothing. Requests
(``PaymentInitiation``) are written with ``to_json``, which puts ``extra`` back.

Required fields are strict: a record without one, or with one the client cannot read, is refused (ModelError,
and the answer with it). An optional field the client cannot read (a date-time without an offset, a malformed
optional amount, an object where a text belongs) costs neither the record nor its list: it reads as None, its
raw value is kept in the record's ``unread`` (field name -> value as received), and one warning per field is
logged for the process, naming the field and what was wrong with it, never the value (it may be personal). A
date written as a date-time (``2026-11-30T00:00:00``, at any time of day, with or without an offset) reads as
its date part: that is the bank's own calendar date, which turning the time into UTC could move by a day
(docs/bank-interface.md, "Odd optional fields"). Links (``_links``) and the lists of a listing stay strict: a
next link read as None would end a listing early and lose every item after it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from xs2a.errors import TppMessage

log = logging.getLogger("xs2a")

__all__ = [
    "Account",
    "AccountBalances",
    "AccountReference",
    "Address",
    "Agreement",
    "Amount",
    "AuthorisationResponse",
    "Balance",
    "CardAccount",
    "CardTransaction",
    "CardTransactionList",
    "Link",
    "ModelError",
    "PaymentCancellationResponse",
    "PaymentDetails",
    "PaymentInitiation",
    "PaymentInitiationResponse",
    "PaymentStatus",
    "RedirectResponse",
    "SandboxClock",
    "SandboxCustomer",
    "StructuredRemittance",
    "TppMessage",
    "Transaction",
    "TransactionList",
]


class ModelError(ValueError):
    """JSON that does not have the shape of the record; the message names the field."""


T = TypeVar("T")


#: The fields whose unreadable values were logged already in this process (each field once, not each item).
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()
_INDEX = re.compile(r"\[\d+\]")


def _warn_once(field_path: str, kind: str, problem: str) -> None:
    """Log that the optional field at ``field_path`` was odd, once per field and ``kind`` ("unread" or "date
    part") for the process, not once per item. ``problem`` says what was odd, never the value (it may be
    personal)."""
    path = _INDEX.sub("[]", field_path)
    with _warned_lock:
        if (path, kind) in _warned:
            return
        _warned.add((path, kind))
    if kind == "unread":
        log.warning(
            "the bank sent %s in a form the client cannot read (%s): kept raw, read as empty", path, problem
        )
    else:
        log.warning("the bank sent %s as %s", path, problem)


def _shape(value: Any) -> str:
    """What a value is, without the value: for the log."""
    if isinstance(value, str):
        return f"a text of {len(value)} characters"
    return f"a JSON {type(value).__name__}"


#: A date-time (ISO 8601) whose date part is a calendar date: a date field written as a date-time.
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


class _Fields:
    """Reads known fields from a JSON object; whatever is not read ends up in ``extra``, an optional field that
    cannot be read in ``unread``."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ModelError(f"{where}: expected a JSON object, got {type(data).__name__}")
        self.data = dict(data)
        self.where = where
        self.unread: dict[str, Any] = {}

    def _pop(self, name: str) -> Any:
        return self.data.pop(name, None)

    def _optional(self, name: str, value: Any, problem: str, *, required: bool) -> None:
        """An unreadable value: ModelError for a required field, else kept raw in ``unread`` (and logged once)."""
        if required:
            raise ModelError(f"{self.where}.{name}: {problem}")
        self.unread[name] = value
        _warn_once(f"{self.where}.{name}", "unread", f"{problem}; got {_shape(value)}")

    def str(self, name: str, *, required: bool = False) -> str | None:
        value = self._pop(name)
        if value is None:
            if required:
                raise ModelError(f"{self.where}.{name}: required")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
            self._optional(name, value, "expected a string", required=required)
            return None
        return str(value)

    def bool(self, name: str) -> bool | None:
        value = self._pop(name)
        if value is None or isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        self._optional(name, value, "expected a boolean", required=False)
        return None

    def date(self, name: str) -> date | None:
        """An ISO 8601 date; a date-time's date part (the bank's calendar date, never moved to UTC)."""
        value = self._pop(name)
        if value is None:
            return None
        text = value if isinstance(value, str) else ""
        try:
            return date.fromisoformat(text)
        except ValueError:
            pass
        if _DATE_TIME.match(text) is not None:
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                pass
            else:  # the date as written, in the bank's own zone: never turned into UTC
                _warn_once(
                    f"{self.where}.{name}", "date part", "a date-time where a date belongs: its date part is read"
                )
                return moment.date()
        self._optional(name, value, "expected an ISO 8601 date", required=False)
        return None

    def datetime(self, name: str, *, required: bool = False) -> datetime | None:
        """An ISO 8601 date-time with an offset (one without is not a moment: which zone is not known)."""
        value = self._pop(name)
        if value is None:
            if required:
                raise ModelError(f"{self.where}.{name}: required")
            return None
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None:
            self._optional(name, value, "expected an ISO 8601 date-time", required=required)
            return None
        if moment.tzinfo is None:
            self._optional(name, value, "a date-time needs an offset", required=required)
            return None
        return moment

    def obj(self, name: str, reader: Callable[[Any, str], T], *, required: bool = False) -> T | None:
        value = self._pop(name)
        if value is None:
            if required:
                raise ModelError(f"{self.where}.{name}: required")
            return None
        if required:
            return reader(value, f"{self.where}.{name}")
        try:
            return reader(value, f"{self.where}.{name}")
        except ModelError as exc:
            # The nested message names the field, then may quote the value: only the field is logged.
            inner = _INDEX.sub("[]", str(exc).split(": ", 1)[0])
            self._optional(name, value, f"not the expected shape (at {inner})", required=False)
            return None

    def list(self, name: str, reader: Callable[[Any, str], T]) -> list[T]:
        """A list whose items are read strictly: an item that cannot be read refuses the list."""
        value = self._pop(name)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ModelError(f"{self.where}.{name}: expected an array")
        return [reader(item, f"{self.where}.{name}[{i}]") for i, item in enumerate(value)]

    def strings(self, name: str) -> list[str]:
        """An optional list of strings: one that is not (or holds something else) is kept raw in ``unread``."""
        value = self._pop(name)
        if value is None:
            return []
        if not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, str | int | Decimal) for v in value
        ):
            self._optional(name, value, "expected an array of strings", required=False)
            return []
        return [str(v) for v in value]

    def links(self) -> dict[str, Link]:
        value = self._pop("_links")
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ModelError(f"{self.where}._links: expected an object")
        return {str(k): Link.from_json(v, f"{self.where}._links.{k}") for k, v in value.items()}

    def tpp_messages(self) -> list[TppMessage]:
        return self.list("tppMessages", lambda v, _w: TppMessage.from_json(v))

    def extra(self) -> dict[str, Any]:
        return self.data


def _string(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise ModelError(f"{where}: expected a string")
    return str(value)


def _put(out: dict[str, Any], name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, Decimal | date):
        raise TypeError("use the record's to_json")
    out[name] = value


def decimal_text(value: Decimal) -> str:
    """A Decimal as the bank's decimal string, with its own number of fraction digits (never exponent form)."""
    if not isinstance(value, Decimal):
        raise TypeError(f"amounts are Decimal, got {type(value).__name__}")
    if not value.is_finite():
        raise ValueError(f"amount {value} is not a finite number")
    return format(value, "f")


# --- spec 2.2 to 2.7 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Amount:
    """instructedAmount, transactionFees, balanceAmount, transactionAmount: a Decimal and a currency."""

    amount: Decimal
    currency: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.amount, float) or not isinstance(self.amount, Decimal):
            raise TypeError(f"Amount.amount must be a Decimal, got {type(self.amount).__name__}")

    @classmethod
    def from_json(cls, data: Any, where: str = "amount") -> Amount:
        f = _Fields(data, where)
        raw = f._pop("amount")
        if raw is None or isinstance(raw, bool | float):
            raise ModelError(f"{where}.amount: expected a decimal string")
        try:
            value = Decimal(str(raw))
        except InvalidOperation:
            raise ModelError(f"{where}.amount: {raw!r} is not a decimal") from None
        if not value.is_finite():
            raise ModelError(f"{where}.amount: {raw!r} is not a finite decimal")
        currency = f.str("currency", required=True)
        return cls(amount=value, currency=currency or "", extra=f.extra(), unread=f.unread)

    def to_json(self) -> dict[str, Any]:
        return {**self.extra, "amount": decimal_text(self.amount), "currency": self.currency}


@dataclass(frozen=True)
class AccountReference:
    """creditorAccount, debtorAccount (spec 2.3), and the account block of balances and transactions."""

    currency: str | None = None
    iban: str | None = None
    bban: str | None = None
    masked_pan: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "account") -> AccountReference:
        f = _Fields(data, where)
        return cls(
            currency=f.str("currency"),
            iban=f.str("iban"),
            bban=f.str("bban"),
            masked_pan=f.str("maskedPan"),
            extra=f.extra(),
            unread=f.unread,
        )

    def to_json(self) -> dict[str, Any]:
        out = {**self.extra, **self.unread}  # nothing the bank sent is lost when a record is written back
        _put(out, "iban", self.iban)
        _put(out, "bban", self.bban)
        _put(out, "maskedPan", self.masked_pan)
        _put(out, "currency", self.currency)
        return out


@dataclass(frozen=True)
class Address:
    """creditorAddress (spec 2.4)."""

    country: str
    street: str | None = None
    building_number: str | None = None
    postal_code: str | None = None
    city: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "creditorAddress") -> Address:
        f = _Fields(data, where)
        return cls(
            street=f.str("street"),
            building_number=f.str("buildingNumber"),
            postal_code=f.str("postalCode"),
            city=f.str("city"),
            country=f.str("country", required=True) or "",
            extra=f.extra(),
            unread=f.unread,
        )

    def to_json(self) -> dict[str, Any]:
        out = {**self.extra, **self.unread}  # nothing the bank sent is lost when a record is written back
        _put(out, "street", self.street)
        _put(out, "buildingNumber", self.building_number)
        _put(out, "postalCode", self.postal_code)
        _put(out, "city", self.city)
        out["country"] = self.country
        return out


@dataclass(frozen=True)
class Link:
    """A hyperlink: href (relative to the bank's base address unless absolute) and the verbs it accepts."""

    href: str
    verbs: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "_links") -> Link:
        if isinstance(data, str):  # some banks write a bare href
            return cls(href=data)
        f = _Fields(data, where)
        href = f.str("href", required=True) or ""
        return cls(href=href, verbs=tuple(f.strings("verbs")), extra=f.extra(), unread=f.unread)


@dataclass(frozen=True)
class StructuredRemittance:
    """An entry of remittanceInformationStructuredArray: a reference the creditor matches the payment with
    (a Norwegian KID: ``reference_type`` "KID"), as the bank's transactions carry it."""

    reference: str
    reference_type: str | None = None
    reference_issuer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "remittanceInformationStructured") -> StructuredRemittance:
        f = _Fields(data, where)
        return cls(
            reference=f.str("reference", required=True) or "",
            reference_type=f.str("referenceType"),
            reference_issuer=f.str("referenceIssuer"),
            extra=f.extra(),
            unread=f.unread,
        )

    def to_json(self) -> dict[str, Any]:
        out = {**self.extra, **self.unread}  # nothing the bank sent is lost when a record is written back
        out["reference"] = self.reference
        _put(out, "referenceType", self.reference_type)
        _put(out, "referenceIssuer", self.reference_issuer)
        return out


def _structured_remittances(data: Any, where: str) -> list[StructuredRemittance]:
    """remittanceInformationStructuredArray, read whole: an entry that cannot be read makes the field unread."""
    if not isinstance(data, list):
        raise ModelError(f"{where}: expected an array")
    return [StructuredRemittance.from_json(item, f"{where}[{i}]") for i, item in enumerate(data)]


@dataclass(frozen=True)
class PaymentInitiation:
    """The payment initiation request body (spec 2.1).

    ``to_json`` writes the fields in the spec's order and leaves out those that are None (or, for the structured
    remittance, empty); ``xs2a.services.payments.initiation_bytes`` turns it into the exact bytes sent.
    """

    instructed_amount: Amount
    creditor_name: str
    creditor_account: AccountReference
    debtor_account: AccountReference
    creditor_agent: str | None = None
    creditor_address: Address | None = None
    remittance_information_unstructured: str | None = None
    remittance_information_structured_array: list[StructuredRemittance] = field(default_factory=list)
    purpose_code: str | None = None
    requested_execution_date: date | None = None
    regulatory_reporting_code: str | None = None
    regulatory_reporting_information: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        out = {**self.extra, **self.unread}  # nothing the bank sent is lost when a record is written back
        out["instructedAmount"] = self.instructed_amount.to_json()
        out["creditorName"] = self.creditor_name
        _put(out, "creditorAgent", self.creditor_agent)
        out["creditorAccount"] = self.creditor_account.to_json()
        if self.creditor_address is not None:
            out["creditorAddress"] = self.creditor_address.to_json()
        out["debtorAccount"] = self.debtor_account.to_json()
        _put(out, "remittanceInformationUnstructured", self.remittance_information_unstructured)
        if self.remittance_information_structured_array:
            out["remittanceInformationStructuredArray"] = [
                entry.to_json() for entry in self.remittance_information_structured_array
            ]
        _put(out, "purposeCode", self.purpose_code)
        if self.requested_execution_date is not None:
            out["requestedExecutionDate"] = self.requested_execution_date.isoformat()
        _put(out, "regulatoryReportingCode", self.regulatory_reporting_code)
        _put(out, "regulatoryReportingInformation", self.regulatory_reporting_information)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "payment") -> PaymentInitiation:
        return cls._read(_Fields(data, where))

    @classmethod
    def _read(cls, f: _Fields) -> PaymentInitiation:
        return cls(
            instructed_amount=f.obj("instructedAmount", Amount.from_json, required=True),  # type: ignore[arg-type]
            creditor_name=f.str("creditorName", required=True) or "",
            creditor_account=f.obj("creditorAccount", AccountReference.from_json, required=True),  # type: ignore[arg-type]
            debtor_account=f.obj("debtorAccount", AccountReference.from_json, required=True),  # type: ignore[arg-type]
            creditor_agent=f.str("creditorAgent"),
            creditor_address=f.obj("creditorAddress", Address.from_json),
            remittance_information_unstructured=f.str("remittanceInformationUnstructured"),
            remittance_information_structured_array=f.obj(
                "remittanceInformationStructuredArray", _structured_remittances
            )
            or [],
            purpose_code=f.str("purposeCode"),
            requested_execution_date=f.date("requestedExecutionDate"),
            regulatory_reporting_code=f.str("regulatoryReportingCode"),
            regulatory_reporting_information=f.str("regulatoryReportingInformation"),
            extra=f.extra(),
            unread=f.unread,
        )


def _href(links: Mapping[str, Link], name: str) -> str | None:
    link = links.get(name)
    return link.href if link else None


@dataclass(frozen=True)
class PaymentInitiationResponse:
    """The answer to a payment initiation (spec 2.7). ``request_id``/``tpp_session_id`` are what was sent.

    ``sca_status``: the bank's scaStatus when it started the approval (or exempted the payment) with the
    initiation itself, as a startAuthorisation answer would carry it; None when it did not say."""

    payment_id: str
    transaction_status: str
    sca_status: str | None = None
    transaction_fees: Amount | None = None
    transaction_fee_indicator: bool | None = None
    tpp_messages: list[TppMessage] = field(default_factory=list)
    psu_message: str | None = None
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)
    request_id: str | None = field(default=None, compare=False)
    tpp_session_id: str | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "payment") -> PaymentInitiationResponse:
        f = _Fields(data, where)
        return cls(
            payment_id=f.str("paymentId", required=True) or "",
            transaction_status=f.str("transactionStatus", required=True) or "",
            sca_status=f.str("scaStatus"),
            transaction_fees=f.obj("transactionFees", Amount.from_json),
            transaction_fee_indicator=f.bool("transactionFeeIndicator"),
            tpp_messages=f.tpp_messages(),
            psu_message=f.str("psuMessage"),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )

    @property
    def sca_redirect(self) -> str | None:
        return _href(self.links, "scaRedirect")

    @property
    def start_authorisation(self) -> str | None:
        return _href(self.links, "startAuthorisation")

    @property
    def status_link(self) -> str | None:
        return _href(self.links, "status")


@dataclass(frozen=True)
class AuthorisationResponse:
    """The answer to a POST on startAuthorisation: scaStatus and the scaRedirect link."""

    sca_status: str | None = None
    authorisation_id: str | None = None
    psu_message: str | None = None
    tpp_messages: list[TppMessage] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "authorisation") -> AuthorisationResponse:
        f = _Fields(data, where)
        return cls(
            sca_status=f.str("scaStatus"),
            authorisation_id=f.str("authorisationId"),
            psu_message=f.str("psuMessage"),
            tpp_messages=f.tpp_messages(),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )

    @property
    def sca_redirect(self) -> str | None:
        return _href(self.links, "scaRedirect")


@dataclass(frozen=True)
class ScaStatusResponse:
    """The answer to a GET on an authorisation's scaStatus link: where that SCA stands (received, started,
    finalised, failed, exempted ...)."""

    sca_status: str | None = None
    psu_message: str | None = None
    tpp_messages: list[TppMessage] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "scaStatus") -> ScaStatusResponse:
        f = _Fields(data, where)
        return cls(
            sca_status=f.str("scaStatus"),
            psu_message=f.str("psuMessage"),
            tpp_messages=f.tpp_messages(),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )


@dataclass(frozen=True)
class PaymentStatus:
    """The payment status read (spec 3): transactionStatus, and fundsAvailable for the ACCP case."""

    transaction_status: str
    funds_available: bool | None = None
    psu_message: str | None = None
    tpp_messages: list[TppMessage] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "status") -> PaymentStatus:
        f = _Fields(data, where)
        return cls(
            transaction_status=f.str("transactionStatus", required=True) or "",
            funds_available=f.bool("fundsAvailable"),
            psu_message=f.str("psuMessage"),
            tpp_messages=f.tpp_messages(),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )


@dataclass(frozen=True)
class PaymentDetails:
    """GET on a payment: the submitted fields plus paymentId, transactionStatus and links."""

    payment: PaymentInitiation
    payment_id: str | None = None
    transaction_status: str | None = None
    links: dict[str, Link] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, where: str = "payment") -> PaymentDetails:
        f = _Fields(data, where)
        payment_id = f.str("paymentId")
        status = f.str("transactionStatus")
        links = f.links()
        return cls(
            payment=PaymentInitiation._read(f), payment_id=payment_id, transaction_status=status, links=links
        )


@dataclass(frozen=True)
class PaymentCancellationResponse:
    """The answer to DELETE on a payment (empty for 204)."""

    transaction_status: str | None = None
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "cancellation") -> PaymentCancellationResponse:
        if data is None:
            return cls()
        f = _Fields(data, where)
        return cls(
            transaction_status=f.str("transactionStatus"), links=f.links(), extra=f.extra(), unread=f.unread
        )

    @property
    def start_authorisation(self) -> str | None:
        return _href(self.links, "startAuthorisation") or _href(self.links, "startAuthorisationWithCancellation")


@dataclass(frozen=True)
class RedirectResponse:
    """An answer whose point is a scaRedirect link: /v1/users, /v1/bank-offered-consents."""

    links: dict[str, Link] = field(default_factory=dict)
    consent_id: str | None = None
    consent_status: str | None = None
    psu_message: str | None = None
    tpp_messages: list[TppMessage] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)
    tpp_session_id: str | None = field(default=None, compare=False)  # what was sent

    @classmethod
    def from_json(cls, data: Any, where: str = "response") -> RedirectResponse:
        f = _Fields(data, where)
        return cls(
            links=f.links(),
            consent_id=f.str("consentId"),
            consent_status=f.str("consentStatus"),
            psu_message=f.str("psuMessage"),
            tpp_messages=f.tpp_messages(),
            extra=f.extra(),
            unread=f.unread,
        )

    @property
    def sca_redirect(self) -> str | None:
        return _href(self.links, "scaRedirect")


# --- account information (docs/bank-interface.md, reference 2) -------------------------------------------


@dataclass(frozen=True)
class Balance:
    balance_amount: Amount
    balance_type: str
    reference_date: date | None = None
    last_change_date_time: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "balance") -> Balance:
        f = _Fields(data, where)
        return cls(
            balance_amount=f.obj("balanceAmount", Amount.from_json, required=True),  # type: ignore[arg-type]
            balance_type=f.str("balanceType", required=True) or "",
            reference_date=f.date("referenceDate"),
            last_change_date_time=f.datetime("lastChangeDateTime"),
            extra=f.extra(),
            unread=f.unread,
        )


@dataclass(frozen=True)
class Account:
    resource_id: str
    currency: str | None = None
    iban: str | None = None
    bban: str | None = None
    name: str | None = None
    product: str | None = None
    cash_account_type: str | None = None
    bic: str | None = None
    balances: list[Balance] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "account") -> Account:
        f = _Fields(data, where)
        return cls(
            resource_id=f.str("resourceId", required=True) or "",
            currency=f.str("currency"),
            iban=f.str("iban"),
            bban=f.str("bban"),
            name=f.str("name"),
            product=f.str("product"),
            cash_account_type=f.str("cashAccountType"),
            bic=f.str("bic"),
            balances=f.list("balances", Balance.from_json),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )


@dataclass(frozen=True)
class CardAccount:
    resource_id: str
    masked_pan: str | None = None
    currency: str | None = None
    name: str | None = None
    product: str | None = None
    status: str | None = None
    credit_limit: Amount | None = None
    balances: list[Balance] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "cardAccount") -> CardAccount:
        f = _Fields(data, where)
        return cls(
            resource_id=f.str("resourceId", required=True) or "",
            masked_pan=f.str("maskedPan"),
            currency=f.str("currency"),
            name=f.str("name"),
            product=f.str("product"),
            status=f.str("status"),
            credit_limit=f.obj("creditLimit", Amount.from_json),
            balances=f.list("balances", Balance.from_json),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )


@dataclass(frozen=True)
class AccountBalances:
    """GET .../balances: the account (or cardAccount) reference and its balances."""

    account: AccountReference | None
    balances: list[Balance]
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "balances") -> AccountBalances:
        f = _Fields(data, where)
        account = f.obj("account", AccountReference.from_json) or f.obj("cardAccount", AccountReference.from_json)
        balances = f.list("balances", Balance.from_json)
        return cls(account=account, balances=balances, extra=f.extra(), unread=f.unread)


@dataclass(frozen=True)
class Transaction:
    """A booked or pending transaction, or the transaction details record."""

    transaction_amount: Amount
    transaction_id: str | None = None
    entry_reference: str | None = None
    end_to_end_identification: str | None = None
    booking_date: date | None = None
    value_date: date | None = None
    creditor_name: str | None = None
    creditor_account: AccountReference | None = None
    debtor_name: str | None = None
    debtor_account: AccountReference | None = None
    remittance_information_unstructured: str | None = None
    remittance_information_unstructured_array: list[str] = field(default_factory=list)
    proprietary_bank_transaction_code: str | None = None
    original_amount: Amount | None = None
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The bank's record as received (what the portal stores beside the fields it reads).
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "transaction") -> Transaction:
        f = _Fields(data, where)
        return cls(
            transaction_amount=f.obj("transactionAmount", Amount.from_json, required=True),  # type: ignore[arg-type]
            transaction_id=f.str("transactionId"),
            entry_reference=f.str("entryReference"),
            end_to_end_identification=f.str("endToEndIdentification"),
            booking_date=f.date("bookingDate"),
            value_date=f.date("valueDate"),
            creditor_name=f.str("creditorName"),
            creditor_account=f.obj("creditorAccount", AccountReference.from_json),
            debtor_name=f.str("debtorName"),
            debtor_account=f.obj("debtorAccount", AccountReference.from_json),
            remittance_information_unstructured=f.str("remittanceInformationUnstructured"),
            remittance_information_unstructured_array=f.strings("remittanceInformationUnstructuredArray"),
            proprietary_bank_transaction_code=f.str("proprietaryBankTransactionCode"),
            original_amount=f.obj("originalAmount", Amount.from_json),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
            raw=data,
        )

    @property
    def additional_information_proprietary(self) -> dict[str, Any]:
        """The ``additionalInformationProprietaryX`` properties, when the bank sent any."""
        return {k: v for k, v in self.extra.items() if k.startswith("additionalInformationProprietary")}


@dataclass(frozen=True)
class CardTransaction:
    transaction_amount: Amount
    card_transaction_id: str | None = None
    transaction_date: date | None = None
    booking_date: date | None = None
    original_amount: Amount | None = None
    masked_pan: str | None = None
    transaction_details: str | None = None
    proprietary_bank_transaction_code: str | None = None
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The bank's record as received (what the portal stores beside the fields it reads).
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "cardTransaction") -> CardTransaction:
        f = _Fields(data, where)
        return cls(
            transaction_amount=f.obj("transactionAmount", Amount.from_json, required=True),  # type: ignore[arg-type]
            card_transaction_id=f.str("cardTransactionId"),
            transaction_date=f.date("transactionDate"),
            booking_date=f.date("bookingDate"),
            original_amount=f.obj("originalAmount", Amount.from_json),
            masked_pan=f.str("maskedPan"),
            transaction_details=f.str("transactionDetails"),
            proprietary_bank_transaction_code=f.str("proprietaryBankTransactionCode"),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
            raw=data,
        )


def _page_lists(data: Any, where: str, key: str, reader: Callable[[Any, str], T]) -> dict[str, Any]:
    """The fields of a transactions page: the account, booked and pending (each item strict), links, the rest."""
    f = _Fields(data, where)
    account = f.obj("account", AccountReference.from_json) or f.obj("cardAccount", AccountReference.from_json)
    inner = _Fields(f._pop(key) or {}, f"{where}.{key}")
    booked = inner.list("booked", reader)
    pending = inner.list("pending", reader)
    links = {**f.links(), **inner.links()}
    extra = f.extra()
    if inner.extra():
        extra[key] = inner.extra()
    return {
        "account": account,
        "booked": booked,
        "pending": pending,
        "links": links,
        "extra": extra,
        "unread": f.unread,
    }


@dataclass(frozen=True)
class TransactionList:
    """Transactions of an account: one page, or all pages merged (``pages`` says how many were read)."""

    account: AccountReference | None
    booked: list[Transaction]
    pending: list[Transaction]
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)
    pages: int = 1

    @classmethod
    def from_json(cls, data: Any, where: str = "transactions") -> TransactionList:
        return cls(**_page_lists(data, where, "transactions", Transaction.from_json))

    @property
    def next_link(self) -> str | None:
        return _href(self.links, "next")


@dataclass(frozen=True)
class CardTransactionList:
    account: AccountReference | None
    booked: list[CardTransaction]
    pending: list[CardTransaction]
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)
    pages: int = 1

    @classmethod
    def from_json(cls, data: Any, where: str = "cardTransactions") -> CardTransactionList:
        return cls(**_page_lists(data, where, "cardTransactions", CardTransaction.from_json))

    @property
    def next_link(self) -> str | None:
        return _href(self.links, "next")


@dataclass(frozen=True)
class Agreement:
    """A (corporate or private) agreement (spec 2.8): id, name, the accounts it engages, links."""

    id: str
    name: str | None = None
    engagements: list[str] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "agreement") -> Agreement:
        f = _Fields(data, where)
        agreement_id = f.str("id") or f.str("agreementId")
        if not agreement_id:
            raise ModelError(f"{where}.id: required")
        return cls(
            id=agreement_id,
            name=f.str("name"),
            engagements=f.strings("engagements"),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )


@dataclass(frozen=True)
class SandboxCustomer:
    """Element of the sandbox customer listing (spec 2.8)."""

    customer_id: str
    customer_number: str
    customer_type: str
    customer_name: str
    agreements: list[Agreement] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    card_accounts: list[str] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "customer") -> SandboxCustomer:
        f = _Fields(data, where)
        return cls(
            customer_id=f.str("customerId", required=True) or "",
            customer_number=f.str("customerNumber", required=True) or "",
            customer_type=f.str("customerType", required=True) or "",
            customer_name=f.str("customerName", required=True) or "",
            agreements=f.list("agreements", Agreement.from_json),
            accounts=f.strings("accounts"),
            card_accounts=f.strings("cardAccounts"),
            links=f.links(),
            extra=f.extra(),
            unread=f.unread,
        )


def _whole_number(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelError(f"{where}: expected a whole number")
    return value


@dataclass(frozen=True)
class SandboxClock:
    """The sandbox bank's business clock (GET /v1/sandbox/clock) and, after its batches ran
    (POST /v1/sandbox/batches/run), how many payment steps they took and when the next batch is due."""

    now: datetime
    offset_seconds: int
    payment_steps: int | None = None  # None: no batch ran (a clock read)
    next_batch_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    #: Optional fields sent but not readable: name -> the value as received (the field itself reads None).
    unread: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "clock") -> SandboxClock:
        f = _Fields(data, where)
        return cls(
            now=f.datetime("now", required=True),  # type: ignore[arg-type]
            offset_seconds=_whole_number(f._pop("offsetSeconds"), f"{where}.offsetSeconds") or 0,
            payment_steps=_whole_number(f._pop("paymentSteps"), f"{where}.paymentSteps"),
            next_batch_at=f.datetime("nextBatchAt"),
            extra=f.extra(),
            unread=f.unread,
        )


def read_list(data: Any, key: str, reader: Callable[[Any, str], T], where: str) -> list[T]:
    """A list answer, whether the bank sends a bare array or an object holding it under ``key``."""
    if isinstance(data, Mapping):
        data = data.get(key)
    if not isinstance(data, list):
        raise ModelError(f"{where}: expected an array (or an object with {key!r})")
    return [reader(item, f"{where}[{i}]") for i, item in enumerate(data)]


def unique(items: Iterable[T], key: Callable[[T], Any]) -> list[T]:
    seen: set[Any] = set()
    out = []
    for item in items:
        k = key(item)
        if k in seen:
            continue
        seen.add(k)
        out.append(item)
    return out
