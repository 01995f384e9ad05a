"""The home page leads somewhere: a visitor is asked to create an account or sign in; a user without a connection
gets one "Connect your bank"; a user with connections sees what needs them first (connections to reconnect,
payments to sign, rejected, cancelled or settled lately), balances at a glance, the latest payments and "New
payment". The page's queries do not grow with the number of accounts or payments."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import BalanceSnapshot
from connections.models import ConnectionAccess, ConnectionState
from payments.models import PaymentAuthorisation, PaymentState
from payments.selectors_home import NOTICES_SHOWN, RECENT_PAYMENTS
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.payments.test_multisign import corporate_pair
from tests.signin import session_queries
from users.security import IDLE_EXPIRED_KEY

HOME = "/"


def _page(client) -> str:
    response = client.get(HOME)
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"]  # it may show balances
    return response.content.decode()


def _account_with_balance(connection, amount: str, **fields):
    account = BankAccountFactory(connection=connection, balances_refreshed_at=timezone.now(), **fields)
    BalanceSnapshot.objects.create(
        account=account,
        balance_type="interimAvailable",
        amount=Decimal(amount),
        currency="NOK",
        fetched_at=account.balances_refreshed_at,
    )
    return account


def _section(page: str, css_class: str) -> str:
    found = re.search(rf'<section class="card {css_class}"[^>]*>(.*?)</section>', page, re.S)
    assert found, css_class
    return found.group(1)


def _notice(page: str, payment) -> str:
    found = re.search(
        rf'<li class="notice notice-payment" data-payment="{payment.pk}"[^>]*>(.*?)</li>', page, re.S
    )
    assert found, f"no notice of payment {payment.pk}"
    return found.group(1)


def _settled(user, days_ago: float, **fields):
    return PaymentFactory(
        user=user,
        state=PaymentState.FINAL,
        transaction_status="ACSC",
        final_at=timezone.now() - timedelta(days=days_ago),
        **fields,
    )


def test_a_visitor_is_asked_to_create_an_account_or_sign_in(client):
    page = _page(client)
    start = _section(page, "home-start")
    assert f'class="button" href="{reverse("signup")}"' in start
    assert f'href="{reverse("login")}"' in start
    assert "home-balances" not in page and "New payment" not in page


def test_without_a_connection_the_one_action_is_connect_your_bank(alice_client, alice, bob):
    _account_with_balance(BankConnectionFactory(user=bob), "999.00")  # someone else's
    page = _page(alice_client)
    start = _section(page, "home-start")
    assert re.findall(r'class="button"[^>]*href="([^"]+)"', start) == [reverse("bank-connect")]
    assert "Connect your bank" in start and "Signed in as alice@example.com" in start
    assert "New payment" not in page and "home-balances" not in page and "999" not in page


def test_a_disconnected_connection_counts_as_none(alice_client, alice):
    BankConnectionFactory(user=alice, state=ConnectionState.DISCONNECTED)
    assert f'href="{reverse("bank-connect")}"' in _section(_page(alice_client), "home-start")


def test_with_connections_balances_recent_payments_and_new_payment(alice_client, alice, bob):
    connection = BankConnectionFactory(user=alice)
    spending = _account_with_balance(connection, "12345.50", name="Brukskonto")
    _account_with_balance(connection, "-20.00", name="Kredittkort")
    _account_with_balance(BankConnectionFactory(user=bob), "777.00", name="Bobs konto")
    now = timezone.now()
    payments = [
        PaymentFactory(user=alice, creditor_name=f"Creditor {n}", created_at=now - timedelta(hours=n))
        for n in range(RECENT_PAYMENTS + 1)
    ]
    PaymentFactory(user=bob, creditor_name="Bobs Creditor")

    page = _page(alice_client)

    start = _section(page, "home-start")
    assert f'class="button" href="{reverse("payment-new")}">New payment' in start
    balances = _section(page, "home-balances")
    assert "Brukskonto" in balances and "12,345.50" in balances and "Available now" in balances
    assert f'href="{reverse("bank-account", args=[spending.pk])}"' in balances
    assert "amount-negative" in balances  # the card's debt
    assert "Bobs konto" not in page and "777" not in page
    recent = _section(page, "home-payments")
    shown = re.findall(r"Creditor (\d)", recent)
    assert shown == [str(n) for n in range(RECENT_PAYMENTS)]  # newest first, the oldest one left out
    assert f'href="{reverse("payment-detail", args=[payments[0].pk])}"' in recent
    assert "Bobs Creditor" not in page


def test_connections_that_need_the_user_come_first_most_urgent_first(alice_client, alice):
    now = timezone.now()
    expiring = BankConnectionFactory(user=alice, consent_valid_until=now + timedelta(days=5))
    BankConnectionFactory(user=alice, consent_valid_until=now + timedelta(days=60))  # fine
    refused = BankConnectionFactory(user=alice, state=ConnectionState.NEEDS_RECONNECT)
    expired = BankConnectionFactory(user=alice, consent_valid_until=now - timedelta(hours=1))
    BankConnectionFactory(  # a payments-only connection has no consent to renew
        user=alice, access=ConnectionAccess.PAYMENTS, consent_valid_until=now - timedelta(days=1)
    )
    rejected = PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="RJCT", final_at=now)

    page = _page(alice_client)

    notices = _section(page, "home-notices")
    listed = re.findall(r'data-connection="(\d+)" data-need="(\w+)"', notices)
    assert listed == [(str(refused.pk), "reconnect"), (str(expired.pk), "expired"), (str(expiring.pk), "expiring")]
    assert f'action="{reverse("bank-reconnect", args=[expiring.pk])}"' in notices
    assert "The bank asks you to confirm your consent again." in notices
    assert notices.index(f'data-connection="{expiring.pk}"') < notices.index(f'data-payment="{rejected.pk}"')
    assert page.index("home-notices") < page.index("home-balances")  # at the top, under the main action


def test_payment_notices_say_what_happened_in_plain_words(alice_client, alice):
    BankConnectionFactory(user=alice)
    now = timezone.now()
    no_money = PaymentFactory(
        user=alice, state=PaymentState.FINAL, transaction_status="RJCT", final_at=now, creditor_name="Poor AS"
    )
    status_event(no_money, "ACCP", funds_available=False)
    status_event(no_money, "RJCT")
    said = PaymentFactory(
        user=alice,
        state=PaymentState.FINAL,
        transaction_status="RJCT",
        final_at=now,
        tpp_messages=[{"category": "ERROR", "code": "PAYMENT_FAILED", "text": "Creditor account closed"}],
    )
    cancelled = PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="CANC", final_at=now)
    settled = _settled(alice, 2)
    long_ago = _settled(alice, NOTICES_SHOWN, creditor_name="Long Ago GmbH")
    waiting = PaymentFactory(user=alice, transaction_status="RCVD")

    page = _page(alice_client)

    assert "did not have enough money" in _notice(page, no_money) and "Rejected" in _notice(page, no_money)
    assert "The bank says: Creditor account closed" in _notice(page, said)
    assert "Cancelled" in _notice(page, cancelled) and "No money was moved" in _notice(page, cancelled)
    assert "Paid" in _notice(page, settled) and "the money has left your account" in _notice(page, settled)
    notices = _section(page, "home-notices")
    assert f'data-payment="{long_ago.pk}"' not in notices  # settled more than 7 days ago
    assert f'data-payment="{waiting.pk}"' not in notices  # nothing to say yet
    order = [int(pk) for pk in re.findall(r'notice-payment" data-payment="(\d+)"', notices)]
    assert order.index(no_money.pk) < order.index(cancelled.pk) < order.index(settled.pk)


def test_a_payment_waiting_for_a_second_signer(alice, bob):
    payment = corporate_pair(alice, bob, transaction_status="PATC", creditor_name="Leverandør AS")

    initiator = Client()
    initiator.force_login(alice)
    mine = _notice(_page(initiator), payment)
    assert "Waits for another signer" in mine and "Review and sign" not in mine

    cosigner = Client()
    cosigner.force_login(bob)
    theirs = _notice(_page(cosigner), payment)
    assert "Waits for your signature" in theirs
    assert f'class="button" href="{reverse("payment-detail", args=[payment.pk])}">Review and sign' in theirs

    PaymentAuthorisation.objects.create(payment=payment, signer=bob, completed_at=timezone.now())
    assert "Waits for another signer" in _notice(_page(cosigner), payment)


def test_notices_are_capped_with_a_link_to_every_payment(alice_client, alice):
    BankConnectionFactory(user=alice)
    for n in range(NOTICES_SHOWN + 1):
        _settled(alice, n / 10)
    notices = _section(_page(alice_client), "home-notices")
    assert notices.count('class="notice notice-payment"') == NOTICES_SHOWN
    assert f'href="{reverse("payment-list")}"' in notices


def test_an_idle_session_shows_no_balances(alice_client, alice):
    _account_with_balance(BankConnectionFactory(user=alice), "4321.00")
    session = alice_client.session
    session[IDLE_EXPIRED_KEY] = True
    session.save()
    page = _page(alice_client)
    assert "Signed in as alice@example.com" in page
    assert "4,321" not in page and "home-balances" not in page


def test_the_home_page_in_bokmal(alice_client, alice):
    _account_with_balance(BankConnectionFactory(user=alice), "10.00")
    alice_client.cookies["django_language"] = "nb"
    page = _page(alice_client)
    assert "Ny betaling" in page and "Saldoer" in page and "Siste betalinger" in page


def _counted(user, django_assert_num_queries) -> None:
    browser = Client()
    browser.force_login(user)
    browser.get(HOME)  # the session's first write is not the page's
    with django_assert_num_queries(7 + session_queries()):
        browser.get(HOME)


@pytest.mark.parametrize("n", [1, 6])
def test_the_queries_do_not_grow_with_accounts_and_payments(alice, django_assert_num_queries, n):
    """The session (1, none when it is in Redis) and user (1), the connections (1), the accounts and their
    balances (2), the agreements (1), the recent payments (1) and the notices (1): 8, with 1 or 6 of each."""
    for _ in range(n):
        connection = BankConnectionFactory(user=alice, consent_valid_until=timezone.now() + timedelta(days=3))
        _account_with_balance(connection, "100.00")
        _settled(alice, 1)
        PaymentFactory(user=alice, connection=connection)
    _counted(alice, django_assert_num_queries)
