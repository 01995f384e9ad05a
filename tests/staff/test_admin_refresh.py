"""The admin action "Refresh now" on accounts: unattended, within the daily budget, the outcome shown with the
bank's text; support cannot run it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse
from django.utils import timezone

from accounts import ledger
from accounts.models import RefreshCall, RefreshKind, Transaction
from tests.bank_factories import BankAccountFactory
from tests.bankfake import booked

pytestmark = pytest.mark.django_db

ACCOUNTS = reverse("admin:accounts_bankaccount_changelist")


@pytest.fixture
def account(alice):
    return BankAccountFactory(connection__user=alice)


def run_refresh(client, *accounts):
    response = client.post(
        ACCOUNTS, {"action": "refresh_within_budget", "_selected_action": [a.pk for a in accounts]}, follow=True
    )
    assert response.status_code == 200
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def test_an_operator_refreshes_an_account_unattended_and_it_counts(fake_bank, account, operator_client, operator):
    fake_bank.booked = [booked("T-1", "-250.00", timezone.now().date() - timedelta(days=1))]

    shown = run_refresh(operator_client, account)

    assert shown == [("success", f"Bank account #{account.pk}: Balances and transactions refreshed.")]
    assert Transaction.objects.filter(account=account, transaction_id="T-1").exists()
    assert (
        fake_bank.calls(present=True) == 0 and fake_bank.calls(present=False) == 2
    )  # no PSU-IP-Address: unattended
    assert RefreshCall.objects.filter(account=account).count() == 2  # one of each kind, in the ledger
    entry = LogEntry.objects.get()
    assert (entry.user, entry.action_flag, entry.object_id) == (operator, CHANGE, str(account.pk))


def test_the_banks_refusal_is_shown_with_its_text(fake_bank, account, operator_client):
    # The bank already counted four unattended reads (say from another TPP installation): it answers 429.
    fake_bank.unattended[(account.resource_id, "balances")] = [fake_bank.now()] * 4

    shown = run_refresh(operator_client, account)

    ((level, message),) = shown
    assert level == "error"
    assert "Without PSU-IP-Address at most 4 requests per account are allowed in 24 hours." in message
    account.refresh_from_db()
    assert account.refresh_blocked_until is not None
    assert not LogEntry.objects.exists()


def test_a_spent_budget_is_refused_without_calling_the_bank(fake_bank, account, operator_client):
    now = timezone.now()
    for minutes in (4, 3, 2, 1):
        ledger.reserve(account=account, kinds=(RefreshKind.BALANCES,), now=now - timedelta(minutes=minutes))

    ((level, message),) = run_refresh(operator_client, account)

    assert level == "error" and "used up" in message
    assert fake_bank.received == []


def test_too_many_accounts_at_once_are_refused_before_any_call(fake_bank, alice, operator_client):
    accounts = BankAccountFactory.create_batch(21, connection__user=alice)
    ((level, message),) = run_refresh(operator_client, *accounts)
    assert level == "error" and "at most 20" in message
    assert fake_bank.received == []


def test_support_cannot_refresh(fake_bank, account, support_client):
    assert "refresh_within_budget" not in support_client.get(ACCOUNTS).content.decode()
    support_client.post(ACCOUNTS, {"action": "refresh_within_budget", "_selected_action": [account.pk]})
    assert fake_bank.received == [] and not RefreshCall.objects.exists()
