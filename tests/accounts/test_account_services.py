"""Account information with the PSU present: bank consent errors mark the connection for reconnecting, "Refresh
now" fetches the accounts of a pending connection, and the accounts overview reads in a constant number of
queries."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.utils import timezone

from accounts import services
from accounts.models import BalanceSnapshot
from connections.models import ConnectionState
from connections.services import FetchProblem
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from xs2a.errors import AccessExceededError, ConsentUnknownError, ServerError, TppMessage

S = ConnectionState


def _presence():
    from xs2a.psu import PsuContext

    return PsuContext(ip_address="198.51.100.7")


class FailingClient:
    def __init__(self, error):
        self.error = error
        self.accounts = self.card_accounts = SimpleNamespace(balances=self.balances)  # the client's services

    def balances(self, *args, **kwargs):
        raise self.error

    card_account_balances = balances


@pytest.mark.parametrize(
    ("error", "problem", "state"),
    [
        (
            ConsentUnknownError("revoked", status=403, tpp_messages=[TppMessage("ERROR", "CONSENT_UNKNOWN")]),
            FetchProblem.NEEDS_RECONNECT,
            S.NEEDS_RECONNECT,
        ),
        (AccessExceededError("limit", status=429), FetchProblem.LIMIT, S.ACTIVE),
        (ServerError("down", status=503), FetchProblem.UNAVAILABLE, S.ACTIVE),
    ],
)
def test_bank_errors_on_refresh(alice, monkeypatch, error, problem, state):
    connection = BankConnectionFactory(user=alice)
    BankAccountFactory(connection=connection)
    monkeypatch.setattr(services, "bank_client", lambda: FailingClient(error))

    outcome = services.connection_refresh_balances(connection=connection, presence=_presence(), actor=alice)

    assert outcome.problem == problem
    connection.refresh_from_db()
    assert connection.state == state
    assert not BalanceSnapshot.objects.exists()


def _accounts_with_balances(user, n: int) -> None:
    now = timezone.now()
    connection = BankConnectionFactory(user=user)
    for _ in range(n):
        account = BankAccountFactory(connection=connection, balances_refreshed_at=now)
        for kind, amount in (("closingBooked", "1234.50"), ("interimAvailable", "-20.00")):
            BalanceSnapshot.objects.create(
                account=account, balance_type=kind, amount=Decimal(amount), currency="NOK", fetched_at=now
            )
            # An older fetch, which the overview must not show.
            BalanceSnapshot.objects.create(
                account=account,
                balance_type=kind,
                amount=Decimal("1"),
                currency="NOK",
                fetched_at=now - timedelta(hours=1),
            )


@pytest.mark.parametrize("n", [1, 6])
def test_accounts_overview_shows_latest_balances_in_constant_queries(
    alice, alice_client, django_assert_num_queries, n
):
    _accounts_with_balances(alice, n)

    # session, user, accounts, latest balances, and the refresh budgets (selectors.refresh_budgets: the unattended
    # calls of the last 24 hours and the accounts' planned/blocked times); the session is saved only when its
    # activity stamp is old
    with django_assert_num_queries(6):
        response = alice_client.get("/bank/accounts/")

    body = response.content.decode()
    assert response.status_code == 200
    # One headline balance per account: the available one (the booked one stays on the account page).
    assert body.count("-20.00 NOK") == n and "1,234.50 NOK" not in body
    assert "1.00 NOK" not in body
    assert "Booked, end of day" not in body and body.count("Available now") == n


class AccountsClient:
    """Answers like the bank: one account and its balances."""

    def __init__(self):
        from xs2a import models as m

        self.account = m.Account(resource_id="enc!!a1=", iban="NO9386011117947", currency="NOK", name="Brukskonto")
        self.balances_answer = m.AccountBalances.from_json(
            {"balances": [{"balanceAmount": {"amount": "100.25", "currency": "NOK"}, "balanceType": "expected"}]}
        )
        # The client's services (client.accounts, client.card_accounts).
        self.accounts = SimpleNamespace(list=self.account_list, balances=self.balances)
        self.card_accounts = SimpleNamespace(list=lambda **kwargs: [], balances=self.balances)

    def account_list(self, **kwargs):
        return [self.account]

    def balances(self, resource_id, **kwargs):
        return self.balances_answer


def test_refresh_now_fetches_the_accounts_of_a_pending_connection(alice, alice_client, monkeypatch):
    connection = BankConnectionFactory(user=alice, state=S.PENDING)
    monkeypatch.setattr(services, "bank_client", lambda: AccountsClient())

    alice_client.post("/bank/accounts/refresh/")

    connection.refresh_from_db()
    assert connection.state == S.ACTIVE
    snapshot = BalanceSnapshot.objects.get()
    assert snapshot.amount == Decimal("100.25") and snapshot.account.name == "Brukskonto"
