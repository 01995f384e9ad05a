"""Deterministic, realistic transaction history for the sandbox accounts.

Each day of each account is drawn from its own random generator seeded with (seed, account, day), so a given
day always produces the same transactions with the same ids, whatever day the sandbox is initialised on.
Profiles: a private current account (salary, KID bills, card purchases at Norwegian shops, Vipps, savings
transfer), a savings account, a credit card account (purchases, some abroad with an original amount), a
company operating account (customer payments with KID, suppliers, salaries, VAT) and a tax-withholding account.
Pending items are the last days' card reservations; they book later under a different id
(``services.transactions_settle_due``).
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal

from bank_simulator.identifiers import kid, norwegian_bban, norwegian_iban, opaque_id

HISTORY_DAYS = 365
PENDING_DAYS = 3

GROCERIES = ["REMA 1000", "KIWI", "COOP EXTRA", "MENY", "COOP PRIX", "BUNNPRIS", "SPAR", "JOKER", "OBS"]
SHOPS = [
    "VINMONOPOLET",
    "NARVESEN",
    "ELKJØP",
    "XXL SPORT",
    "CLAS OHLSON",
    "APOTEK 1",
    "VITUSAPOTEK",
    "NORLI",
    "JERNIA",
    "EUROPRIS",
    "IKEA FURUSET",
    "H&M",
    "CUBUS",
    "POWER",
]
TRANSPORT = ["RUTER", "VY", "CIRCLE K", "UNO-X", "ESSO", "SKYSS", "ATB", "FLYTOGET"]
EATING = ["PEPPES PIZZA", "DELI DE LUCA", "STARBUCKS", "BURGER KING", "EGON", "JOKER KAFÉ", "ESPRESSO HOUSE"]
ABROAD = [
    ("ICA KVANTUM STRÖMSTAD", "SEK", Decimal("0.98")),
    ("SYSTEMBOLAGET", "SEK", Decimal("0.98")),
    ("NETTO KØBENHAVN", "DKK", Decimal("1.55")),
    ("CARREFOUR ALICANTE", "EUR", Decimal("11.62")),
    ("AMAZON EU SARL", "EUR", Decimal("11.62")),
    ("SPOTIFY AB", "SEK", Decimal("0.98")),
    ("APPLE.COM/BILL", "USD", Decimal("10.71")),
]
VIPPS_FRIENDS = [
    "Ingrid Hansen",
    "Lars Johansen",
    "Sofie Berg",
    "Jonas Larsen",
    "Emma Andersen",
    "Magnus Pedersen",
]
CUSTOMERS_B2B = [
    "Nordlys Eiendom AS",
    "Vestland Rør AS",
    "Trøndelag Elektro AS",
    "Bergen Byggservice AS",
    "Sørlandet Maskin AS",
    "Tromsø Havn KF",
    "Lofoten Sjømat AS",
]
SUPPLIERS = [
    ("Byggmakker Norge AS", "4202"),
    ("Optimera AS", "6011"),
    ("Ahlsell Norge AS", "8101"),
    ("Würth Norge AS", "1503"),
    ("Telenor Norge AS", "8200"),
    ("Fjordkraft AS", "9001"),
    ("Tripletex AS", "1206"),
]


@dataclass
class GeneratedTransaction:
    transaction_id: str
    booking_status: str
    booking_date: dt.date
    value_date: dt.date | None
    books_on: dt.date | None
    amount: Decimal
    currency: str
    counterparty_name: str = ""
    counterparty_iban: str = ""
    counterparty_bban: str = ""
    remittance_lines: list[str] = field(default_factory=list)
    kid: str = ""
    end_to_end_id: str = ""
    bank_transaction_code: str = ""
    additional_information: dict[str, str] = field(default_factory=dict)
    original_amount: Decimal | None = None
    original_currency: str = ""
    sequence: int = 0


def _money(value: float | Decimal) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"))


def _business_day_on_or_before(day: dt.date) -> dt.date:
    while day.weekday() >= 5:
        day -= dt.timedelta(days=1)
    return day


def _is_payday(day: dt.date, of_month: int) -> bool:
    last = calendar.monthrange(day.year, day.month)[1]
    target = _business_day_on_or_before(dt.date(day.year, day.month, min(of_month, last)))
    return day == target


def _counterparty_account(rng: random.Random, name: str) -> tuple[str, str]:
    bban = norwegian_bban("counterparty", name, bank_code=rng.choice(["1503", "1206", "3000", "6011", "8101"]))
    return norwegian_iban(bban), bban


class _Day:
    """Collects one account's items of one day."""

    def __init__(
        self,
        seed: str,
        resource_id: str,
        day: dt.date,
        currency: str,
        *,
        balance: Decimal = Decimal("0"),
        opening: Decimal = Decimal("0"),
    ) -> None:
        self.rng = random.Random(f"{seed}|{resource_id}|{day.isoformat()}")  # noqa: S311 - test data, not crypto
        self.seed = seed
        self.resource_id = resource_id
        self.day = day
        self.currency = currency
        self.balance = balance  # the account's booked balance before this day
        self.opening = opening  # its balance at the start of the history
        self.items: list[GeneratedTransaction] = []

    def add(self, amount: Decimal, name: str, text: str, code: str, **extra: object) -> None:
        index = len(self.items)
        item = GeneratedTransaction(
            transaction_id=opaque_id(self.seed, self.resource_id, self.day, index, "booked"),
            booking_status="booked",
            booking_date=self.day,
            value_date=self.day,
            books_on=None,
            amount=amount,
            currency=self.currency,
            counterparty_name=name[:70],
            remittance_lines=[text[:140]] if text else [],
            bank_transaction_code=code,
            sequence=index,
            **extra,  # type: ignore[arg-type]
        )
        self.items.append(item)


