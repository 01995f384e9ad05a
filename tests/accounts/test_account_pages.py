"""The accounts pages of end users: the overview (balances, refreshes, budget, 429 block, constant queries), the
account page (booked and pending apart, filters, keyset pagination), one transaction, the ownership matrix of
every page with an id, and "Refresh now" for one account."""

from __future__ import annotations

import re
from datetime import date, timedelta
from decimal import Decimal

import factory
import pytest
from django.db import connection as db_connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import formats, timezone

from accounts import refresh
from accounts.models import BalanceSnapshot, BankAccount, RefreshCall, RefreshKind, Transaction, TransactionStatus
from accounts.selectors import Cursor
from connections.models import ConnectionState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory


class TransactionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Transaction

    account = factory.SubFactory(BankAccountFactory)
    transaction_id = factory.Sequence(lambda n: f"TX-{n:06d}")
    status = TransactionStatus.BOOKED
    booking_date = factory.LazyFunction(timezone.localdate)
    value_date = factory.LazyAttribute(lambda t: t.booking_date)
    amount = Decimal("-100.00")
    currency = "NOK"
    counterparty_name = "Rema 1000"
    remittance = ""
    fingerprint = factory.Sequence(lambda n: f"{n:064x}")
    raw = factory.LazyFunction(dict)
    first_seen_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


