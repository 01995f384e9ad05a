"""The admin of bank connections, accounts, balances and transactions: masked identifiers, search by keyed hash,
filters, the reconnection action with its admin log, the refresh budget, the roles, CSV export."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse
from django.utils import timezone

from accounts.ledger import reserve
from accounts.models import BalanceSnapshot, RefreshKind, Transaction, TransactionStatus
from connections.crypto import lookup_hash
from connections.models import ConnectionEvent, ConnectionState
from staff.admin.helpers import masked
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.staff.fixtures import PSU_CORPORATE_ID, PSU_ID

pytestmark = pytest.mark.django_db

CONNECTIONS = reverse("admin:connections_bankconnection_changelist")
ACCOUNTS = reverse("admin:accounts_bankaccount_changelist")


def listed(response) -> list:
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def mark(client, *connections, reason="Bank reported a revoked consent by phone", follow=True):
    """The action with its confirmation answered (``reason`` None: the first step, the confirmation page)."""
    data = {"action": "mark_needs_reconnect", "_selected_action": [c.pk for c in connections]}
    if reason is not None:
        data.update(apply="yes", reason=reason)
    return client.post(CONNECTIONS, data, follow=follow)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_identifiers_are_masked_and_found_only_by_their_exact_value(support_client, alice, bob):
    corporate = BankConnectionFactory(
        user=alice,
        context="CORPORATE",
        psu_id=PSU_ID,
        psu_corporate_id=PSU_CORPORATE_ID,
        psu_corporate_id_hash=lookup_hash(PSU_CORPORATE_ID),
        agreement_name="Fjord AS",
    )
    other = BankConnectionFactory(user=bob)

    page = support_client.get(CONNECTIONS).content.decode()
    assert PSU_ID not in page and PSU_CORPORATE_ID not in page
    assert masked(PSU_ID) in page and masked(other.psu_id) in page

    detail = support_client.get(reverse("admin:connections_bankconnection_change", args=[corporate.pk]))
    html = detail.content.decode()
    assert PSU_ID not in html and PSU_CORPORATE_ID not in html
    assert masked(PSU_ID) in html and masked(PSU_CORPORATE_ID) in html
    assert "Fjord AS" in html

    def found(term: str) -> list:
        return listed(support_client.get(CONNECTIONS, {"q": term}))

    assert found(PSU_ID) == [corporate]
    assert found(PSU_ID.upper()) == [corporate]  # the hash is of the normalised value
    assert found(PSU_CORPORATE_ID) == [corporate]
    assert found(PSU_ID[:12]) == []  # no partial match: the clear value is nowhere to compare with
    assert found("bob@example.com") == [other]
    assert found("Fjord") == [corporate]


def test_filters_by_state_context_and_consent_validity(support_client, alice):
    now = timezone.now()
    valid = BankConnectionFactory(user=alice, sca_at=now - timedelta(days=10))
    expiring = BankConnectionFactory(user=alice, sca_at=now - timedelta(days=175), context="CORPORATE")
    expired = BankConnectionFactory(
        user=alice, sca_at=now - timedelta(days=200), state=ConnectionState.NEEDS_RECONNECT
    )
    payments_only = BankConnectionFactory(user=alice, consent_valid_until=None)

    def only(**params) -> set[int]:
        return {c.pk for c in listed(support_client.get(CONNECTIONS, params))}

    assert only(consent="valid") == {valid.pk, expiring.pk}
    assert only(consent="expiring") == {expiring.pk}
    assert only(consent="expired") == {expired.pk}
    assert only(consent="none") == {payments_only.pk}
    assert only(state__exact=ConnectionState.NEEDS_RECONNECT) == {expired.pk}
    assert only(context__exact="CORPORATE") == {expiring.pk}


def test_marking_asks_for_a_reason_first_and_changes_nothing_until_given(operator_client, alice):
    connection = BankConnectionFactory(user=alice, state=ConnectionState.ACTIVE)

    confirmation = mark(operator_client, connection, reason=None)
    assert confirmation.status_code == 200
    html = confirmation.content.decode()
    assert "Why (kept in the connection" in html and str(connection) in html and "alice@example.com" in html

    refused = mark(operator_client, connection, reason="   ")
    assert refused.status_code == 200 and "Say why" in refused.content.decode()

    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE
    assert not ConnectionEvent.objects.exists() and not LogEntry.objects.exists()


def test_an_operator_marks_a_connection_for_reconnection_with_timeline_and_admin_log(
    operator_client, operator, alice
):
    connection = BankConnectionFactory(user=alice, state=ConnectionState.ACTIVE)
    gone = BankConnectionFactory(user=alice, state=ConnectionState.DISCONNECTED, psu_id="", psu_id_hash="")

    response = mark(operator_client, connection, gone)

    connection.refresh_from_db()
    gone.refresh_from_db()
    assert connection.state == ConnectionState.NEEDS_RECONNECT
    assert gone.state == ConnectionState.DISCONNECTED
    event = ConnectionEvent.objects.get(connection=connection)
    assert (event.from_state, event.to_state, event.actor, event.reason) == (
        ConnectionState.ACTIVE,
        ConnectionState.NEEDS_RECONNECT,
        operator,
        "staff: Bank reported a revoked consent by phone",
    )
    entry = LogEntry.objects.get()
    assert (entry.user, entry.action_flag, entry.object_id) == (operator, CHANGE, str(connection.pk))
    assert entry.get_change_message() == "Marked as needing reconnection: Bank reported a revoked consent by phone"
    shown = messages_of(response)
    assert any("marked as needing reconnection" in m for m in shown)
    assert any("disconnected connection cannot be marked" in m for m in shown)


def test_support_sees_no_action_and_cannot_change_a_connection(support_client, alice):
    connection = BankConnectionFactory(user=alice)
    listing = support_client.get(CONNECTIONS)
    assert "mark_needs_reconnect" not in listing.content.decode()
    assert "export_csv" in listing.content.decode()

    mark(support_client, connection)
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE
    assert not ConnectionEvent.objects.exists() and not LogEntry.objects.exists()

    change_url = reverse("admin:connections_bankconnection_change", args=[connection.pk])
    assert support_client.post(change_url, {"state": ConnectionState.DISCONNECTED}).status_code == 403
    assert support_client.get(reverse("admin:connections_bankconnection_add")).status_code == 403
    delete_url = reverse("admin:connections_bankconnection_delete", args=[connection.pk])
    assert support_client.post(delete_url, {"post": "yes"}).status_code == 403
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE


def test_the_connection_page_is_read_only_even_for_an_operator(operator_client, alice):
    connection = BankConnectionFactory(user=alice)
    url = reverse("admin:connections_bankconnection_change", args=[connection.pk])
    assert operator_client.post(url, {"state": ConnectionState.DISCONNECTED}).status_code == 403
    connection.refresh_from_db()
    assert connection.state == ConnectionState.ACTIVE


def test_csv_export_of_connections_is_masked_and_defused(operator_client, alice):
    connection = BankConnectionFactory(
        user=alice, psu_id=PSU_ID, context="CORPORATE", agreement_name='=HYPERLINK("http://evil.example")'
    )
    response = operator_client.post(CONNECTIONS, {"action": "export_csv", "_selected_action": [connection.pk]})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode()
    assert PSU_ID not in text
    assert text.startswith("\ufeff")
    header, row = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    values = dict(zip(header, row, strict=True))
    assert values["PSU-ID"] == masked(PSU_ID)
    assert values["agreement"] == '\'=HYPERLINK("http://evil.example")'
    assert values["user"] == "alice@example.com"
    assert values["context"] == "Corporate"


def test_accounts_show_their_refresh_budget_in_the_list_and_on_their_page(support_client, alice):
    now = timezone.now()
    spent = BankAccountFactory(connection__user=alice)
    fresh = BankAccountFactory(connection=spent.connection)
    for minutes in (30, 20, 10):
        reserve(account=spent, kinds=(RefreshKind.TRANSACTIONS,), now=now - timedelta(minutes=minutes))
    reserve(account=spent, kinds=(RefreshKind.BALANCES,), now=now - timedelta(minutes=5))
    # outside the rolling 24 hours: not counted
    reserve(account=fresh, kinds=(RefreshKind.BALANCES,), now=now - timedelta(hours=25))
    # then the bank answered 429, and the planner set the next refresh
    spent.next_refresh_at = now + timedelta(hours=3)
    spent.refresh_blocked_until = now + timedelta(hours=1)
    spent.save(update_fields=["next_refresh_at", "refresh_blocked_until"])

    response = support_client.get(ACCOUNTS)
    rows = {account.pk: account for account in listed(response)}
    assert rows[spent.pk].refresh_budget.used == 3 and rows[fresh.pk].refresh_budget.used == 0
    assert rows[spent.pk].refresh_budget.blocked_until == spent.refresh_blocked_until
    assert rows[spent.pk].refresh_budget.next_due_at == spent.next_refresh_at
    assert rows[fresh.pk].refresh_budget.blocked_until is None
    html = response.content.decode()
    assert "3 of 4" in html and "0 of 4" in html

    page = support_client.get(reverse("admin:accounts_bankaccount_change", args=[spent.pk])).content.decode()
    assert "3 of 4" in page
    assert "blocked until (429)" in page.lower()


def test_the_account_list_reads_budgets_in_a_constant_number_of_queries(
    support_client, alice, django_assert_max_num_queries
):
    connection = BankConnectionFactory(user=alice)
    BankAccountFactory.create_batch(3, connection=connection)
    support_client.get(ACCOUNTS)  # warm the caches (content types, session)
    with django_assert_max_num_queries(12) as few:
        support_client.get(ACCOUNTS)
    BankAccountFactory.create_batch(30, connection=connection)
    with django_assert_max_num_queries(len(few.captured_queries)):
        support_client.get(ACCOUNTS)


def test_balances_and_transactions_are_listed_filtered_and_searched(support_client, alice):
    account = BankAccountFactory(connection__user=alice, iban="NO9386011117947")
    now = timezone.now()
    BalanceSnapshot.objects.create(
        account=account, balance_type="interimAvailable", amount=Decimal("1200.5"), currency="NOK", fetched_at=now
    )
    common = {"account": account, "currency": "NOK", "first_seen_at": now, "updated_at": now, "fingerprint": "f"}
    rent = Transaction.objects.create(
        transaction_id="T-1",
        status=TransactionStatus.BOOKED,
        booking_date=now.date(),
        amount=Decimal("-9500.00"),
        counterparty_name="Utleie AS",
        remittance="Husleie mars",
        **common,
    )
    pending = Transaction.objects.create(
        status=TransactionStatus.PENDING, amount=Decimal("-120.00"), counterparty_name="Kiwi", **common
    )

    balances = listed(
        support_client.get(reverse("admin:accounts_balancesnapshot_changelist"), {"account__id": account.pk})
    )
    assert [b.balance_type for b in balances] == ["interimAvailable"]

    url = reverse("admin:accounts_transaction_changelist")
    assert {t.pk for t in listed(support_client.get(url, {"status__exact": "pending"}))} == {pending.pk}
    assert listed(support_client.get(url, {"q": "Husleie"})) == [rent]
    assert listed(support_client.get(url, {"q": "T-1"})) == [rent]
    assert listed(support_client.get(url, {"q": "NO9386011117947"})) != []
    assert "-9\xa0500.00<" in support_client.get(url).content.decode()  # minor units, thousands grouped

    # The export keeps the signed amount exact and numeric (a minus sign here is not a formula).
    export = support_client.post(url, {"action": "export_csv", "_selected_action": [rent.pk, pending.pk]})
    header, *rows = list(
        csv.reader(io.StringIO(b"".join(export.streaming_content).decode().removeprefix("\ufeff")))
    )
    amounts = sorted(Decimal(dict(zip(header, row, strict=True))["amount"]) for row in rows)
    assert amounts == [Decimal("-9500"), Decimal("-120")]
    assert all(not row[header.index("amount")].startswith("'") for row in rows)

    page = support_client.get(reverse("admin:accounts_transaction_change", args=[rent.pk]))
    assert page.status_code == 200 and "Utleie AS" in page.content.decode()
    assert support_client.get(reverse("admin:accounts_transaction_add")).status_code == 403


def test_customers_and_anonymous_visitors_are_refused(client, alice):
    connection = BankConnectionFactory(user=alice, psu_id=PSU_ID)
    for url in (CONNECTIONS, reverse("admin:connections_bankconnection_change", args=[connection.pk]), ACCOUNTS):
        anonymous = client.get(url)
        assert anonymous.status_code == 302 and reverse("admin:login") in anonymous["Location"]
    client.force_login(alice)
    for url in (CONNECTIONS, reverse("admin:connections_bankconnection_change", args=[connection.pk]), ACCOUNTS):
        refused = client.get(url)
        assert refused.status_code == 403 and "Location" not in refused  # refused where asked
        assert PSU_ID not in refused.content.decode()