# Whole on purpose: the rules of one private customer's generated day (pay, rent, savings, spending) as data.
def _private_main(d: _Day, *, employer: str, salary: Decimal, landlord: str, savings_iban: str) -> None:
    rng, day = d.rng, d.day
    if _is_payday(day, 25):
        iban, bban = _counterparty_account(rng, employer)
        d.add(
            salary,
            employer,
            f"Lønn {day:%m.%Y}",
            "R_230",
            counterparty_iban=iban,
            counterparty_bban=bban,
            end_to_end_id=f"LONN{day:%Y%m}{rng.randrange(10**6):06d}",
        )
    if day.day == 1:
        iban, bban = _counterparty_account(rng, landlord)
        d.add(
            -Decimal("13450.00"),
            landlord,
            "Husleie",
            "R_710",
            counterparty_iban=iban,
            counterparty_bban=bban,
            kid=kid(f"{day:%y%m}77120"),
        )
    if day.day == 15:
        iban, bban = _counterparty_account(rng, "Fjordkraft AS")
        amount = _money(rng.uniform(450, 2400) if day.month in (5, 6, 7, 8) else rng.uniform(1200, 3900))
        d.add(
            -amount,
            "Fjordkraft AS",
            "Strøm",
            "R_710",
            counterparty_iban=iban,
            counterparty_bban=bban,
            kid=kid(f"3301{day:%y%m}{rng.randrange(1000):03d}"),
        )
    if day.day == 18:
        iban, bban = _counterparty_account(rng, "Telenor Norge AS")
        d.add(
            -Decimal("499.00"),
            "Telenor Norge AS",
            "Mobil abonnement",
            "R_710",
            counterparty_iban=iban,
            counterparty_bban=bban,
            kid=kid(f"58{day:%y%m}4411"),
        )
    if day.day == 5:
        iban, bban = _counterparty_account(rng, "Gjensidige Forsikring ASA")
        d.add(
            -Decimal("892.00"),
            "Gjensidige Forsikring ASA",
            "Forsikring",
            "R_710",
            counterparty_iban=iban,
            counterparty_bban=bban,
            kid=kid(f"7{day:%y%m}0093"),
        )
    if _is_payday(day, 26):
        d.add(-Decimal("5000.00"), "Sparekonto", "Overføring til sparing", "R_610", counterparty_iban=savings_iban)
    for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3))):
        kind = rng.random()
        if kind < 0.55:
            name, amount = rng.choice(GROCERIES), rng.uniform(45, 980)
        elif kind < 0.75:
            name, amount = rng.choice(TRANSPORT), rng.uniform(39, 850)
        elif kind < 0.9:
            name, amount = rng.choice(EATING), rng.uniform(49, 420)
        else:
            name, amount = rng.choice(SHOPS), rng.uniform(99, 2490)
        d.add(
            -_money(amount),
            name,
            f"*{rng.randrange(1000, 9999)} {day:%d.%m} NOK {amount:.2f} {name}",
            "R_741",
            additional_information={"additionalInformationProprietary1": "Varekjøp"},
        )
    if rng.random() < 0.12:
        friend = rng.choice(VIPPS_FRIENDS)
        amount = _money(rng.choice((150, 200, 250, 300, 450, 500)))
        sign = 1 if rng.random() < 0.5 else -1
        d.add(sign * amount, friend, f"Vipps {friend}", "R_600")