def booked_rows(account: BankAccount, count: int, *, start: date | None = None, per_day: int = 3) -> None:
    """``count`` booked transactions, ``per_day`` on each day going back from ``start`` (bulk: fast)."""
    start = start or timezone.localdate()
    now = timezone.now()
    Transaction.objects.bulk_create(
        Transaction(
            account=account,
            transaction_id=f"B-{account.pk}-{n}",
            status=TransactionStatus.BOOKED,
            booking_date=start - timedelta(days=n // per_day),
            amount=Decimal(-n - 1),
            currency="NOK",
            counterparty_name=f"Shop {n}",
            fingerprint=f"{n:064x}",
            first_seen_at=now,
            updated_at=now,
        )
        for n in range(count)
    )


def _html(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _shown(moment) -> str:
    return formats.date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")


def _ids_on(html: str, table: str) -> list[int]:
    """The transaction ids listed in the table with class ``transactions-<table>``, in page order."""
    match = re.search(rf'<table class="transactions transactions-{table}">(.*?)</table>', html, re.S)
    assert match, f"no {table} table"
    return [int(pk) for pk in re.findall(r'data-transaction="(\d+)"', match.group(1))]


@pytest.fixture(autouse=True)
def _in_process_bank(request):
    """The transaction page reads the bank's details: the fake bank, which knows none of these rows (the tests
    against the sandbox bank keep the real client)."""
    if not request.node.get_closest_marker("live_bank"):
        request.getfixturevalue("fake_bank")


@pytest.fixture
def account(alice) -> BankAccount:
    return BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Brukskonto")


# --- the overview ---------------------------------------------------------------------------------------------


def test_overview_shows_balances_refresh_times_next_refresh_and_calls_left(alice_client, account):
    now = timezone.now()
    account.balances_refreshed_at = now - timedelta(hours=1)
    account.transactions_refreshed_at = now - timedelta(hours=2)
    account.next_refresh_at = now + timedelta(hours=5)
    account.save()
    for balance_type, amount in [("interimAvailable", "1200.5"), ("closingBooked", "-75.25")]:
        BalanceSnapshot.objects.create(
            account=account,
            balance_type=balance_type,
            amount=Decimal(amount),
            currency="NOK",
            fetched_at=account.balances_refreshed_at,
        )
    for hours in (1, 3, 30):  # two in the last 24 hours count, one from yesterday does not
        RefreshCall.objects.create(
            account=account,
            resource_key=RefreshCall.key_for(account),
            kind=RefreshKind.BALANCES,
            reserved_at=now - timedelta(hours=hours),
        )

    html = _html(alice_client.get("/bank/accounts/"))

    row = re.search(rf'data-account="{account.pk}">(.*?)</tr>', html, re.S).group(1)
    assert f'href="/bank/accounts/{account.pk}/"' in row
    # One headline balance: the one the bank calls available, explained; the booked one is on the account page.
    assert "Available now" in row and "1,200.50 NOK" in row and "What the bank says you can use now." in row
    assert "Balance at the end of the last day" not in row and "-75.25 NOK" not in row
    detail = _html(alice_client.get(f"/bank/accounts/{account.pk}/"))
    assert "1,200.50 NOK" in detail and "-75.25 NOK" in detail
    assert _shown(account.balances_refreshed_at) in row
    assert _shown(account.transactions_refreshed_at) in row
    assert re.search(rf'class="refresh-next">{re.escape(_shown(account.next_refresh_at))}<', row)
    assert re.search(r'class="refresh-remaining">\s*2 of 4\s*<', row)
    assert "Paused by the bank" not in row


@pytest.mark.parametrize(
    ("sent", "shown", "words"),
    [
        (["closingBooked", "expected", "interimBooked"], "expected", "payments on their way counted"),
        (["openingBooked", "closingBooked", "interimBooked"], "closingBooked", "Booked at the end of the last"),
        (["interimBooked", "openingBooked"], "interimBooked", "Booked so far today"),
        (["forwardAvailable"], "forwardAvailable", "As the bank reported it."),
    ],
)
def test_overview_headline_is_available_else_booked(alice_client, account, sent, shown, words):
    now = timezone.now()
    BankAccount.objects.filter(pk=account.pk).update(balances_refreshed_at=now)
    for n, balance_type in enumerate(sent):
        BalanceSnapshot.objects.create(
            account=account, balance_type=balance_type, amount=Decimal(100 + n), currency="NOK", fetched_at=now
        )

    html = _html(alice_client.get("/bank/accounts/"))

    cell = re.search(r'<td class="headline-balance">(.*?)</td>', html, re.S).group(1)
    assert f"{100 + sent.index(shown)}.00 NOK" in cell and words in cell
    assert len(re.findall(r"\d\.00 NOK", cell)) == 1


def test_a_headline_in_the_accounts_currency_wins(account):
    from accounts.selectors import headline_balance

    balances = [
        BalanceSnapshot(balance_type="interimAvailable", amount=Decimal(1), currency="EUR"),
        BalanceSnapshot(balance_type="closingBooked", amount=Decimal(2), currency="NOK"),
    ]
    assert headline_balance(balances=balances, currency="NOK").balance.currency == "NOK"
    assert headline_balance(balances=balances, currency="SEK").balance.balance_type == "interimAvailable"
    assert headline_balance(balances=[], currency="NOK") is None


def test_corporate_accounts_are_labelled_with_their_company(alice_client, alice):
    accounts = [
        BankAccountFactory(
            connection=BankConnectionFactory(user=alice, context="CORPORATE", agreement_name=company),
            name="Driftskonto",
        )
        for company in ("Fjellbygg Entreprenør AS", "Havbruk Nord AS")
    ]
    private = BankAccountFactory(
        connection=BankConnectionFactory(user=alice, agreement_name="Alice - privat"), name="Brukskonto"
    )

    html = _html(alice_client.get("/bank/accounts/"))

    for account, company in zip(accounts, ("Fjellbygg Entreprenør AS", "Havbruk Nord AS"), strict=True):
        row = re.search(rf'data-account="{account.pk}">(.*?)</tr>', html, re.S).group(1)
        assert f'Driftskonto</a> <span class="account-company">{company}</span>' in row
        title = re.search(r"<h1[^>]*>(.*?)</h1>", _html(alice_client.get(f"/bank/accounts/{account.pk}/")), re.S)
        assert f'Driftskonto <span class="account-company">{company}</span>' in title.group(1)
    row = re.search(rf'data-account="{private.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "account-company" not in row and "privat" not in row


def test_the_transaction_filters_are_folded_unless_one_is_active(alice_client, account):
    fold = re.compile(r'<details class="filters" data-fold( open data-fold-open)?>')
    url = f"/bank/accounts/{account.pk}/"

    assert fold.search(_html(alice_client.get(url))).group(1) is None
    assert fold.search(_html(alice_client.get(url, {"q": ""}))).group(1) is None
    assert fold.search(_html(alice_client.get(url, {"q": "REMA"}))).group(1) == " open data-fold-open"
    bad = alice_client.get(url, {"date_from": "2026-02-02", "date_to": "2026-02-01"}).content.decode()
    assert fold.search(bad).group(1) == " open data-fold-open"  # the error shows next to its field


def test_overview_shows_a_429_block_with_its_end(alice_client, account):
    until = timezone.now() + timedelta(hours=7)
    BankAccount.objects.filter(pk=account.pk).update(refresh_blocked_until=until, next_refresh_at=until)

    html = _html(alice_client.get("/bank/accounts/"))

    block = re.search(r'<p class="refresh-blocked"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert "Paused by the bank" in block and _shown(until) in block


def test_an_ended_429_block_is_not_shown(alice_client, account):
    BankAccount.objects.filter(pk=account.pk).update(refresh_blocked_until=timezone.now() - timedelta(minutes=1))
    assert "Paused by the bank" not in _html(alice_client.get("/bank/accounts/"))


def _accounts_with_balances(user, count: int) -> None:
    connection = BankConnectionFactory(user=user)
    now = timezone.now()
    for _ in range(count):
        account = BankAccountFactory(connection=connection, balances_refreshed_at=now)
        BalanceSnapshot.objects.create(
            account=account, balance_type="interimAvailable", amount=Decimal(10), currency="NOK", fetched_at=now
        )
        RefreshCall.objects.create(
            account=account, resource_key=RefreshCall.key_for(account), kind="balances", reserved_at=now
        )


def test_overview_queries_do_not_grow_with_the_number_of_accounts(alice, bob, django_assert_num_queries):
    _accounts_with_balances(alice, 5)
    _accounts_with_balances(bob, 50)
    few, many = Client(), Client()
    few.force_login(alice)
    many.force_login(bob)
    few.get("/bank/accounts/")  # warm-up: the session's first request writes it
    many.get("/bank/accounts/")
    with CaptureQueriesContext(db_connection) as five:
        assert _html(few.get("/bank/accounts/")).count('class="account-row"') == 5

    with django_assert_num_queries(len(five.captured_queries)):
        assert _html(many.get("/bank/accounts/")).count('class="account-row"') == 50


# --- the ownership matrix ---------------------------------------------------------------------------------------

# (method, url name, which object's id, the owner's expected status)
ID_PAGES = [
    ("get", "bank-account", "account", 200),
    ("get", "bank-account-export", "account", 200),
    ("post", "bank-account-refresh", "account", 302),
    ("get", "bank-transaction", "transaction", 200),
]


@pytest.fixture
def owned(account) -> dict:
    return {"account": account, "transaction": TransactionFactory(account=account)}


@pytest.fixture
def refresh_calls(monkeypatch) -> list[dict]:
    """Replaces accounts.refresh.account_refresh (the bank is not needed to check who may call it)."""
    calls = []

    def fake(**kwargs):
        calls.append(kwargs)
        return refresh.RefreshOutcome(ok=True, message="Balances and transactions refreshed.", transactions_new=3)

    monkeypatch.setattr(refresh, "account_refresh", fake)
    return calls


@pytest.mark.parametrize(("method", "name", "target", "expected"), ID_PAGES)
def test_owner_gets_the_page(alice_client, owned, refresh_calls, method, name, target, expected):
    response = getattr(alice_client, method)(reverse(name, args=[owned[target].pk]))
    assert response.status_code == expected
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]


@pytest.mark.parametrize(("method", "name", "target", "expected"), ID_PAGES)
@pytest.mark.parametrize("stranger", ["bob", "charlie"])
def test_anyone_else_gets_404(request, owned, refresh_calls, method, name, target, expected, stranger):
    browser = Client()
    browser.force_login(request.getfixturevalue(stranger))

    response = getattr(browser, method)(reverse(name, args=[owned[target].pk]))

    assert response.status_code == 404
    assert refresh_calls == []


@pytest.mark.parametrize(("method", "name", "target", "expected"), ID_PAGES)
def test_anonymous_is_sent_to_sign_in(client, owned, refresh_calls, method, name, target, expected):
    response = getattr(client, method)(reverse(name, args=[owned[target].pk]))
    assert response.status_code == 302 and response["Location"].startswith("/auth/sign-in/?next=")
    assert refresh_calls == []


@pytest.mark.parametrize(("method", "name", "target", "expected"), ID_PAGES)
@pytest.mark.parametrize("why", ["disconnected", "no longer consented"])
def test_a_disconnected_or_unconsented_account_is_404_for_its_owner_too(
    alice_client, owned, refresh_calls, method, name, target, expected, why
):
    account = owned["account"]
    if why == "disconnected":
        account.connection.state = ConnectionState.DISCONNECTED
        account.connection.save()
    else:
        BankAccount.objects.filter(pk=account.pk).update(consented=False)
    assert getattr(alice_client, method)(reverse(name, args=[owned[target].pk])).status_code == 404


@pytest.mark.parametrize("url", ["/bank/accounts/999999/", "/bank/transactions/999999/"])
def test_missing_ids_are_404(alice_client, url):
    assert alice_client.get(url).status_code == 404


def test_pages_with_an_id_are_in_the_matrix():
    """Every accounts page with an id in the URLconf is checked above."""
    from accounts.urls import urlpatterns

    mine = {p.name for p in urlpatterns if "<int:pk>" in str(p.pattern)}
    assert mine == {name for _m, name, _t, _e in ID_PAGES}


# --- refresh now -----------------------------------------------------------------------------------------------


def test_refresh_now_sends_the_psu_presence_and_shows_the_outcome(alice_client, alice, account, refresh_calls):
    response = alice_client.post(f"/bank/accounts/{account.pk}/refresh/", REMOTE_ADDR="203.0.113.9", follow=True)

    assert response.redirect_chain == [(f"/bank/accounts/{account.pk}/", 302)]
    (call,) = refresh_calls
    assert call["account_id"] == account.pk and call["actor"] == alice
    assert call["presence"].ip_address == "203.0.113.9"
    assert "Balances and transactions refreshed. 3 new and 0 changed transactions." in response.content.decode()


def test_refresh_now_shows_the_banks_refusal(alice_client, account, monkeypatch):
    monkeypatch.setattr(
        refresh,
        "account_refresh",
        lambda **_: refresh.RefreshOutcome(ok=False, message="The bank said: Consent is expired"),
    )
    html = alice_client.post(f"/bank/accounts/{account.pk}/refresh/", follow=True).content.decode()
    assert 'class="message message-error">The bank said: Consent is expired<' in html


@pytest.mark.live_bank
def test_refresh_now_against_the_sandbox_bank_reads_transactions_with_the_psu_present(
    live_bank, alice_client, alice
):
    from core.models import BankCall
    from tests.live_bank import portal_connect

    portal_connect(alice_client)
    current = BankAccount.objects.get(connection__user=alice, name="Brukskonto")
    assert Transaction.objects.filter(account=current).exists()  # read while connecting
    # As if never read: "Refresh now" reads the whole history again.
    Transaction.objects.filter(account=current).delete()
    BankAccount.objects.filter(pk=current.pk).update(
        transactions_synced_to=None, transactions_synced_from=None, transactions_refreshed_at=None
    )
    BankCall.objects.all().delete()

    response = alice_client.post(f"/bank/accounts/{current.pk}/refresh/", REMOTE_ADDR="203.0.113.9", follow=True)

    html = _html(response)
    stored = Transaction.objects.filter(account=current)
    assert stored.filter(status="booked").count() > 50
    assert f"{stored.count()} new and 0 changed transactions." in html
    calls = BankCall.objects.filter(path_template__contains="transactions")
    assert calls.exists() and all(c.psu_present for c in calls)
    assert not RefreshCall.objects.exists()  # with the PSU present nothing counts against the budget
    assert len(_ids_on(html, "booked")) == 50 and 'rel="next"' in html


def test_refresh_needs_post(alice_client, account, refresh_calls):
    assert alice_client.get(f"/bank/accounts/{account.pk}/refresh/").status_code == 405
    assert refresh_calls == []


# --- the account page: booked and pending, filters -----------------------------------------------------------


def test_booked_and_pending_are_shown_apart(alice_client, account):
    today = timezone.localdate()
    booked = TransactionFactory(account=account, counterparty_name="Husleie AS", booking_date=today)
    pending = TransactionFactory(
        account=account, status=TransactionStatus.PENDING, transaction_id="", booking_date=None, value_date=None
    )
    other = TransactionFactory(account=BankAccountFactory(connection=account.connection))

    html = _html(alice_client.get(f"/bank/accounts/{account.pk}/"))

    assert _ids_on(html, "pending") == [pending.pk]
    assert _ids_on(html, "booked") == [booked.pk]
    assert f'data-transaction="{other.pk}"' not in html
    assert html.index("transactions-pending") < html.index("transactions-booked")


def test_status_filter_shows_one_kind(alice_client, account):
    booked = TransactionFactory(account=account)
    pending = TransactionFactory(account=account, status=TransactionStatus.PENDING)

    only_pending = _html(alice_client.get(f"/bank/accounts/{account.pk}/", {"status": "pending"}))
    only_booked = _html(alice_client.get(f"/bank/accounts/{account.pk}/", {"status": "booked"}))

    assert _ids_on(only_pending, "pending") == [pending.pk] and "transactions-booked" not in only_pending
    assert _ids_on(only_booked, "booked") == [booked.pk] and "transactions-pending" not in only_booked


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"date_from": "2026-03-02", "date_to": "2026-03-03"}, {"rent", "salary"}),
        ({"date_from": "2026-03-03"}, {"salary", "coffee"}),
        ({"q": "husleie"}, {"rent"}),  # the message, any case
        ({"q": "Kaffebrenneriet"}, {"coffee"}),  # the name
        ({"q": "1234 56 78903"}, {"salary"}),  # the account, typed with spaces
        ({"amount_min": "1000", "amount_max": "10000"}, {"rent"}),  # the size, in or out
        ({"amount_min": "10000"}, {"salary"}),
        ({"amount_max": "50"}, {"coffee"}),
        ({"direction": "in"}, {"salary"}),
        ({"direction": "out", "amount_min": "50"}, {"rent", "old"}),
        ({"amount_min": "42.5", "amount_max": "42.5"}, {"coffee"}),  # exact, decimal
    ],
)
def test_filters(alice_client, account, params, expected):
    rows = {
        "rent": dict(booking_date=date(2026, 3, 2), amount=Decimal("-9500.00"), remittance="Husleie mars"),
        "salary": dict(
            booking_date=date(2026, 3, 3),
            amount=Decimal("42000.00"),
            counterparty_name="Arbeidsgiver AS",
            counterparty_account="12345678903",
        ),
        "coffee": dict(
            booking_date=date(2026, 3, 4), amount=Decimal("-42.50"), counterparty_name="Kaffebrenneriet"
        ),
        "old": dict(booking_date=date(2026, 2, 1), amount=Decimal("-250.00"), counterparty_name="Kiwi"),
    }
    made = {name: TransactionFactory(account=account, **fields).pk for name, fields in rows.items()}

    html = _html(alice_client.get(f"/bank/accounts/{account.pk}/", {"status": "booked", **params}))

    assert set(_ids_on(html, "booked")) == {made[name] for name in expected}


