"""Against the sandbox bank running as a real process: five unattended refreshes in a row never meet the bank's
429 (the portal refuses the fifth itself, and the bank's own count then stands exactly at its limit), and
"Refresh now" reads transactions with the PSU present."""

from __future__ import annotations

import re

import pytest

from accounts import refresh
from accounts.models import BankAccount, RefreshCall, Transaction, TransactionStatus
from core.bank import bank_client, unattended_bank_client
from core.models import BankCall
from tests.live_bank import portal_connect
from xs2a.errors import AccessExceededError
from xs2a.psu import PsuContext

pytestmark = pytest.mark.live_bank


@pytest.fixture
def known_state(live_bank):
    """The sandbox in its known state (no unattended reads counted yet), restored afterwards as well."""
    bank_client().sandbox.initialize()
    unattended_bank_client.cache_clear()
    yield
    unattended_bank_client.cache_clear()
    bank_client().sandbox.initialize()


def test_five_unattended_refreshes_never_trigger_the_banks_429(known_state, alice_client, alice):
    portal_connect(alice_client)
    account = BankAccount.objects.filter(connection__user=alice, kind="account").order_by("pk").first()
    read_at_connect = Transaction.objects.filter(account=account).count()
    assert read_at_connect > 0  # the sandbox's seeded history, read while the PSU connected
    BankCall.objects.all().delete()

    outcomes = [refresh.account_refresh(account_id=account.pk) for _ in range(5)]

    assert [o.ok for o in outcomes] == [True, True, True, True, False], [o.message for o in outcomes]
    assert all(o.transactions_new == 0 for o in outcomes[:4])  # repeated syncs: nothing duplicated
    unattended = BankCall.objects.filter(psu_present=False)
    assert unattended.count() == 8 and not unattended.filter(status=429).exists()
    assert set(unattended.values_list("status", flat=True)) == {200}
    assert RefreshCall.objects.filter(account=account).count() == 8
    ids = list(
        Transaction.objects.filter(account=account, status=TransactionStatus.BOOKED).values_list(
            "transaction_id", flat=True
        )
    )
    assert len(ids) == len(set(ids)) and all(ids)

    # The bank's own count stands at its limit: one more unattended read is refused by the bank itself, which
    # shows the portal's ledger counted exactly what the bank counts.
    absent = PsuContext(psu_id=account.connection.psu_id)
    with pytest.raises(AccessExceededError) as refused:
        unattended_bank_client().accounts.balances(account.resource_id, psu=absent)
    assert refused.value.status == 429

    # With the PSU present nothing counts: "Refresh now" still reads balances and transactions.
    response = alice_client.post("/bank/accounts/refresh/", follow=True)
    assert response.status_code == 200
    assert "Balances and transactions refreshed." in response.content.decode()
    account.refresh_from_db()
    assert account.transactions_synced_to is not None
    present = BankCall.objects.filter(psu_present=True, path_template__contains="/transactions")
    assert present.exists() and not present.exclude(status=200).exists()


def test_each_refresh_task_opens_its_own_connection_to_the_bank(known_state, alice_client, alice, monkeypatch):
    """A keep-alive connection stays with the server process (or load balancer backend) that accepted it: a worker
    keeping one for good would keep its whole share of the refresh on one of the bank's processes. Each task
    connects afresh, and within a task the calls share one connection."""
    import urllib3.connection
    from django.utils import timezone

    portal_connect(alice_client)
    accounts = list(BankAccount.objects.filter(connection__user=alice, kind="account").order_by("pk"))[:2]
    connects = []
    original = urllib3.connection.HTTPConnection.connect

    def counted(self):
        connects.append(self.port)
        return original(self)

    monkeypatch.setattr(urllib3.connection.HTTPConnection, "connect", counted)
    planned = timezone.now()
    first = refresh.refresh_due(account_ids=[accounts[0].pk], planned_at=planned)
    assert all(o.ok for o in first.values()) and len(connects) == 1  # two calls, one connection
    second = refresh.refresh_due(account_ids=[accounts[1].pk], planned_at=planned)
    assert all(o.ok for o in second.values())
    assert len(connects) == 2


def test_connecting_reads_the_transactions_at_once_and_spends_no_unattended_call(known_state, alice_client, alice):
    response, _params = portal_connect(alice_client)

    assert response.status_code == 302
    accounts = list(BankAccount.objects.filter(connection__user=alice, consented=True).order_by("pk"))
    assert len(accounts) == 3  # Private Customer 1: two accounts and a card account
    for account in accounts:
        assert account.transactions_refreshed_at is not None, account
    assert Transaction.objects.filter(account__in=accounts).count() > 0
    assert {
        kind for kind in Transaction.objects.filter(account__in=accounts).values_list("account__kind", flat=True)
    } == {
        "account",
        "card",
    }
    # attended: every call carried PSU-IP-Address, and the unattended allowance is untouched
    reads = BankCall.objects.filter(path_template__endswith="/transactions")
    assert reads.count() >= len(accounts) and not reads.filter(psu_present=False).exists()
    assert not RefreshCall.objects.exists()
    messages = [str(m) for m in alice_client.get(response["Location"]).context["messages"]]
    assert messages == ["Your bank is connected."]
    # the account page says when the transactions were read, not "never"
    page = alice_client.get(f"/bank/accounts/{accounts[0].pk}/").content.decode()
    read = re.search(r"<dt>Transactions read</dt>\s*<dd>([^<]*)</dd>", page)
    assert read and read.group(1).strip() not in ("", "never"), read