def _private_savings(d: _Day, *, main_iban: str) -> None:
    if _is_payday(d.day, 26):
        d.add(Decimal("5000.00"), "Brukskonto", "Overføring til sparing", "R_610", counterparty_iban=main_iban)
    if d.day.month == 12 and d.day.day == 31:
        d.add(Decimal("3184.27"), "Sandkasse Bank ASA", "Renter", "R_900")


def _card_purchase(d: _Day) -> tuple[Decimal, str, dict[str, object]]:
    rng = d.rng
    if rng.random() < 0.15:
        name, currency, rate = rng.choice(ABROAD)
        original = _money(rng.uniform(5, 120))
        return -_money(original * rate), name, {"original_amount": -original, "original_currency": currency}
    name = rng.choice(GROCERIES + SHOPS + EATING + TRANSPORT)
    return -_money(rng.uniform(29, 690)), name, {}


def _private_card(d: _Day, *, payer_iban: str) -> None:
    rng = d.rng
    if _is_payday(d.day, 20):
        d.add(Decimal("7200.00"), "Innbetaling", "Innbetaling kredittkort", "R_710", counterparty_iban=payer_iban)
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
        amount, name, extra = _card_purchase(d)
        d.add(amount, name, name, "R_741", **extra)


def _corporate_operating(d: _Day, *, employees: int, tax_iban: str) -> None:
    rng, day = d.rng, d.day
    weekday = day.weekday() < 5
    if weekday:
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            name = rng.choice(CUSTOMERS_B2B)
            iban, bban = _counterparty_account(rng, name)
            amount = _money(rng.uniform(2500, 98000))
            invoice = rng.randrange(10000, 99999)
            d.add(
                amount,
                name,
                f"Faktura {invoice}",
                "R_710",
                counterparty_iban=iban,
                counterparty_bban=bban,
                kid=kid(f"{invoice}{rng.randrange(100):02d}"),
            )
        for _ in range(rng.choice((0, 0, 1, 1, 2))):
            name, prefix = rng.choice(SUPPLIERS)
            iban, bban = _counterparty_account(rng, name)
            amount = _money(rng.uniform(800, 64000))
            d.add(
                -amount,
                name,
                f"Faktura {name}",
                "R_710",
                counterparty_iban=iban,
                counterparty_bban=bban,
                kid=kid(f"{prefix}{rng.randrange(10**6):06d}"),
                end_to_end_id=f"E2E{day:%Y%m%d}{rng.randrange(10**8):08d}",
            )
    if _is_payday(day, 20):
        total = _money(Decimal(employees) * Decimal("41250.00"))
        d.add(
            -total,
            "Lønn ansatte",
            f"Lønnsutbetaling {day:%m.%Y}",
            "R_230",
            end_to_end_id=f"LONN{day:%Y%m}{employees:04d}",
        )
        d.add(
            -_money(total * Decimal("0.32")),
            "Skattetrekkskonto",
            "Skattetrekk",
            "R_610",
            counterparty_iban=tax_iban,
        )
    if day.day == 10 and day.month in (2, 4, 6, 8, 10, 12):
        d.add(
            -_money(rng.uniform(40000, 180000)),
            "Skatteetaten",
            "Merverdiavgift",
            "R_710",
            counterparty_iban="NO0263450612345",
            kid=kid(f"2{day:%y%m}{employees:03d}0651"),
        )


def _corporate_tax(d: _Day, *, employees: int, operating_iban: str) -> None:
    day = d.day
    if _is_payday(day, 20):
        d.add(
            _money(Decimal(employees) * Decimal("41250.00") * Decimal("0.32")),
            "Driftskonto",
            "Skattetrekk",
            "R_610",
            counterparty_iban=operating_iban,
        )
    if day.day == 15 and day.month in (1, 3, 5, 7, 9, 11):
        amount = _money(Decimal(employees) * Decimal("41250.00") * Decimal("0.32") * 2)
        d.add(
            -amount,
            "Skatteetaten",
            "Forskuddstrekk",
            "R_710",
            counterparty_iban="NO0263450612345",
            kid=kid(f"7{day:%y%m}{employees:03d}1120"),
        )


