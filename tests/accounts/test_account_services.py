"""Account information with the PSU present: bank consent errors mark the connection for reconnecting, "Refresh
now" fetches the accounts of a pending connection, and the accounts overview reads in a constant number of
queries."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts import services
from accounts.models import BalanceSnapshot
from connections.models import ConnectionState
from connections.outcomes import FetchProblem
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.signin import session_queries

S = ConnectionState


def _presence():
    from xs2a.psu import PsuContext

    return PsuContext(ip_address="198.51.100.7")


BALANCES = "/v1/accounts/{accountId}/balances"


@pytest.mark.parametrize(
    ("answer", "problem", "state"),
    [
        (bankfake.error(403, "CONSENT_UNKNOWN", "revoked"), FetchProblem.NEEDS_RECONNECT, S.NEEDS_RECONNECT),
        (bankfake.error(429, "ACCESS_EXCEEDED", "limit"), FetchProblem.LIMIT, S.ACTIVE),
        (bankfake.error(503, "SERVICE_UNAVAILABLE", "down"), FetchProblem.UNAVAILABLE, S.ACTIVE),
    ],
)
def test_bank_errors_on_refresh(alice, fake_bank, answer, problem, state):
    connection = BankConnectionFactory(user=alice)
    BankAccountFactory(connection=connection)
    fake_bank.add("GET", BALANCES, answer)

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
    # activity stamp is old (the session: none when it is in Redis)
    with django_assert_num_queries(5 + session_queries()):
        response = alice_client.get("/bank/accounts/")

    body = response.content.decode()
    assert response.status_code == 200
    # One headline balance per account: the available one (the booked one stays on the account page).
    assert body.count("-20.00 NOK") == n and "1,234.50 NOK" not in body
    assert "1.00 NOK" not in body
    assert "Balance at the end of the last day" not in body and body.count("Available now") == n


def test_refresh_now_fetches_the_accounts_of_a_pending_connection(alice, alice_client, fake_bank):
    """The bank answers one account and its balances."""
    connection = BankConnectionFactory(user=alice, state=S.PENDING)
    fake_bank.add("GET", "/v1/accounts", bankfake.accounts_list(bankfake.account("enc!!a1=", name="Brukskonto")))
    fake_bank.add("GET", "/v1/card-accounts", bankfake.card_accounts_list())
    fake_bank.add("GET", BALANCES, bankfake.balances("100.25", types=["expected"]))

    alice_client.post("/bank/accounts/refresh/")

    connection.refresh_from_db()
    assert connection.state == S.ACTIVE
    snapshot = BalanceSnapshot.objects.get()
    assert snapshot.amount == Decimal("100.25") and snapshot.account.name == "Brukskonto"