def test_amounts_in_the_active_languages_format_are_accepted(client, alice, account):
    coffee = TransactionFactory(account=account, amount=Decimal("-1250.50"))
    TransactionFactory(account=account, amount=Decimal("-12.00"))
    client.force_login(alice)
    client.cookies["django_language"] = "nb"

    html = _html(client.get(f"/bank/accounts/{account.pk}/", {"status": "booked", "amount_min": "1 250,50"}))

    assert _ids_on(html, "booked") == [coffee.pk]


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (
            {"date_from": "2026-03-05", "date_to": "2026-03-01"},
            "date_to",
            "The end date is before the start date.",
        ),
        ({"date_from": "not a date"}, "date_from", "Enter a valid date."),
        ({"amount_min": "abc"}, "amount_min", "Enter a number."),
        ({"amount_min": "-5"}, "amount_min", "greater than or equal to 0"),
        (
            {"amount_min": "500", "amount_max": "100"},
            "amount_max",
            "The largest amount is smaller than the smallest.",
        ),
        ({"direction": "sideways"}, "direction", "Select a valid choice."),
        ({"q": "x" * 101}, "q", "at most 100 characters"),
    ],
)
def test_a_wrong_filter_is_explained_beside_its_field_and_lists_nothing(
    alice_client, account, params, field, message
):
    TransactionFactory(account=account)

    html = _html(alice_client.get(f"/bank/accounts/{account.pk}/", params))

    error = re.search(rf'<p class="field-error" id="id_{field}_error">(.*?)</p>', html, re.S)
    assert error and message in error.group(1).replace("&#x27;", "'")
    assert "Correct the filters above to see the transactions." in html
    assert 'data-transaction="' not in html


