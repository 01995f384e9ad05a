"""A bank whose optional fields are odd loses no transaction or balance (docs/bank-interface.md, "Odd optional
fields"): a date-time without an offset, a date sent as a date-time, an optional reference the client cannot read.
Every item is stored, with the dates the bank meant, and shown on the account's pages."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from accounts import refresh
from accounts.models import BalanceSnapshot, Transaction, TransactionStatus
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.bankfake import booked, pending
from xs2a.psu import PsuContext

PRESENT = PsuContext(ip_address="198.51.100.7")


def test_a_page_with_odd_optional_fields_is_stored_whole_and_shown(fake_bank, alice, alice_client):
    account = BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Brukskonto")
    today = timezone.localdate()
    midnight = f"{today.isoformat()}T00:00:00"
    yesterday = today - timedelta(days=1)
    fake_bank.booked = [
        # A date as a date-time at midnight, no offset (as BANK_SIM_DATETIMES=naive sends it).
        booked("B1", "-120.00", today, "Elkjøp", bookingDate=midnight, valueDate=midnight),
        # An offset-less date-time and an entryReference that is no text: both optional.
        booked(
            "B2",
            "-45.50",
            yesterday,
            "Narvesen",
            lastChangeDateTime=f"{yesterday.isoformat()}T14:03:00",
            entryReference={"ref": 20261130, "seq": 7},
        ),
        booked("B3", "250.00", yesterday, "Lønn", originalAmount={"amount": "ti euro", "currency": "EUR"}),
    ]
    fake_bank.pending = [pending("P1", "-99.00", today, "Kiwi")]
    fake_bank.pending[0]["valueDate"] = midnight
    fake_bank.balance_fields = {"lastChangeDateTime": f"{today.isoformat()}T08:15:00", "referenceDate": midnight}

    outcome = refresh.account_refresh(account_id=account.pk, presence=PRESENT)

    assert outcome.ok, outcome.message
    rows = {t.transaction_id: t for t in Transaction.objects.filter(account=account)}
    assert set(rows) == {"B1", "B2", "B3", "P1"}, "every item stored"
    assert rows["B1"].booking_date == today and rows["B1"].value_date == today
    assert rows["B1"].raw["bookingDate"] == midnight, "the bank's record as sent"
    assert rows["B2"].booking_date == yesterday and rows["B2"].amount == Decimal("-45.50")
    assert rows["B2"].raw["entryReference"] == {"ref": 20261130, "seq": 7}
    assert rows["B2"].raw["lastChangeDateTime"] == f"{yesterday.isoformat()}T14:03:00"
    assert rows["B3"].amount == Decimal("250.00")
    assert rows["P1"].status == TransactionStatus.PENDING and rows["P1"].value_date == today
    snapshots = {b.balance_type: b for b in BalanceSnapshot.objects.filter(account=account)}
    assert set(snapshots) == {"closingBooked", "interimAvailable"}
    assert all(b.reference_date == today for b in snapshots.values())

    page = alice_client.get(f"/bank/accounts/{account.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    shown = set(re.findall(r'data-transaction="(\d+)"', html))
    assert shown == {str(t.pk) for t in rows.values()}, "every stored item is listed"
    for text in ("Elkjøp", "Narvesen", "Lønn", "Kiwi"):
        assert text in html
    for row in rows.values():
        detail = alice_client.get(f"/bank/transactions/{row.pk}/")
        assert detail.status_code == 200, row.transaction_id
    odd = alice_client.get(f"/bank/transactions/{rows['B2'].pk}/").content.decode()
    assert "lastChangeDateTime" in odd and "entryReference.ref" in odd