#: The EUR account's monthly sweep to NOK moves whole multiples of this.
SWEEP_STEP = Decimal("10000.00")

FOREIGN_BUYERS = [
    ("Mowi Deutschland GmbH", "DE89370400440532013000"),
    ("Seafood Trading BV", "NL91ABNA0417164300"),
    ("Pescados del Norte SL", "ES9121000418450200051332"),
    ("Fiskeexport Göteborg AB", "SE4550000000058398257466"),
]


def _corporate_currency(d: _Day, *, operating_iban: str) -> None:
    """A EUR account of an exporter: buyers pay in EUR, some suppliers abroad, a monthly sweep to NOK."""
    rng, day = d.rng, d.day
    if day.weekday() < 5 and rng.random() < 0.35:
        name, iban = rng.choice(FOREIGN_BUYERS)
        amount = _money(rng.uniform(1800, 42000))
        d.add(
            amount,
            name,
            f"Invoice {rng.randrange(100000, 999999)}",
            "R_720",
            counterparty_iban=iban,
            end_to_end_id=f"NOTPROVIDED{rng.randrange(10**8):08d}"[:35],
        )
    if day.weekday() < 5 and rng.random() < 0.08:
        name, iban = rng.choice(FOREIGN_BUYERS)
        d.add(
            -_money(rng.uniform(300, 6000)),
            name,
            "Freight and handling",
            "R_720",
            counterparty_iban=iban,
            end_to_end_id=f"E2E{day:%Y%m%d}{rng.randrange(10**6):06d}",
        )
    if _is_payday(day, 28):  # what came in above the opening balance goes to NOK, in whole 10 000s
        sweep = (d.balance - d.opening) // SWEEP_STEP * SWEEP_STEP
        if sweep > 0:
            d.add(-sweep, "Driftskonto", "Veksling til NOK", "R_610", counterparty_iban=operating_iban)


PROFILES = {
    "corporate_currency": _corporate_currency,
    "private_main": _private_main,
    "private_savings": _private_savings,
    "private_card": _private_card,
    "corporate_operating": _corporate_operating,
    "corporate_tax": _corporate_tax,
}


def generate(
    *,
    seed: str,
    resource_id: str,
    currency: str,
    profile: str,
    today: dt.date,
    opening: Decimal = Decimal("0"),
    **options: object,
) -> list[GeneratedTransaction]:
    """Booked items of the last year and pending card reservations of the last days, oldest first. ``opening``:
    the booked balance a year ago (a profile may follow the balance, as the EUR account's sweep does)."""
    build = PROFILES[profile]
    items: list[GeneratedTransaction] = []
    balance = opening
    for back in range(HISTORY_DAYS, 0, -1):
        day = today - dt.timedelta(days=back)
        d = _Day(seed, resource_id, day, currency, balance=balance, opening=opening)
        build(d, **options)
        items.extend(d.items)
        balance += sum((item.amount for item in d.items), Decimal("0"))
    if profile in {"private_main", "private_card"}:
        for back in range(PENDING_DAYS - 1, -1, -1):
            day = today - dt.timedelta(days=back)
            rng = random.Random(f"{seed}|{resource_id}|{day.isoformat()}|pending")  # noqa: S311 - test data
            for index in range(rng.choice((1, 1, 2, 3))):
                d = _Day(seed, resource_id, day, currency)
                d.rng = rng
                amount, name, extra = _card_purchase(d)
                items.append(
                    GeneratedTransaction(
                        transaction_id=opaque_id(seed, resource_id, day, index, "pending"),
                        booking_status="pending",
                        booking_date=day,
                        value_date=None,
                        books_on=max(day + dt.timedelta(days=2), today + dt.timedelta(days=1)),
                        amount=amount,
                        currency=currency,
                        counterparty_name=name,
                        remittance_lines=[f"Reservasjon {name}"],
                        bank_transaction_code="R_741",
                        sequence=100 + index,
                        **extra,  # type: ignore[arg-type]
                    )
                )
    return items
