"""Validation of a payment initiation body: every rule of docs/bank-interface.md, spec 2.1-2.6 and 8.

Each violation is one tppMessage (400 FORMAT_ERROR) whose ``path`` names the field, e.g.
``instructedAmount.amount`` or ``creditorAddress.country``; all violations of a body are reported together.
A requested execution date in the past, or more than a year ahead, is 400 EXECUTION_DATE_INVALID.

Where the specification is silent the simulator states its choice here:
- unknown fields are ignored and not stored (the bank's answer to GET holds the fields it knows);
- an amount has at most as many fraction digits as the currency's ISO 4217 minor units ("10" is a valid NOK
  amount, "10.5" too, "10.555" is not), and is greater than zero;
- an account reference needs an iban or a bban; when both are given both are checked;
- the domestic product (norwegian-domestic-credit-transfers) pays NOK to a Norwegian account (an NO iban or an
  11-digit account number with its MOD11 check digit) and needs neither creditorAgent nor regulatory reporting;
- buildingNumber, postalCode and city have no stated limit: at most 140 characters, like the other free texts;
- a KID (the Norwegian customer reference of an invoice) is sent as the spec's transactions carry it:
  ``remittanceInformationStructuredArray: [{"reference": "<KID>", "referenceType": "KID"}]``, on the domestic
  product only; a KID that is not 2-25 digits with a valid MOD10 or MOD11 check digit is 400 KID_INVALID, and
  a payment to a creditor account that collects by KID (tables.KID_CREDITOR_ACCOUNTS) without one is
  400 KID_MISSING (spec: "KID errors | 400").
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from stdnum import bic as stdnum_bic
from stdnum import iban as stdnum_iban
from stdnum.no import kontonr

from bank_simulator.errors import ApiError
from bank_simulator.identifiers import kid_is_valid
from bank_simulator.pis import tables

_AMOUNT = re.compile(r"^(0|[1-9][0-9]*)(\.([0-9]+))?$")
_IBAN = re.compile(r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}$")
_BBAN = re.compile(r"^[A-Za-z0-9]{1,30}$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
FREE_TEXT_LIMIT = 140


@dataclass(frozen=True)
class Violation:
    path: str
    text: str
    code: str = "FORMAT_ERROR"


class PaymentRejected(ApiError):
    """400 with one tppMessage per violation (the first one's code is the answer's code)."""

    def __init__(self, violations: list[Violation]) -> None:
        first = violations[0]
        super().__init__(400, first.code, first.text, path=first.path)
        self.violations = violations

    def body(self) -> dict[str, Any]:
        messages = [ApiError(400, v.code, v.text, path=v.path).body()["tppMessages"][0] for v in self.violations]
        return {"tppMessages": messages}


@dataclass(frozen=True)
class AccountRef:
    iban: str
    bban: str
    currency: str

    def as_json(self) -> dict[str, str]:
        data = {}
        if self.iban:
            data["iban"] = self.iban
        if self.bban:
            data["bban"] = self.bban
        data["currency"] = self.currency
        return data


@dataclass(frozen=True)
class PaymentOrder:
    """A valid initiation body, parsed; ``submitted`` holds the known fields as sent (returned by GET)."""

    amount: Decimal
    currency: str
    creditor_name: str
    creditor_account: AccountRef
    debtor_account: AccountRef
    creditor_agent: str = ""
    execution_date: dt.date | None = None
    submitted: dict[str, Any] = field(default_factory=dict)


class _Checker:
    def __init__(self) -> None:
        self.violations: list[Violation] = []

    def fail(self, path: str, text: str, code: str = "FORMAT_ERROR") -> None:
        self.violations.append(Violation(path, text, code))

    def string(
        self, data: dict[str, Any], name: str, path: str, *, required: bool, max_length: int, min_length: int = 0
    ) -> str | None:
        value = data.get(name)
        if value is None:
            if required:
                self.fail(path, f"{path} is required.")
            return None
        if not isinstance(value, str):
            self.fail(path, f"{path} must be a string.")
            return None
        if len(value) > max_length:
            self.fail(path, f"{path} has at most {max_length} characters (this has {len(value)}).")
            return None
        if len(value.strip()) < max(min_length, 1 if required or min_length else 0):
            self.fail(path, f"{path} must not be empty.")
            return None
        return value

    def currency(self, data: dict[str, Any], path: str) -> str | None:
        value = self.string(data, "currency", f"{path}.currency", required=True, max_length=3)
        if value is None:
            return None
        if value not in tables.CURRENCIES:
            self.fail(
                f"{path}.currency", f"{value} is not a currency the bank accepts (ISO 4217 code of its list)."
            )
            return None
        return value

    def obj(self, data: dict[str, Any], name: str, *, required: bool) -> dict[str, Any] | None:
        value = data.get(name)
        if value is None:
            if required:
                self.fail(name, f"{name} is required.")
            return None
        if not isinstance(value, dict):
            self.fail(name, f"{name} must be an object.")
            return None
        return value


def parse_amount(raw: Any, currency: str | None) -> tuple[Decimal | None, str | None]:
    """The amount, or the reason it is refused (spec 2.2: decimal string, precision 18 scale 5, minor units)."""
    if not isinstance(raw, str):
        return None, 'amount must be a decimal number written as a string, e.g. "1250.00".'
    match = _AMOUNT.match(raw)
    if match is None:
        return None, "amount must be a decimal number written as a string with a '.' separator, e.g. \"1250.00\"."
    whole, fraction = match.group(1), match.group(3) or ""
    if len(fraction) > tables.SCALE or len(whole) > tables.PRECISION - tables.SCALE:
        return None, (
            f"amount exceeds the contract precision {tables.PRECISION} with scale {tables.SCALE}: at most "
            f"{tables.PRECISION - tables.SCALE} digits before and {tables.SCALE} after the decimal point."
        )
    if currency is not None:
        units = tables.minor_units(currency)
        if len(fraction) > units:
            return None, f"{currency} amounts have at most {units} fraction digits (ISO 4217 minor units)."
    try:
        value = Decimal(raw)
    except InvalidOperation:  # the pattern above admits only valid decimals; kept for safety of the parse
        return None, "amount is not a decimal number."
    if value <= 0:
        return None, "amount must be greater than zero."
    return value, None


def _account(check: _Checker, data: dict[str, Any], name: str) -> AccountRef | None:
    ref = check.obj(data, name, required=True)
    if ref is None:
        return None
    before = len(check.violations)
    iban = check.string(ref, "iban", f"{name}.iban", required=False, max_length=34)
    bban = check.string(ref, "bban", f"{name}.bban", required=False, max_length=30)
    currency = check.currency(ref, name)
    if iban is not None and not (_IBAN.match(iban) and stdnum_iban.is_valid(iban)):
        check.fail(f"{name}.iban", "iban is not a valid IBAN (ISO 13616-1 structure and check digits, no spaces).")
    if bban is not None and not _BBAN.match(bban):
        check.fail(f"{name}.bban", "bban holds letters and digits only, at most 30 of them.")
    if ref.get("iban") is None and ref.get("bban") is None:
        check.fail(name, f"{name} must give an iban or a bban.")
    if len(check.violations) > before:
        return None
    return AccountRef(iban=iban or "", bban=bban or "", currency=currency or "")


STRUCTURED = "remittanceInformationStructuredArray"
_KID_FORM = re.compile(r"^[0-9]{1,24}[0-9-]$")


def _kid(check: _Checker, body: dict[str, Any], *, product: str, creditor: AccountRef | None) -> str:
    """The KID of the body (``remittanceInformationStructuredArray`` with referenceType KID), checked; ""."""
    entries = body.get(STRUCTURED)
    kid = ""
    if entries is not None:
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
            check.fail(STRUCTURED, f"{STRUCTURED} must be a non-empty array of objects.")
            return ""
        for index, entry in enumerate(entries):
            path = f"{STRUCTURED}[{index}].reference"
            if entry.get("referenceType") != "KID":
                check.fail(f"{STRUCTURED}[{index}].referenceType", "referenceType must be KID at this bank.")
                continue
            reference = entry.get("reference")
            if product != tables.DOMESTIC:
                check.fail(
                    path, "A KID is a Norwegian reference: send it with the domestic product.", "KID_INVALID"
                )
            elif not isinstance(reference, str) or not _KID_FORM.match(reference) or len(reference) < 2:
                check.fail(path, "A KID has 2 to 25 digits.", "KID_INVALID")
            elif not kid_is_valid(reference):
                check.fail(path, f"KID {reference} has a wrong check digit (MOD10 or MOD11).", "KID_INVALID")
            elif kid:
                check.fail(path, "Give one KID only.", "KID_INVALID")
            else:
                kid = reference
    if product == tables.DOMESTIC and creditor is not None and entries is None:
        account = creditor.bban or (creditor.iban[4:] if creditor.iban.startswith("NO") else "")
        if account in tables.KID_CREDITOR_ACCOUNTS:
            check.fail(
                STRUCTURED,
                f"{tables.KID_CREDITOR_ACCOUNTS[account]} collects by KID: give the KID of the invoice.",
                "KID_MISSING",
            )
    return kid


def latest_execution_date(today: dt.date) -> dt.date:
    """The same day a year later (28 February for 29 February): later execution dates are refused."""
    try:
        return today.replace(year=today.year + 1)
    except ValueError:
        return today.replace(year=today.year + 1, day=28)


# Whole on purpose: every rule of spec 2.1-2.6 and 8 in the specification's order, each adding its tppMessage to
# one answer; cut into parts, the order the PSU's errors come in would be spread over several functions.
def validate(body: Any, *, product: str, today: dt.date) -> PaymentOrder:
    """The parsed order, or ``PaymentRejected`` listing every violation."""
    check = _Checker()
    if not isinstance(body, dict):
        raise PaymentRejected([Violation("body", "The payment initiation body must be a JSON object.")])
    submitted: dict[str, Any] = {}

    amount_obj = check.obj(body, "instructedAmount", required=True)
    amount: Decimal | None = None
    currency: str | None = None
    if amount_obj is not None:
        currency = check.currency(amount_obj, "instructedAmount")
        if "amount" not in amount_obj or amount_obj["amount"] is None:
            check.fail("instructedAmount.amount", "instructedAmount.amount is required.")
        else:
            amount, reason = parse_amount(amount_obj["amount"], currency)
            if reason:
                check.fail("instructedAmount.amount", reason)
        if amount is not None and currency is not None:
            submitted["instructedAmount"] = {"amount": amount_obj["amount"], "currency": currency}
        if product == tables.DOMESTIC and currency is not None and currency != "NOK":
            check.fail("instructedAmount.currency", "The domestic product pays NOK only.")

    creditor_name = check.string(body, "creditorName", "creditorName", required=True, max_length=70)
    creditor = _account(check, body, "creditorAccount")
    debtor = _account(check, body, "debtorAccount")
    agent = check.string(body, "creditorAgent", "creditorAgent", required=False, max_length=11)
    if agent is not None and not stdnum_bic.is_valid(agent):
        check.fail("creditorAgent", "creditorAgent must be a BIC (8 or 11 characters, e.g. DNBANOKKXXX).")
        agent = None
    if creditor is not None:
        if product == tables.DOMESTIC:
            norwegian = creditor.iban.startswith("NO") if creditor.iban else kontonr.is_valid(creditor.bban)
            if not norwegian:
                check.fail(
                    "creditorAccount",
                    "The domestic product pays to a Norwegian account: an NO iban or an 11-digit account number.",
                )
        elif creditor.bban and not creditor.iban and body.get("creditorAgent") is None:
            check.fail("creditorAgent", "creditorAgent (the creditor bank's BIC) is required with a bban.")

    address = check.obj(body, "creditorAddress", required=False)
    if address is not None:
        check.string(address, "street", "creditorAddress.street", required=False, max_length=70)
        for part in ("buildingNumber", "postalCode", "city"):
            check.string(address, part, f"creditorAddress.{part}", required=False, max_length=FREE_TEXT_LIMIT)
        country = check.string(address, "country", "creditorAddress.country", required=True, max_length=2)
        if country is not None and country not in tables.COUNTRIES:
            check.fail("creditorAddress.country", f"{country} is not a country the bank accepts (ISO 3166-1).")

    check.string(
        body,
        "remittanceInformationUnstructured",
        "remittanceInformationUnstructured",
        required=False,
        max_length=FREE_TEXT_LIMIT,
        min_length=1,
    )
    kid = _kid(check, body, product=product, creditor=creditor)
    purpose = check.string(body, "purposeCode", "purposeCode", required=False, max_length=4)
    if purpose is not None and purpose not in tables.PURPOSE_CODES:
        check.fail("purposeCode", f"purposeCode must be one of {' '.join(sorted(tables.PURPOSE_CODES))}.")

    execution_date: dt.date | None = None
    raw_date = check.string(
        body, "requestedExecutionDate", "requestedExecutionDate", required=False, max_length=10
    )
    if raw_date is not None:
        try:
            if not _DATE.match(raw_date):
                raise ValueError
            execution_date = dt.date.fromisoformat(raw_date)
        except ValueError:
            check.fail("requestedExecutionDate", "requestedExecutionDate must be an ISO 8601 date (YYYY-MM-DD).")
        else:
            if execution_date < today:
                check.fail(
                    "requestedExecutionDate",
                    f"requestedExecutionDate {raw_date} is in the past (the bank's date is {today.isoformat()}).",
                    code="EXECUTION_DATE_INVALID",
                )
            elif execution_date > latest_execution_date(today):
                check.fail(
                    "requestedExecutionDate",
                    f"requestedExecutionDate {raw_date} is more than a year ahead (the latest is "
                    f"{latest_execution_date(today).isoformat()}).",
                    code="EXECUTION_DATE_INVALID",
                )

    reg_code = check.string(
        body, "regulatoryReportingCode", "regulatoryReportingCode", required=False, max_length=2
    )
    if reg_code is not None and reg_code not in tables.REGULATORY_CODES:
        check.fail(
            "regulatoryReportingCode",
            f"regulatoryReportingCode must be one of {' '.join(sorted(tables.REGULATORY_CODES))}.",
        )
    check.string(
        body,
        "regulatoryReportingInformation",
        "regulatoryReportingInformation",
        required=False,
        max_length=FREE_TEXT_LIMIT,
        min_length=1,
    )
    if product == tables.CROSS_BORDER and amount is not None and currency is not None:
        nok = tables.to_nok(amount, currency)
        if nok >= tables.REGULATORY_THRESHOLD_NOK:
            why = (
                f"required for transfers of {tables.REGULATORY_THRESHOLD_NOK:,.0f} NOK or more "
                f"(this is {tables.quantize(nok, 'NOK'):,} NOK at the bank's rate)"
            )
            if body.get("regulatoryReportingCode") is None:
                check.fail("regulatoryReportingCode", f"regulatoryReportingCode is {why}.")
            if body.get("regulatoryReportingInformation") is None:
                check.fail("regulatoryReportingInformation", f"regulatoryReportingInformation is {why}.")

    if check.violations:
        # EXECUTION_DATE_INVALID answers alone when it is the only problem; otherwise FORMAT_ERROR leads.
        check.violations.sort(key=lambda v: v.code == "EXECUTION_DATE_INVALID")
        raise PaymentRejected(check.violations)
    assert amount is not None and currency is not None and creditor_name is not None
    assert creditor is not None and debtor is not None
    for name in (
        "creditorName",
        "creditorAgent",
        "remittanceInformationUnstructured",
        "purposeCode",
        "requestedExecutionDate",
        "regulatoryReportingCode",
        "regulatoryReportingInformation",
    ):
        if body.get(name) is not None:
            submitted[name] = body[name]
    if kid:
        submitted[STRUCTURED] = [{"reference": kid, "referenceType": "KID"}]
    submitted["creditorAccount"] = creditor.as_json()
    submitted["debtorAccount"] = debtor.as_json()
    if address is not None:
        submitted["creditorAddress"] = {
            k: address[k] for k in ("street", "buildingNumber", "postalCode", "city", "country") if k in address
        }
    return PaymentOrder(
        amount=amount,
        currency=currency,
        creditor_name=creditor_name,
        creditor_account=creditor,
        debtor_account=debtor,
        creditor_agent=agent or "",
        execution_date=execution_date,
        submitted=submitted,
    )
