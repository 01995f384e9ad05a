"""Identifiers as the bank forms them: opaque resource ids, Norwegian account numbers, IBANs and KIDs.

PSU-IDs and agreement ids (PSU-Corporate-ID) are not formed here: they are random (uuid4, the models' defaults)
and kept in the database, so nothing public (a seed, a customer number, a TPP's name) leads to them.
"""

from __future__ import annotations

import base64
import hashlib

from stdnum import iban as stdnum_iban
from stdnum import luhn

BANK_CODE = "9710"  # the sandbox bank's registry number (first four digits of its account numbers)
BIC = "SANDNOKKXXX"


def opaque_id(*parts: object) -> str:
    """A stable opaque id like the bank's (``enc!!...=``): deterministic from ``parts``, URL-path safe."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return "enc!!" + base64.urlsafe_b64encode(digest[:16]).decode("ascii")


def _mod11(digits: str) -> int | None:
    weights = (5, 4, 3, 2, 7, 6, 5, 4, 3, 2)
    remainder = sum(int(d) * w for d, w in zip(digits, weights, strict=True)) % 11
    check = 11 - remainder
    if check == 11:
        return 0
    if check == 10:
        return None
    return check


def norwegian_bban(*parts: object, bank_code: str = BANK_CODE) -> str:
    """An 11-digit Norwegian account number with a valid MOD11 check digit, deterministic from ``parts``."""
    counter = 0
    while True:
        digest = hashlib.sha256("|".join(str(p) for p in (*parts, counter)).encode("utf-8")).hexdigest()
        body = bank_code + str(int(digest, 16))[:6]
        check = _mod11(body)
        if check is not None:
            return body + str(check)
        counter += 1


def norwegian_iban(bban: str) -> str:
    return "NO" + stdnum_iban.calc_check_digits("NO00" + bban) + bban


def kid(reference: str) -> str:
    """A KID (customer reference on Norwegian invoices) with its MOD10 (Luhn) check digit."""
    return reference + luhn.calc_check_digit(reference)


def kid_mod11_check(reference: str) -> str:
    """The MOD11 check character of a KID: weights 2, 3, 4, 5, 6, 7 from the right, repeating; "-" for 10."""
    total = sum(int(digit) * (2 + position % 6) for position, digit in enumerate(reversed(reference)))
    remainder = (11 - total % 11) % 11
    return "-" if remainder == 10 else str(remainder)


def kid_is_valid(value: str) -> bool:
    """A KID is 2 to 25 characters, digits but for a MOD11 "-" at the end, its last one a MOD10 (Luhn) or MOD11
    check character (the issuer's agreement with its bank says which; a bank accepts either)."""
    if not 2 <= len(value) <= 25 or not value[:-1].isdigit() or not value[:-1].isascii():
        return False
    body, check = value[:-1], value[-1]
    if check == "-":
        return kid_mod11_check(body) == "-"
    if not (check.isdigit() and check.isascii()):
        return False
    return luhn.calc_check_digit(body) == check or kid_mod11_check(body) == check
