"""The review page shows the money available on the debtor account when a consent of the user covers it (read
from the bank with the user present), and warns, without blocking, when the payment and its known fees are more
than that; without a covering consent, or when the bank cannot answer, the page works as before."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import BalanceSnapshot, RefreshCall
from core.models import BankCall
from payments.selectors import funds_check
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.bankfake import booked
from tests.live_bank import live_bank, live_bank_server  # noqa: F401 - the fixtures of the live test
from tests.payments.test_initiation import _draft

DEBTOR = "NO9386011117947"
BALANCES_PATH = "/v1/accounts/{account_id}/balances"
WARNING = 'class="message message-warning funds-warning"'
SUBMIT = "Send to the bank and approve"


@pytest.fixture
def connection(alice):
    return BankConnectionFactory(user=alice)


@pytest.fixture
def debtor(connection):
    return BankAccountFactory(connection=connection, iban=DEBTOR, name="Driftskonto")


def _available(fake_bank, amount: str) -> None:
    """The fake bank's available balance is 1000.00 plus its booked transactions."""
    fake_bank.booked = [booked("B1", str(Decimal(amount) - Decimal("1000.00")), timezone.localdate())]


def _review(browser, payment) -> str:
    response = browser.get(f"/payments/{payment.pk}/review/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 200
    return response.content.decode()


def test_the_available_balance_is_read_with_the_user_present_and_shown(
    alice_client, alice, connection, debtor, fake_bank
):
    _available(fake_bank, "200000.00")
    payment = _draft(alice, connection)  # 150 000 NOK

    html = _review(alice_client, payment)

    assert "Available on the account now" in html and "200,000.00 NOK" in html
    assert WARNING not in html and SUBMIT in html
    (call,) = BankCall.objects.all()
    assert call.path_template == BALANCES_PATH and call.psu_present and call.status == 200
    assert fake_bank.calls(present=False) == 0 and not RefreshCall.objects.exists()
    assert BalanceSnapshot.objects.filter(account=debtor, balance_type="interimAvailable").exists()


def test_a_payment_above_the_available_balance_is_warned_about_but_not_blocked(
    alice_client, alice, connection, debtor, fake_bank
):
    _available(fake_bank, "149999.99")
    payment = _draft(alice, connection)

    html = _review(alice_client, payment)

    assert WARNING in html
    assert "This payment of 150,000.00 NOK is more than the 149,999.99 NOK available" in html
    assert SUBMIT in html  # a warning, not a block


def test_the_known_fees_count(alice_client, alice, connection, debtor, fake_bank):
    _available(fake_bank, "150020.00")
    payment = _draft(alice, connection, fee_amount=Decimal("50.00"), fee_currency="NOK", fee_indicator=True)

    html = _review(alice_client, payment)

    assert WARNING in html and "This payment and its fees come to 150,050.00 NOK" in html


def test_a_payment_in_another_currency_is_compared_at_its_nok_equivalent(
    alice_client, alice, connection, debtor, fake_bank
):
    _available(fake_bank, "100000.00")
    payment = _draft(
        alice, connection, amount=Decimal("9000.00"), currency="EUR", nok_equivalent=Decimal("105300.00")
    )

    html = _review(alice_client, payment)

    assert WARNING in html and "comes to about 105,300.00 NOK at our exchange rate" in html


def test_currencies_that_cannot_be_compared_are_said_so():
    from payments.models import Payment

    payment = Payment(amount=Decimal("100.00"), currency="EUR", nok_equivalent=Decimal("1170.00"))

    check = funds_check(payment=payment, available=Decimal("5.00"), currency="USD")

    assert not check.comparable and not check.short
    assert funds_check(payment=payment, available=Decimal("5.00"), currency="EUR").short
    assert not funds_check(payment=payment, available=Decimal("100.00"), currency="EUR").short


def test_an_account_no_consent_covers_shows_nothing_and_asks_the_bank_nothing(
    alice_client, alice, connection, fake_bank
):
    BankAccountFactory(connection=connection, iban="NO1215030000001")  # another account
    payment = _draft(alice, connection)

    html = _review(alice_client, payment)

    assert "Available on the account now" not in html and "funds-" not in html
    assert fake_bank.received == [] and not BankCall.objects.exists()


def test_another_users_account_with_the_same_number_is_not_read(alice_client, alice, bob, connection, fake_bank):
    BankAccountFactory(connection=BankConnectionFactory(user=bob), iban=DEBTOR)
    payment = _draft(alice, connection)

    html = _review(alice_client, payment)

    assert "Available on the account now" not in html and fake_bank.received == []


@pytest.mark.parametrize("status", [503, 401])
def test_a_failed_read_says_so_and_the_payment_can_still_be_sent(
    alice_client, alice, connection, debtor, fake_bank, status
):
    fake_bank.fail_with = status
    payment = _draft(alice, connection)

    html = _review(alice_client, payment)

    assert "could not be read from the bank just now" in html and SUBMIT in html
    assert "Available on the account now" not in html and WARNING not in html
    # The error is in the audit log: one row per attempt (the client repeats a GET the bank answered 503).
    calls = BankCall.objects.order_by("attempt")
    assert [c.status for c in calls] == [status] * (3 if status == 503 else 1)


def test_an_old_stored_balance_is_not_used_when_the_bank_fails(alice_client, alice, connection, debtor, fake_bank):
    BalanceSnapshot.objects.create(
        account=debtor,
        balance_type="interimAvailable",
        amount=Decimal("10.00"),
        currency="NOK",
        fetched_at=timezone.now() - timedelta(hours=3),
    )
    fake_bank.fail_with = 503
    payment = _draft(alice, connection)

    html = _review(alice_client, payment)

    assert WARNING not in html and "10.00 NOK" not in html


@pytest.mark.live_bank
def test_against_the_sandbox_bank(live_bank, alice_client, alice):  # noqa: F811
    from core.templatetags.portal_format import money
    from tests.live_bank import portal_connect
    from tests.payments.journeys import account_named, cross_border, draft

    portal_connect(alice_client)
    account = account_named(alice, "Brukskonto")
    payment = draft(alice_client, cross_border(str(account.pk)))  # 150 000 NOK
    BankCall.objects.all().delete()

    html = _review(alice_client, payment)

    available = BalanceSnapshot.objects.filter(account=account, balance_type="interimAvailable").latest(
        "fetched_at"
    )
    assert available.fetched_at > timezone.now() - timedelta(minutes=1)
    assert f'class="funds-available">{money(available.amount_as_sent, "NOK")}<' in html
    assert (WARNING in html) == (available.amount < Decimal("150000"))
    (call,) = BankCall.objects.all()
    assert call.path_template == BALANCES_PATH and call.psu_present
