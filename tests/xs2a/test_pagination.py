"""The transaction page iterator: the bank's own page size, its ``next`` links followed (resolved against the base
address), pages read only as the iteration reaches them, the per-page hook before each further page (which may
stop the iteration), and the guards against a foreign, looping or endless listing."""

from __future__ import annotations

import pytest

from tests.bankfake import Answer
from xs2a import errors, models
from xs2a.psu import PsuContext

PSU = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1")
PATH = "/v1/accounts/enc!!a=/transactions"


def _booked(tid: str) -> dict:
    return {"transactionId": tid, "transactionAmount": {"amount": "-1.00", "currency": "NOK"}}


def _paged(total_pages: int, *, key: str = "transactions", path: str = PATH):
    """Answers page n (``offset=n``) with one booked item and a next link while n < total_pages."""

    def answer(received) -> Answer:
        number = int(received.query.rpartition("offset=")[2] or 1) if "offset=" in received.query else 1
        links = (
            {"next": {"href": f"{path}?bookingStatus=both&offset={number + 1}"}} if number < total_pages else {}
        )
        return Answer(200, {key: {"booked": [_booked(f"t{number}")], "pending": [], "_links": links}})

    return answer


def test_no_page_size_is_asked_and_every_next_link_is_followed(bank, client):
    bank.add("GET", PATH, _paged(3))

    pages = client.accounts.transaction_pages("enc!!a=", psu=PSU)
    read = [[t.transaction_id for t in page.booked] for page in pages]

    assert read == [["t1"], ["t2"], ["t3"]]
    assert pages.complete and pages.count == 3
    assert [r.target for r in bank.received] == [
        PATH + "?bookingStatus=both",  # no limit: the bank's default page (200)
        PATH + "?bookingStatus=both&offset=2",
        PATH + "?bookingStatus=both&offset=3",
    ]
    assert len({r.headers["x-request-id"] for r in bank.received}) == 3, "one call per page"


def test_pages_are_read_only_as_the_iteration_reaches_them(bank, client):
    bank.add("GET", PATH, _paged(3))
    pages = iter(client.accounts.transaction_pages("enc!!a=", psu=PSU))
    assert bank.received == []
    first = next(pages)
    assert [t.transaction_id for t in first.booked] == ["t1"] and len(bank.received) == 1


def test_the_hook_runs_before_each_further_page_and_may_stop_the_iteration(bank, client):
    bank.add("GET", PATH, _paged(4))
    asked: list[tuple[int, int]] = []

    def before_page(number: int) -> bool:
        asked.append((number, len(bank.received)))
        return number < 3  # the third page is not to be read

    pages = client.accounts.transaction_pages("enc!!a=", psu=PSU, before_page=before_page)
    read = list(pages)

    assert asked == [(2, 1), (3, 2)], "called before page 2 and page 3, each before its request"
    assert len(read) == 2 and len(bank.received) == 2
    assert not pages.complete and pages.count == 2


def test_an_exception_of_the_hook_reaches_the_caller_and_nothing_more_is_sent(bank, client):
    bank.add("GET", PATH, _paged(3))

    class BudgetSpent(Exception):
        pass

    def before_page(number: int) -> None:
        raise BudgetSpent(number)

    with pytest.raises(BudgetSpent):
        list(client.accounts.transaction_pages("enc!!a=", psu=PSU, before_page=before_page))
    assert len(bank.received) == 1


@pytest.mark.parametrize(
    ("href", "error"),
    [
        ("https://evil.example/v1/accounts/enc!!a=/transactions?offset=2", errors.LinkError),
        (PATH + "?bookingStatus=both", errors.LinkError),  # the first page again: a loop
    ],
)
def test_a_foreign_or_looping_link_is_refused_before_the_hook_and_before_sending(bank, client, href, error):
    page = {"transactions": {"booked": [], "_links": {"next": {"href": href}}}}
    bank.add("GET", PATH, Answer(200, page))
    hooked = []
    with pytest.raises(error):
        list(client.accounts.transaction_pages("enc!!a=", psu=PSU, before_page=hooked.append))
    assert len(bank.received) == 1 and hooked == [], "no budget spent on a page never read"


def test_an_endless_listing_stops_at_max_pages(bank, client):
    bank.add("GET", PATH, _paged(1000))
    with pytest.raises(errors.UnexpectedResponseError, match="more than 5 pages"):
        list(client.accounts.transaction_pages("enc!!a=", psu=PSU, max_pages=5))
    assert len(bank.received) == 5


def test_card_account_pages_are_typed_card_transactions(bank, client):
    path = "/v1/card-accounts/k1/transactions"
    bank.add("GET", path, _paged(2, key="cardTransactions", path=path))
    pages = list(client.card_accounts.transaction_pages("k1", psu=PSU, date_from=None))
    assert all(isinstance(p, models.CardTransactionList) for p in pages) and len(pages) == 2
    merged = client.card_accounts.transactions("k1", psu=PSU)
    assert merged.pages == 2 and len(merged.booked) == 2


def test_each_record_keeps_the_banks_json_as_received(bank, client):
    item = {**_booked("t1"), "futureField": {"kept": True}, "kid": "1234567890"}
    bank.add("GET", PATH, Answer(200, {"transactions": {"booked": [item], "pending": []}}))
    (page,) = client.accounts.transaction_pages("enc!!a=", psu=PSU)
    assert page.booked[0].raw["futureField"] == {"kept": True} and page.booked[0].raw["kid"] == "1234567890"