# --- keyset pagination ------------------------------------------------------------------------------------------


def _walk(client, account, params: dict, direction: str, start: str | None) -> list[list[int]]:
    """Follow the Older (or Newer) links from ``start``; the ids of each page in order."""
    pages = []
    token = start
    for _ in range(100):
        query = {**params, direction: token} if token else dict(params)
        html = _html(client.get(f"/bank/accounts/{account.pk}/", query))
        pages.append(_ids_on(html, params.get("status") or "booked"))
        rel = "next" if direction == "after" else "prev"
        link = re.search(rf'<a rel="{rel}" href="\?[^"]*{direction}=([^"&]+)"', html)
        if not link:
            return pages
        token = link.group(1)
    raise AssertionError("the pager did not end")


def test_keyset_pages_cover_every_row_once_in_order_and_back(alice_client, account):
    booked_rows(account, 120, per_day=7)  # seven on each date: ties broken by id
    BankAccountFactory(connection=account.connection)  # another account's rows never leak in
    expected = list(
        Transaction.objects.filter(account=account, status="booked")
        .order_by("-booking_date", "-id")
        .values_list("pk", flat=True)
    )

    forward = _walk(alice_client, account, {"status": "booked"}, "after", None)

    assert [len(p) for p in forward] == [50, 50, 20]
    assert [pk for page in forward for pk in page] == expected
    # Back from the last page with the Newer links: the same pages, in reverse.
    last_page = Cursor.of(Transaction.objects.get(pk=forward[2][0])).token
    backward = _walk(alice_client, account, {"status": "booked"}, "before", last_page)
    assert backward == [forward[1], forward[0]]


