"""Amounts on the staff admin's pages: the currency's minor units (no five-decimal column values), thousands
grouped with a no-break space, more digits only when the amount really has them; CSV cells stay exact."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import BalanceSnapshot
from core.money import amount_plain
from tests.accounts.test_account_pages import TransactionFactory
from tests.bank_factories import BankAccountFactory
from tests.payments.payment_factories import PaymentFactory

pytestmark = pytest.mark.django_db

NBSP = "\xa0"


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        ("150000.00000", "NOK", f"150{NBSP}000.00 NOK"),
        ("1500", "JPY", f"1{NBSP}500 JPY"),
        ("1500.00000", "JPY", f"1{NBSP}500 JPY"),
        ("1.5", "KWD", "1.500 KWD"),
        ("-1234567.5", "EUR", f"-1{NBSP}234{NBSP}567.50 EUR"),
        ("0.12345", "EUR", "0.12345 EUR"),  # a bank's odd figure is shown whole, never rounded
    ],
)
def test_amounts_in_the_currency_s_minor_units(amount, currency, shown):
    assert amount_plain(Decimal(amount), currency) == shown


def test_the_payment_pages_show_minor_units(support_client, alice):
    nok = PaymentFactory(user=alice, amount=Decimal("150000.00000"), currency="NOK", nok_equivalent=None)
    jpy = PaymentFactory(
        user=alice, amount=Decimal("2500000"), currency="JPY", nok_equivalent=Decimal("163250.00000")
    )
    listing = support_client.get(reverse("admin:payments_payment_changelist")).content.decode()
    assert f"150{NBSP}000.00 NOK" in listing and f"2{NBSP}500{NBSP}000 JPY" in listing
    page = support_client.get(reverse("admin:payments_payment_change", args=[jpy.pk])).content.decode()
    assert f"2{NBSP}500{NBSP}000 JPY" in page and f"163{NBSP}250.00 NOK" in page
    assert f"Payment #{jpy.pk} 2{NBSP}500{NBSP}000 JPY to" in page  # the page's title too
    for html in (listing, page):
        assert "150000.00000" not in html and "2500000.00000" not in html and "163250.00000" not in html
    assert str(nok) == f"Payment #{nok.pk} 150{NBSP}000.00 NOK to Müller Maschinenbau GmbH"


def test_the_payment_csv_keeps_the_exact_figure(operator_client, alice):
    payment = PaymentFactory(user=alice, amount=Decimal("150000.00000"), currency="NOK")
    response = operator_client.post(
        reverse("admin:payments_payment_changelist"),
        {"action": "export_csv", "_selected_action": [payment.pk]},
    )
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert "150000.00 NOK" in rows[1], rows


def test_balances_and_transactions_show_minor_units(support_client):
    account = BankAccountFactory()
    BalanceSnapshot.objects.create(
        account=account,
        balance_type="interimAvailable",
        amount=Decimal("123456.7000"),
        currency="NOK",
        fetched_at=timezone.now(),
    )
    TransactionFactory(account=account, amount=Decimal("-98765.40000"), currency="NOK")
    balances = support_client.get(reverse("admin:accounts_balancesnapshot_changelist")).content.decode()
    assert f"123{NBSP}456.70" in balances and "123456.7000" not in balances
    transactions = support_client.get(reverse("admin:accounts_transaction_changelist")).content.decode()
    assert f"-98{NBSP}765.40" in transactions and "98765.40000" not in transactions
