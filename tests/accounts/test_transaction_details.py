"""One transaction's page reads the bank's details while the user looks at it: once (attended, audited), then from
the stored copy for a few hours; what only the details answer holds is shown in plain words; the opaque
transactionId is never shown; a bank failure leaves the page working with a note; another user's transaction is a
404 and asks the bank nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import TRANSACTION_DETAILS_FRESH, RefreshCall, Transaction, TransactionStatus
from connections.models import ConnectionState
from core.models import BankCall
from tests.accounts.test_account_pages import TransactionFactory
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.bankfake import booked

OPAQUE_ID = "enc!!Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA=="
DETAILS_PATH = "/v1/accounts/{account_id}/transactions/{transaction_id}"


@pytest.fixture
def account(alice):
    return BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Brukskonto")


@pytest.fixture
def tx(account, fake_bank):
    """A booked transaction as the list gave it; the bank's details add what the list does not carry."""
    day = timezone.localdate()
    record = booked(OPAQUE_ID, "-250.00", day, "Fjordkraft AS")
    fake_bank.booked = [record]
    fake_bank.details[OPAQUE_ID] = {
        "debtorName": "Kari Nordmann",
        "debtorAccount": {"iban": "NO8330001234567"},
        "entryReference": "ENTRY-4471",
        "remittanceInformationStructuredArray": [{"reference": "000123456789", "referenceType": "KID"}],
        "additionalInformationProprietary1": "Varekjøp strøm",
        "proprietaryBankTransactionCode": "R_710",
    }
    return TransactionFactory(
        account=account,
        transaction_id=OPAQUE_ID,
        amount="-250.00",
        counterparty_name="Fjordkraft AS",
        counterparty_account="NO9386011117947",
        remittance="Fjordkraft AS",
        raw=record,
    )


