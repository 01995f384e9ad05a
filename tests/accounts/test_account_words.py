"""The account pages in plain words, in both languages: one plain name per balance (the bank's code only behind
"Details"), the automatic updates said without jargon, and the connections page's shared accounts."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import BalanceSnapshot
from tests.bank_factories import BankAccountFactory, BankConnectionFactory

pytestmark = pytest.mark.django_db

CODES = ("openingBooked", "closingBooked", "interimBooked", "interimAvailable")
NAMES = {
    "en": (
        "Balance at the start of the day",
        "Balance at the end of the last day",
        "Balance so far today",
        "Available now",
    ),
    "nb": ("Saldo ved dagens start", "Saldo ved slutten av forrige dag", "Saldo så langt i dag", "Disponibelt nå"),
}
JARGON = (
    "Booked, start of day",
    "Booked, end of day",
    "Booked now",
    "Bokført nå",
    "Bokført, ved",
    "Left today",
    "bank's rule",
    "not planned yet",
    "bankens regel",
    "Igjen i dag",
    "Consented accounts",
    "Kontoer med samtykke",
)


@pytest.fixture
def account(alice, fake_bank):
    account = BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Brukskonto")
    account.balances_refreshed_at = timezone.now()
    account.save()
    for n, code in enumerate(CODES):
        BalanceSnapshot.objects.create(
            account=account,
            balance_type=code,
            amount=Decimal(100 + n),
            currency="NOK",
            fetched_at=account.balances_refreshed_at,
        )
    return account


def _page(client, language: str, path: str) -> str:
    client.cookies["django_language"] = language
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("language", ["en", "nb"])
def test_each_balance_has_one_plain_name_and_its_code_only_in_the_details(alice_client, account, language):
    html = _page(alice_client, language, f"/bank/accounts/{account.pk}/")
    facts = re.search(r'<dl class="account-facts">(.*?)</dl>', html, re.S).group(1)
    details = re.search(r'<details class="balance-codes">(.*?)</details>', html, re.S).group(1)
    for code, name in zip(CODES, NAMES[language], strict=True):
        assert facts.count(f"<dt>{name}</dt>") == 1, name
        assert code not in facts
        assert f"<dt>{name}</dt><dd><code>{code}</code></dd>" in details
    assert "<summary>" + ("Details" if language == "en" else "Detaljer") + "</summary>" in details
    for word in JARGON:
        assert word not in html, word


@pytest.mark.parametrize(
    ("language", "words"),
    [
        (
            "en",
            (
                "Automatic updates",
                "Next update",
                "none planned yet",
                "Updates left today",
                "4 of 4",
                "your bank lets us update each account at most 4 times a day",
            ),
        ),
        (
            "nb",
            (
                "Automatiske oppdateringer",
                "Neste oppdatering",
                "ingen planlagt ennå",
                "Oppdateringer igjen i dag",
                "4 av 4",
                "lar banken din oss oppdatere hver konto høyst 4 ganger om dagen",
            ),
        ),
    ],
)
def test_the_overview_says_the_automatic_updates_plainly(alice_client, account, language, words):
    html = _page(alice_client, language, "/bank/accounts/")
    for word in words:
        assert word in html, word
    for word in JARGON:
        assert word not in html, word


@pytest.mark.parametrize(
    ("language", "label"), [("en", "Accounts you share with us"), ("nb", "Kontoer du deler med oss")]
)
def test_the_connections_page_names_the_shared_accounts_plainly(alice_client, account, language, label):
    html = _page(alice_client, language, "/bank/connections/")
    assert f"<dt>{label}</dt>" in html
    assert "Consented accounts" not in html and "Kontoer med samtykke" not in html
