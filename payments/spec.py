"""The bank's enumerations and limits for the cross-border product, as data (bank-api-spec.md 2.1-2.6 and 8).

Everything the form, the validators and the request builder need to know about what the bank accepts lives
here, so a change in the bank's specification is a change in one file. Codes are the bank's; the labels
shown to people are translatable.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

# --- spec 2.5: Currency values (ISO 4217 alphabetic codes, exactly the bank's list, in its order) ---------
CURRENCIES: tuple[str, ...] = tuple(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYR BZD CAD
    CDF CHF CLP CNY COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GGP GHS GIP GMD
    GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS IMP INR IQD IRR ISK JEP JMD JOD JPY KES KGS KHR KMF KPW KRW KWD
    KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRO MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK
    NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLL SOS SPL SRD
    STD SVC SYP SZL THB TJS TMT TND TOP TRY TTD TVD TWD TZS UAH UGX USD UYU UZS VEF VND VUV WST XAF XCD XDR
    XOF XPF YER ZAR ZMW ZWD
    """.split()
)
CURRENCY_SET: frozenset[str] = frozenset(CURRENCIES)

# --- spec 2.6: Country values (ISO 3166-1 alpha-2, exactly the bank's list, in its order) -----------------
COUNTRIES: tuple[str, ...] = tuple(
    """
    AF AX AL DZ AS AD AO AI AQ AG AR AM AW AU AT AZ BH BS BD BB BY BE BZ BJ BM BT BO BQ BA BW BV BR IO BN BG
    BF BI KH CM CA CV KY CF TD CL CN CX CC CO KM CG CD CK CR CI HR CU CW CY CZ DK DJ DM DO EC EG SV GQ ER EE
    ET FK FO FJ FI FR GF PF TF GA GM GE DE GH GI GR GL GD GP GU GT GG GN GW GY HT HM VA HN HK HU IS IN ID IR
    IQ IE IM IL IT JM JP JE JO KZ KE KI KP KR KW KG LA LV LB LS LR LY LI LT LU MO MK MG MW MY MV ML MT MH MQ
    MR MU YT MX FM MD MC MN ME MS MA MZ MM NA NR NP NL NC NZ NI NE NG NU NF MP NO OM PK PW PS PA PG PY PE PH
    PN PL PT PR QA RE RO RU RW BL SH KN LC MF PM VC WS SM ST SA SN RS SC SL SG SX SK SI SB SO ZA GS SS ES LK
    SD SR SJ SZ SE CH SY TW TJ TZ TH TL TG TK TO TT TN TR TM TC TV UG UA AE GB US UM UY UZ VU VE VN VG VI WF
    EH YE ZM ZW
    """.split()
)
COUNTRY_SET: frozenset[str] = frozenset(COUNTRIES)

# The domestic currency: the regulatory threshold is stated in it and the NOK equivalent is computed into it.
NOK = "NOK"

# --- spec 2.1: the product this body is for ----------------------------------------------------------------
CROSS_BORDER_PRODUCT = "norwegian-cross-border-credit-transfers"


class PurposeCode(models.TextChoices):
    """purposeCode: the bank's supported subset of the ISO 20022 external purpose code list (spec 2.1)."""

    INVS = "INVS", _("Investment and securities")
    SALA = "SALA", _("Salary")
    IDCP = "IDCP", _("Irrevocable debit card payment")
    CASH = "CASH", _("Cash management transfer")
    CORT = "CORT", _("Trade settlement")
    INTC = "INTC", _("Intra-company payment")
    PENS = "PENS", _("Pension")
    SSBE = "SSBE", _("Social security benefit")
    SUPP = "SUPP", _("Supplier payment")
    TAXS = "TAXS", _("Tax")
    TREA = "TREA", _("Treasury payment")
    VATX = "VATX", _("Value added tax")
    LOAN = "LOAN", _("Loan")
    OTHR = "OTHR", _("Other")


class RegulatoryReportingCode(models.TextChoices):
    """regulatoryReportingCode: the tax authority's "codes for payment type" (spec 2.1, facts.md section 7).

    The label is the meaning in the user's language; the authority's own Norwegian name is kept verbatim in
    ``REGULATORY_CODE_NORWEGIAN_NAMES`` (it is the official name, shown as is in every language).
    """

    GOODS = "14", _("Purchase or sale of goods")
    RENT = "26", _("Rent and leases, including patents, licence fees and royalties")
    OTHER_SERVICES = "29", _("Other purchase or sale of services")
    INTEREST = "31", _("Interest")
    DIVIDENDS = "35", _("Dividends")
    OTHER_RETURN_ON_CAPITAL = "38", _("Other return on capital")
    REAL_ESTATE_ABROAD = "41", _("Real estate and capitalised rights abroad")
    DIRECT_INVESTMENT_SHARES = "43", _("Direct investment in shares")
    DIRECT_INVESTMENT_OTHER = "45", _("Direct investment, other capital (intra-group loans)")
    PORTFOLIO_SHARES = "51", _("Portfolio investment in shares and fund units")
    PORTFOLIO_BONDS = "52", _("Portfolio investment in bonds and certificates")
    PORTFOLIO_DERIVATIVES = "53", _("Portfolio investment in derivatives")
    LIFE_INSURANCE_PENSIONS = "71", _("Life insurance and pensions")
    OTHER_FINANCIAL = "79", _("Other financial investments")
    SALARY = "81", _("Salary")
    INHERITANCE_GIFTS = "82", _("Inheritance, gifts and the like")


# The authority's names (facts.md section 7), by code. Not translated: they are the official Norwegian names.
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

# The authority's grouping of the codes (facts.md section 7), for an <optgroup> select.
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
