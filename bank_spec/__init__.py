"""What the bank's specification lists: its payment products, currencies, countries, purpose codes and the tax
authority's codes for payment type (docs/bank-interface.md, spec 2.1, 2.5 and 2.6), exactly and in the
specification's order.

Read by the portal (payments), the sandbox bank and the tests; it imports nothing of this repository, so the
bank client's neighbours stay independent of each other (the sandbox bank never imports the portal, nor the
portal the sandbox bank) while a change in the bank's specification is still a change in one file. Codes only:
the labels people read are the portal's own (payments.spec, translated).
"""

from __future__ import annotations

__all__ = [
    "COUNTRIES",
    "COUNTRY_SET",
    "CROSS_BORDER",
    "CURRENCIES",
    "CURRENCY_SET",
    "DOMESTIC",
    "PRODUCTS",
    "PURPOSE_CODES",
    "REGULATORY_CODES",
]

# --- the payment products (spec 2.1 and its domestic sibling) ----------------------------------------------
CROSS_BORDER = "norwegian-cross-border-credit-transfers"
DOMESTIC = "norwegian-domestic-credit-transfers"
PRODUCTS: tuple[str, ...] = (CROSS_BORDER, DOMESTIC)

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

# --- spec 2.1: purposeCode, the bank's supported subset of the ISO 20022 external purpose code list ---------
PURPOSE_CODES: tuple[str, ...] = tuple(
    "INVS SALA IDCP CASH CORT INTC PENS SSBE SUPP TAXS TREA VATX LOAN OTHR".split()
)

# --- spec 2.1 (docs/bank-interface.md, reference 7): regulatoryReportingCode, the authority's payment type codes
REGULATORY_CODES: tuple[str, ...] = tuple("14 26 29 31 35 38 41 43 45 51 52 53 71 79 81 82".split())