def test_keyset_pages_of_pending_rows_without_dates(alice_client, account):
    now = timezone.now()
    Transaction.objects.bulk_create(
        Transaction(
            account=account,
            status=TransactionStatus.PENDING,
            booking_date=None if n % 2 else timezone.localdate() - timedelta(days=n),
            amount=Decimal(-n),
            currency="NOK",
            fingerprint=f"{n:064x}",
            first_seen_at=now,
            updated_at=now,
        )
        for n in range(75)
    )
    no_date = list(
        Transaction.objects.filter(account=account, booking_date=None).order_by("-id").values_list("pk", flat=True)
    )
    dated = list(
        Transaction.objects.filter(account=account, booking_date__isnull=False)
        .order_by("-booking_date", "-id")
        .values_list("pk", flat=True)
    )

    pages = _walk(alice_client, account, {"status": "pending"}, "after", None)

    assert [pk for page in pages for pk in page] == no_date + dated  # undated (newest) first
    assert len(pages) == 2
    # Back from the second page: the dated rows of the first page, then the undated ones (two queries).
    back = _walk(
        alice_client,
        account,
        {"status": "pending"},
        "before",
        Cursor.of(Transaction.objects.get(pk=pages[1][0])).token,
    )
    assert back == [pages[0]]
    undated = Cursor.of(Transaction.objects.get(pk=no_date[10])).token  # a cursor without a date
    assert _walk(alice_client, account, {"status": "pending"}, "before", undated) == [no_date[:10]]


