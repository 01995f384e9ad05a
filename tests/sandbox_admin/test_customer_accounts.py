"""The sandbox customer pages name accounts as people read them: the IBAN grouped by four and the account's
name (from the portal's own records: the bank's sandbox answers give only the ids), and an agreement's name; the
bank's opaque ids (``enc!!...``) stay behind a "Details" disclosure. With the bank's answers stubbed."""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from sandbox_admin import views
from sandbox_admin.selectors import CustomerListing, known_accounts
from tests.bank_factories import BankAccountFactory
from xs2a.models import Agreement, SandboxCustomer

READ = "enc!!read-by-the-portal="
UNREAD = "enc!!never-read="
CARD = "enc!!card="
AGREEMENT = "enc!!agreement="


@pytest.fixture
def company(monkeypatch, settings, db):
    settings.BANK_IS_SANDBOX = True
    BankAccountFactory(resource_id=READ, iban="NO9386011117947", name="Driftskonto")
    BankAccountFactory(resource_id=CARD, iban="", masked_pan="123456xxxxxx1234", name="Firmakort")
    customer = SandboxCustomer(
        customer_id="enc!!customer=",
        customer_number="912345678",
        customer_type="CORPORATE",
        customer_name="Fjordbygg AS",
        agreements=[Agreement(id=AGREEMENT, name="Hovedavtale", engagements=[READ, UNREAD])],
        accounts=[READ, UNREAD],
        card_accounts=[CARD],
    )
    listing = CustomerListing([customer], True, True, 12.5, timezone.now())
    monkeypatch.setattr(views.selectors, "sandbox_customers_list", lambda **kwargs: listing)
    monkeypatch.setattr(views.selectors, "sandbox_customer_get", lambda **kwargs: customer)
    return customer


def _visible(page: str) -> str:
    """The page's text outside the "Details" disclosures."""
    outside = re.sub(r"<details.*?</details>", "", page, flags=re.S)
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", outside).split()))


def _pages(client, customer) -> list[str]:
    listing = client.get(reverse("sandbox_admin:customers")).content.decode()
    detail = client.get(reverse("sandbox_admin:customer") + f"?customer={customer.customer_id}").content.decode()
    return [listing, detail]


def test_known_accounts_read_the_portal_records_in_one_query(company, django_assert_num_queries):
    with django_assert_num_queries(1):
        known = known_accounts([company])

    assert set(known) == {READ, CARD}
    assert (known[READ].number, known[READ].name) == ("NO9386011117947", "Driftskonto")
    assert known[CARD].number == "123456xxxxxx1234"


@pytest.mark.parametrize(
    ("language", "unread"), [("en", "Not read by the portal yet"), ("nb", "Ikke lest av portalen ennå")]
)
def test_accounts_and_agreements_read_by_name_with_the_ids_behind_details(
    charlie_client, company, language, unread
):
    charlie_client.cookies["django_language"] = language
    for page in _pages(charlie_client, company):
        visible = _visible(page)
        assert "NO93 8601 1117 947 · Driftskonto" in visible
        assert "123456xxxxxx1234 · Firmakort" in visible
        assert "Hovedavtale" in visible
        assert f"<summary>{unread} · " in page  # an account the portal has not read: its id behind the summary
        assert "enc!!" not in visible  # no opaque id outside a disclosure
        for hidden in (READ, UNREAD, CARD, AGREEMENT):
            summary = r'<details class="technical-details[^"]*"><summary>[^<]+</summary>'
            assert re.search(rf'{summary}<code class="technical-id">{hidden}</code>', page), hidden


def test_the_add_a_transaction_link_stays_beside_a_read_account(charlie_client, company):
    page = _pages(charlie_client, company)[1]

    create = reverse("sandbox_admin:transaction-create")
    for account in (READ, UNREAD, CARD):
        query = urlencode({"customer": company.customer_id, "account": account})
        assert f'href="{create}?{html.escape(query)}"' in page
    accounts = page.split("<h2>Accounts</h2>", 1)[1]
    line = re.search(r'<span class="account-name">Driftskonto</span>(.*?)<details', accounts, re.S)[1]
    assert "add a transaction" in line  # on the account's line, before its details