def _page(browser, tx) -> str:
    response = browser.get(f"/bank/transactions/{tx.pk}/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 200
    return response.content.decode()


def _details_calls():
    return BankCall.objects.filter(path_template=DETAILS_PATH)


def test_the_page_reads_the_details_once_with_the_user_present_then_from_the_stored_copy(
    alice_client, tx, fake_bank
):
    first = _page(alice_client, tx)
    second = _page(alice_client, tx)

    (call,) = _details_calls()
    assert call.status == 200 and call.psu_present and call.method == "GET"
    assert BankCall.objects.count() == 1
    assert fake_bank.calls(present=True, kind="details") == 1 and fake_bank.calls(present=False) == 0
    assert not RefreshCall.objects.exists()  # attended: nothing of the unattended allowance is spent
    stored = Transaction.objects.get(pk=tx.pk)
    assert stored.details["entryReference"] == "ENTRY-4471" and stored.details_read_at is not None
    for html in (first, second):
        assert "Varekjøp strøm" in html and "000123456789" in html and "ENTRY-4471" in html


def test_the_stored_copy_is_read_again_after_some_hours(alice_client, tx, fake_bank):
    _page(alice_client, tx)
    Transaction.objects.filter(pk=tx.pk).update(
        details_read_at=timezone.now() - TRANSACTION_DETAILS_FRESH - timedelta(minutes=1)
    )
    fake_bank.details[OPAQUE_ID]["additionalInformationProprietary1"] = "Varekjøp, rettet"

    html = _page(alice_client, tx)

    assert _details_calls().count() == 2
    assert "Varekjøp, rettet" in html


def test_fields_only_in_the_details_are_shown_in_plain_words(alice_client, tx):
    html = _page(alice_client, tx)

    assert "Paid from" in html and "Kari Nordmann" in html and "NO8330001234567" in html
    assert "Paid to" in html and "Fjordkraft AS" in html and "NO9386011117947" in html
    assert ">KID<" in html and "000123456789" in html
    assert "From the bank</dt><dd>Varekjøp strøm" in html
    assert "The bank's transaction code" in html and "R_710" in html
    details_part = html.split("<details", 1)[1]
    assert "R_710" in details_part  # the code only behind the disclosure
    assert "R_710" not in html.split("<details", 1)[0]
    # The bank's id of the entry (often an opaque token) is no reference: only behind the disclosure too.
    assert 'The bank\'s id of the entry</dt><dd><code class="technical-id">ENTRY-4471</code>' in details_part
    assert "ENTRY-4471" not in html.split("<details", 1)[0] and "The bank's reference" not in html


def test_the_opaque_transaction_id_is_never_shown(alice_client, tx):
    html = _page(alice_client, tx)

    assert OPAQUE_ID not in html and "transactionId" not in html
    assert "_links" not in html


def test_without_an_entry_reference_no_bank_reference_is_shown(alice_client, tx, fake_bank):
    del fake_bank.details[OPAQUE_ID]["entryReference"]

    html = _page(alice_client, tx)

    assert "The bank's id of the entry" not in html and OPAQUE_ID not in html


@pytest.mark.parametrize("status", [500, 503])
def test_a_bank_failure_shows_the_list_record_with_a_note(alice_client, tx, fake_bank, status):
    fake_bank.fail_with = status

    html = _page(alice_client, tx)

    assert "could not be read just now" in html
    assert "Shown as the bank's list of transactions gives it." in html
    assert "Fjordkraft AS" in html and "NO9386011117947" in html
    assert "Kari Nordmann" not in html and OPAQUE_ID not in html
    # The error is in the audit log: one row per attempt (the client repeats a GET the bank answered 503).
    calls = list(_details_calls().order_by("attempt"))
    assert [c.status for c in calls] == [status] * (3 if status == 503 else 1)
    stored = Transaction.objects.get(pk=tx.pk)
    assert stored.details is None and stored.details_read_at is None


def test_a_failure_after_an_earlier_read_shows_that_read_with_its_time(alice_client, tx, fake_bank):
    _page(alice_client, tx)
    Transaction.objects.filter(pk=tx.pk).update(details_read_at=timezone.now() - timedelta(days=2))
    fake_bank.fail_with = 503

    html = _page(alice_client, tx)

    assert "could not be read just now" in html and "Shown as the bank gave them on" in html
    assert "Kari Nordmann" in html


def test_a_consent_error_asks_to_reconnect_and_marks_the_connection(alice_client, tx, fake_bank, account):
    fake_bank.fail_with = 401

    html = _page(alice_client, tx)

    assert "confirm your consent again" in html and 'href="/bank/connections/' in html
    account.connection.refresh_from_db()
    assert account.connection.state == ConnectionState.NEEDS_RECONNECT
    # Reconnecting is needed first: the bank is not asked again meanwhile.
    _page(alice_client, tx)
    assert _details_calls().count() == 1


def test_a_pending_transaction_asks_the_bank_nothing(alice_client, account, fake_bank):
    tx = TransactionFactory(account=account, transaction_id="", status=TransactionStatus.PENDING)

    html = _page(alice_client, tx)

    assert "once it is booked" in html
    assert fake_bank.received == [] and not BankCall.objects.exists()


@pytest.mark.parametrize("stranger", ["bob", "charlie"])
def test_another_users_transaction_is_404_and_asks_the_bank_nothing(request, tx, fake_bank, stranger):
    browser = Client()
    browser.force_login(request.getfixturevalue(stranger))

    assert browser.get(f"/bank/transactions/{tx.pk}/").status_code == 404
    assert fake_bank.received == [] and not BankCall.objects.exists()


@pytest.mark.live_bank
def test_against_the_sandbox_bank_the_details_add_what_the_list_does_not_carry(live_bank, alice_client, alice):
    from accounts.models import BankAccount
    from tests.live_bank import portal_connect

    portal_connect(alice_client)
    current = BankAccount.objects.get(connection__user=alice, name="Brukskonto")
    alice_client.post(f"/bank/accounts/{current.pk}/refresh/", REMOTE_ADDR="203.0.113.9")
    # A card purchase: the sandbox bank tells "Varekjøp" only in the details answer.
    tx = Transaction.objects.filter(
        account=current, status=TransactionStatus.BOOKED, raw__proprietaryBankTransactionCode="R_741"
    ).first()
    assert tx is not None and "additionalInformationProprietary1" not in tx.raw
    BankCall.objects.all().delete()

    html = _page(alice_client, tx)
    _page(alice_client, tx)

    assert "From the bank</dt><dd>Varekjøp" in html and tx.transaction_id not in html
    (call,) = _details_calls()
    assert call.status == 200 and call.psu_present