def test_the_first_page_shows_the_newest_pending_and_links_to_more(alice_client, account):
    TransactionFactory.create_batch(55, account=account, status=TransactionStatus.PENDING)
    html = _html(alice_client.get(f"/bank/accounts/{account.pk}/"))
    assert len(_ids_on(html, "pending")) == 50
    assert "More pending transactions" in html


@pytest.mark.parametrize("token", ["garbage", "2026-13-01.5", ".x", "1.2.3", "2026-01-01." + "9" * 30])
def test_a_malformed_cursor_shows_the_first_page(alice_client, account, token):
    booked_rows(account, 60)
    first = _html(alice_client.get(f"/bank/accounts/{account.pk}/", {"status": "booked"}))
    again = _html(alice_client.get(f"/bank/accounts/{account.pk}/", {"status": "booked", "after": token}))
    assert _ids_on(again, "booked") == _ids_on(first, "booked")


def _page_queries(client, account, params) -> list[str]:
    with CaptureQueriesContext(db_connection) as queries:
        _html(client.get(f"/bank/accounts/{account.pk}/", params))
    return [q["sql"] for q in queries.captured_queries]


def test_a_page_costs_the_same_queries_at_any_depth_and_size_without_offset_or_count(alice, alice_client):
    small = BankAccountFactory(connection=BankConnectionFactory(user=alice))
    large = BankAccountFactory(connection=small.connection)
    booked_rows(small, 60)
    booked_rows(large, 3000, per_day=20)
    deep = Transaction.objects.filter(account=large).order_by("-booking_date", "-id")[2500]
    _page_queries(alice_client, small, {})  # warm-up (session write)

    second = Transaction.objects.filter(account=small).order_by("-booking_date", "-id")[49]

    # The first page (booked and the newest pending) and a later page (booked only) of each account.
    first_small = len(_page_queries(alice_client, small, {}))
    first_large = len(_page_queries(alice_client, large, {}))
    later_small = len(_page_queries(alice_client, small, {"after": Cursor.of(second).token}))
    deep_sql = _page_queries(alice_client, large, {"after": Cursor.of(deep).token})

    assert first_small == first_large
    assert later_small == len(deep_sql) == first_small - 1  # no pending list on later pages
    listing = [sql for sql in deep_sql if '"accounts_transaction"' in sql and "LIMIT 51" in sql]
    assert len(listing) == 1, deep_sql  # one query for the page
    transaction_sql = " ".join(sql for sql in deep_sql if '"accounts_transaction"' in sql).upper()
    assert "OFFSET" not in transaction_sql and "COUNT(" not in transaction_sql


# --- one transaction -------------------------------------------------------------------------------------------


def test_transaction_details(alice_client, account):
    tx = TransactionFactory(
        account=account,
        amount=Decimal("-1234.56789"),
        counterparty_name="Fjordkraft AS",
        counterparty_account="NO9386011117947",
        remittance="Strøm februar",
        kid="000123456789",
        end_to_end_id="E2E-77",
        raw={"proprietaryBankTransactionCode": "R_710", "_links": {"self": {"href": "/x"}}, "tags": ["a", "b"]},
    )

    html = _html(alice_client.get(f"/bank/transactions/{tx.pk}/"))

    for text in ("Fjordkraft AS", "NO9386011117947", "Strøm februar", "000123456789", "E2E-77"):
        assert text in html
    assert tx.transaction_id not in html  # the bank's opaque id is no reference for anyone
    assert "-1,234.56789 NOK" in html  # every digit the bank sent
    assert "proprietaryBankTransactionCode" in html and "R_710" in html and "tags[1]" in html
    assert "_links" not in html
    assert f'href="/bank/accounts/{account.pk}/"' in html
