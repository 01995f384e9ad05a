"""The bank's lists are written once (bank_spec), and the portal and the sandbox bank accept exactly them.

bank_spec holds the spec's lists (docs/bank-interface.md) word for word and in order; the fingerprints below pin
them, so an edit to a list (a code added, removed, misspelt or moved) fails here until it is made on purpose,
against the spec.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import hashlib
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

import bank_spec
from bank_simulator.pis import tables
from bank_simulator.pis.validation import PaymentRejected, validate
from payments import spec
from payments import validators as v
from payments.instructions import AccountReference, CreditorAddress, PaymentInstruction, initiation_body

ROOT = Path(__file__).resolve().parents[2]

# name -> (length, sha256 of the codes joined by single spaces, first code, last code), as
# docs/bank-interface.md, spec 2.1, 2.5 and 2.6 list them.
FINGERPRINTS = {
    "CURRENCIES": (162, "416e053e66e29ae4d69c592d09f1f022b2aa0b987806315b1379d37a3d584f0a", "AED", "ZWD"),
    "COUNTRIES": (249, "a43bbc3494aad0e4b3b1957b2134c4341d8b792c048ea1c8f0a2bf63a4f2ddf8", "AF", "ZW"),
    "PURPOSE_CODES": (14, "e0cbd4b614a64d6a35c2d57e597d440759176f0bc03af1f64a1a6a8ec695b5bd", "INVS", "OTHR"),
    "REGULATORY_CODES": (16, "97af9367bfd84d188bc9f3fd325e1474cbf9c3a75df7c77363b93016244cbe88", "14", "82"),
}
NOT_LISTED = ["XXX", "EURO", "nok", "", "BYN", "VES"]  # BYN, VES: current ISO codes the bank's list lacks
TODAY = dt.date(2026, 3, 2)


@pytest.mark.parametrize("name", sorted(FINGERPRINTS))
def test_the_lists_are_the_specs_word_for_word(name):
    codes = getattr(bank_spec, name)
    length, digest, first, last = FINGERPRINTS[name]
    assert isinstance(codes, tuple) and len(codes) == len(set(codes)) == length
    assert (codes[0], codes[-1]) == (first, last)
    assert hashlib.sha256(" ".join(codes).encode()).hexdigest() == digest
    assert bank_spec.CURRENCY_SET == frozenset(bank_spec.CURRENCIES)
    assert bank_spec.COUNTRY_SET == frozenset(bank_spec.COUNTRIES)
    assert bank_spec.PRODUCTS == ("norwegian-cross-border-credit-transfers", "norwegian-domestic-credit-transfers")


def test_bank_spec_imports_nothing_of_this_repository():
    own = {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists() or path.suffix == ".py"}
    own.discard("bank_spec")
    for source in (ROOT / "bank_spec").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{source}: a relative import"
                names = [node.module or ""]
            else:
                continue
            assert not {name.split(".")[0] for name in names} & (own | {"django"}), f"{source}: {names}"


def test_the_portal_and_the_sandbox_bank_read_the_one_list():
    assert spec.CURRENCIES is bank_spec.CURRENCIES and spec.COUNTRIES is bank_spec.COUNTRIES
    assert tables.CURRENCIES is bank_spec.CURRENCY_SET and tables.COUNTRIES is bank_spec.COUNTRY_SET
    assert tuple(spec.PurposeCode.values) == bank_spec.PURPOSE_CODES
    assert tuple(spec.RegulatoryReportingCode.values) == bank_spec.REGULATORY_CODES
    assert tables.PURPOSE_CODES == frozenset(bank_spec.PURPOSE_CODES)
    assert tables.REGULATORY_CODES == frozenset(bank_spec.REGULATORY_CODES)
    assert (tables.CROSS_BORDER, tables.DOMESTIC) == bank_spec.PRODUCTS
    assert set(tables.NOK_PER_UNIT) == bank_spec.CURRENCY_SET  # the sandbox bank has a rate for each


def _portal_accepts(check, value) -> bool:
    try:
        check(value)
    except ValidationError:
        return False
    return True


def _bank_accepts(body: dict) -> bool:
    try:
        validate(body, product=bank_spec.CROSS_BORDER, today=TODAY)
    except PaymentRejected:
        return False
    return True


def _body(**changes) -> dict:
    """The portal's body of a cross-border payment the bank accepts as it is."""
    instruction = PaymentInstruction(
        debtor_account=AccountReference(currency="NOK", iban="NO9386011117947"),
        amount=Decimal("150000"),
        currency="NOK",
        creditor_name="Müller Maschinenbau GmbH",
        creditor_account=AccountReference(currency="EUR", iban="DE89370400440532013000"),
        creditor_address=CreditorAddress(country="DE", city="Köln"),
        purpose_code="SUPP",
        regulatory_reporting_code="29",
        regulatory_reporting_information="Engineering services",
    )
    return initiation_body(dataclasses.replace(instruction, **changes))


def test_both_accept_exactly_the_listed_currencies():
    assert _bank_accepts(_body())
    for code in [*bank_spec.CURRENCIES, *NOT_LISTED]:
        listed = code in bank_spec.CURRENCY_SET
        assert _portal_accepts(v.validate_currency, code) is listed, code
        account = AccountReference(currency=code, iban="DE89370400440532013000")
        assert _bank_accepts(_body(creditor_account=account)) is listed, code


def test_both_accept_exactly_the_listed_countries():
    for code in [*bank_spec.COUNTRIES, "XX", "no", "NOR", "UK"]:
        listed = code in bank_spec.COUNTRY_SET
        assert _portal_accepts(v.validate_country, code) is listed, code
        assert _bank_accepts(_body(creditor_address=CreditorAddress(country=code))) is listed, code


def test_both_accept_exactly_the_listed_purpose_and_regulatory_codes():
    for code in [*bank_spec.PURPOSE_CODES, "GDDS", "supp", "OTHER"]:
        listed = code in bank_spec.PURPOSE_CODES
        assert _portal_accepts(v.validate_purpose_code, code) is listed, code
        assert _bank_accepts(_body(purpose_code=code)) is listed, code
    for code in [*bank_spec.REGULATORY_CODES, "10", "99", "014"]:
        listed = code in bank_spec.REGULATORY_CODES
        assert _portal_accepts(v.validate_regulatory_reporting_code, code) is listed, code
        assert _bank_accepts(_body(regulatory_reporting_code=code)) is listed, code
