"""The bank's enumerations and limits for the cross-border product, as the portal uses them
(docs/bank-interface.md, spec 2.1-2.6 and 8).

The bank's lists themselves (currencies, countries, purpose codes, the tax authority's codes) are
``bank_spec``'s, the one module the portal, the sandbox bank and the tests read; they are named here too, so the
form, the validators and the request builder read what the bank accepts from one place. What is the portal's
own lives here: the labels shown to people (translatable), the groups of the select, the field limits.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

import bank_spec
from bank_spec import COUNTRIES, COUNTRY_SET, CURRENCIES, CURRENCY_SET

__all__ = [
    "COUNTRIES",
    "COUNTRY_SET",
    "CURRENCIES",
    "CURRENCY_SET",
    "NOK",
    "REGULATORY_CODE_GROUPS",
    "REGULATORY_CODE_NORWEGIAN_NAMES",
    "Limits",
    "PurposeCode",
    "RegulatoryReportingCode",
    "purpose_code_name",
    "regulatory_code_name",
]

# The domestic currency: the regulatory threshold is stated in it and the NOK equivalent is computed into it.
NOK = "NOK"

# purposeCode (spec 2.1): the label of each of the bank's codes. The choices follow bank_spec's list, in its
# order; a code the bank adds without a label here stops the portal at start-up (KeyError), not at a payment.
PURPOSE_CODE_LABELS = {
    "INVS": _("Investment and securities"),
    "SALA": _("Salary"),
    "IDCP": _("Irrevocable debit card payment"),
    "CASH": _("Cash management transfer"),
    "CORT": _("Trade settlement"),
    "INTC": _("Intra-company payment"),
    "PENS": _("Pension"),
    "SSBE": _("Social security benefit"),
    "SUPP": _("Supplier payment"),
    "TAXS": _("Tax"),
    "TREA": _("Treasury payment"),
    "VATX": _("Value added tax"),
    "LOAN": _("Loan"),
    "OTHR": _("Other"),
}
PurposeCode = models.TextChoices(
    "PurposeCode", [(code, (code, PURPOSE_CODE_LABELS[code])) for code in bank_spec.PURPOSE_CODES]
)

# regulatoryReportingCode (spec 2.1; docs/bank-interface.md, reference 7): the tax authority's "codes for payment
# type". The label is the meaning in the user's language; the authority's own Norwegian name is kept verbatim in
# ``REGULATORY_CODE_NORWEGIAN_NAMES`` (it is the official name, shown as is in every language).
REGULATORY_CODE_LABELS = {
    "14": _("Purchase or sale of goods"),
    "26": _("Rent and leases, including patents, licence fees and royalties"),
    "29": _("Other purchase or sale of services"),
    "31": _("Interest"),
    "35": _("Dividends"),
    "38": _("Other return on capital"),
    "41": _("Real estate and capitalised rights abroad"),
    "43": _("Direct investment in shares"),
    "45": _("Direct investment, other capital (intra-group loans)"),
    "51": _("Portfolio investment in shares and fund units"),
    "52": _("Portfolio investment in bonds and certificates"),
    "53": _("Portfolio investment in derivatives"),
    "71": _("Life insurance and pensions"),
    "79": _("Other financial investments"),
    "81": _("Salary"),
    "82": _("Inheritance, gifts and the like"),
}
RegulatoryReportingCode = models.TextChoices(
    "RegulatoryReportingCode",
    [(f"CODE_{code}", (code, REGULATORY_CODE_LABELS[code])) for code in bank_spec.REGULATORY_CODES],
)


# The authority's names by code (docs/bank-interface.md, reference 7): official Norwegian names, not translated.
REGULATORY_CODE_NORWEGIAN_NAMES: dict[str, str] = {
    "14": "Kjøp/salg av varer",
    "26": "Leie",
    "29": "Annet kjøp/salg av tjenester",
    "31": "Renter",
    "35": "Utbytte",
    "38": "Annen kapitalavkastning",
    "41": "Kjøp/salg av fast eiendom og aktiverte rettigheter i utlandet",
    "43": "Direkteinvesteringer i aksjer mm.",
    "45": "Direkteinvesteringer i annen kapital",
    "51": "Porteføljeinvestering i aksjer og verdipapirfondsandeler",
    "52": "Porteføljeinvesteringer i obligasjoner og sertifikater",
    "53": "Porteføljeinvesteringer i derivater",
    "71": "Livsforsikring/pensjon",
    "79": "Andre finansinvesteringer",
    "81": "Lønn",
    "82": "Arv, gave, med mer",
}


def regulatory_code_name(code: str, *, with_norwegian: bool = False) -> str:
    """ "29 - Other purchase or sale of services" in the active language; with the authority's Norwegian name in
    brackets when asked, unless the page is in Norwegian (the label is then Norwegian words already: "29 - Annet
    kjøp/salg av tjenester", once). A code without a label is given as is."""
    label = dict(RegulatoryReportingCode.choices).get(code)
    if label is None:
        return code
    text = f"{code} - {label}"
    norwegian = REGULATORY_CODE_NORWEGIAN_NAMES.get(code, "")
    in_norwegian = (get_language() or "").startswith(("nb", "nn", "no"))
    if with_norwegian and norwegian and not in_norwegian:
        text += f" ({norwegian})"
    return text


def purpose_code_name(code: str) -> str:
    """ "Supplier payment (SUPP)" in the active language; a code without a label as is."""
    label = dict(PurposeCode.choices).get(code)
    return f"{label} ({code})" if label is not None else code


# The authority's grouping of the codes (docs/bank-interface.md, reference 7), for an <optgroup> select.
REGULATORY_CODE_GROUPS: tuple[tuple[object, tuple[str, ...]], ...] = (
    (_("Goods"), ("14",)),
    (_("Services"), ("26", "29")),
    (_("Income"), ("31", "35", "38")),
    (_("Capital"), ("41", "43", "45", "51", "52", "53", "71", "79")),
    (_("Transfers"), ("81", "82")),
)


# --- spec section 8 (and 2.1-2.4): field limits ------------------------------------------------------------
class Limits:
    """Maximum (and minimum) lengths in characters, and the amount's contract precision."""

    CREDITOR_NAME_MAX = 70
    STREET_MAX = 70
    BBAN_MAX = 30
    IBAN_MAX = 34
    REMITTANCE_MIN = 1
    REMITTANCE_MAX = 140
    # The message the user may type: the portal puts its payment reference (REFERENCE_LENGTH characters and a
    # space) in front of it, so the payment can be found in the debtor account's transactions.
    REFERENCE_LENGTH = 10
    MESSAGE_MAX = REMITTANCE_MAX - REFERENCE_LENGTH - 1
    REGULATORY_INFORMATION_MAX = 140
    COUNTRY_LENGTH = 2
    CURRENCY_LENGTH = 3
    # Not limited by the spec; bounds of our own so a field cannot carry an arbitrarily long value.
    BUILDING_NUMBER_MAX = 16
    POSTAL_CODE_MAX = 16
    CITY_MAX = 35
    BIC_MAX = 11
    # instructedAmount.amount: contract precision 18 digits with scale 5 (spec 2.2).
    AMOUNT_MAX_DIGITS = 18
    AMOUNT_DECIMAL_PLACES = 5
