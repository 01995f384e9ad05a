"""The bank's links, with a base path and without one (docs/bank-interface.md, "Addresses and environments"): a
link that already carries the base path is followed as it is, an API path (``/v1/...``) is resolved under the base
path, another address is refused, and so is a path that could mean either."""

from __future__ import annotations

import pytest

from tests.bankfake import Answer
from tests.xs2a.server import LocalBank
from xs2a import errors, models
from xs2a.links import BaseUrl
from xs2a.psu import PsuContext

PSU = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1", ip_address="198.51.100.7")
PAYMENT = "/v1/payments/norwegian-cross-border-credit-transfers/enc!!Z78gcpH6="

WITH_PREFIX = BaseUrl("https://bank.example/psd2")
WITHOUT_PREFIX = BaseUrl("https://bank.example")


@pytest.mark.parametrize(
    ("href", "resolved"),
    [
        ("/psd2/v1/payments/x/status", "https://bank.example/psd2/v1/payments/x/status"),
        ("/v1/payments/x/status", "https://bank.example/psd2/v1/payments/x/status"),
        (
            "/psd2/v1/accounts/a/transactions?offset=2",
            "https://bank.example/psd2/v1/accounts/a/transactions?offset=2",
        ),
        ("/v1/accounts/a/transactions?offset=2", "https://bank.example/psd2/v1/accounts/a/transactions?offset=2"),
        ("https://bank.example/psd2/v1/payments/x", "https://bank.example/psd2/v1/payments/x"),
        ("https://BANK.example/psd2/v1/payments/x", "https://bank.example/psd2/v1/payments/x"),
        ("/psd2", "https://bank.example/psd2"),
        ("/psd2/v1/psd2/x", "https://bank.example/psd2/v1/psd2/x"),  # the prefix again later is just a segment
    ],
)
def test_with_a_base_path_both_ways_of_writing_a_link_reach_the_same_address(href, resolved):
    assert WITH_PREFIX.resolve(href) == resolved


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("https://evil.example/psd2/v1/payments/x", "does not point at the bank"),
        ("http://bank.example/psd2/v1/payments/x", "does not point at the bank"),
        ("https://bank.example:8443/psd2/v1/payments/x", "does not point at the bank"),
        ("//evil.example/psd2/v1/payments/x", "does not point at the bank"),
        ("/other/v1/payments/x", "which one it means is not known"),
        ("/psd2x/v1/payments/x", "which one it means is not known"),  # not the prefix: a whole segment is
        ("/v2/payments/x", "which one it means is not known"),
        ("v1/payments/x", "neither absolute nor relative"),
        ("/psd2/v1/../../admin", "dot segment"),
        ("/v1/%2e%2e/x", "dot segment"),
        ("https://bank.example/psd2/./v1/x", "dot segment"),
    ],
)
def test_with_a_base_path_other_addresses_and_ambiguous_paths_are_refused(href, reason):
    with pytest.raises(errors.LinkError, match=reason):
        WITH_PREFIX.resolve(href)


def test_without_a_base_path_every_path_on_the_bank_is_followed_as_it_is():
    assert WITHOUT_PREFIX.resolve("/v1/payments/x/status") == "https://bank.example/v1/payments/x/status"
    assert WITHOUT_PREFIX.resolve("/psd2/v1/payments/x") == "https://bank.example/psd2/v1/payments/x"
    assert WITHOUT_PREFIX.resolve("https://bank.example/v1/x?a=1") == "https://bank.example/v1/x?a=1"
    with pytest.raises(errors.LinkError, match="does not point at the bank"):
        WITHOUT_PREFIX.resolve("https://evil.example/v1/x")
    with pytest.raises(errors.LinkError, match="dot segment"):
        WITHOUT_PREFIX.resolve("/v1/../x")


@pytest.mark.parametrize("written", ["with the base path", "below the base path"])
def test_a_payments_links_and_transaction_pages_are_followed_at_a_bank_with_a_base_path(make_client, written):
    """Status, startAuthorisation, self and the next page, written by the bank with ``/psd2/v1/...`` or with
    ``/v1/...``: each request reaches ``/psd2/v1/...``, never ``/psd2/psd2/v1/...``."""
    lead = "/psd2" if written == "with the base path" else ""
    with LocalBank(prefix="/psd2") as bank:
        links = {
            "self": {"href": lead + PAYMENT},
            "status": {"href": lead + PAYMENT + "/status"},
            "startAuthorisation": {"href": lead + PAYMENT + "/authorisations"},
        }
        created = models.PaymentInitiationResponse.from_json(
            {"paymentId": "enc!!Z78gcpH6=", "transactionStatus": "RCVD", "_links": links}
        )
        bank.add("GET", PAYMENT + "/status", Answer(200, {"transactionStatus": "ACSC"}))
        bank.add("POST", PAYMENT + "/authorisations", Answer(201, {"scaStatus": "received"}))
        bank.add("DELETE", PAYMENT, Answer(204))
        transactions = "/v1/accounts/enc!!a=/transactions"
        item = {"transactionId": "t{}", "transactionAmount": {"amount": "-1.00", "currency": "NOK"}}

        def page(received) -> Answer:
            second = "offset=2" in received.query
            booked = [{**item, "transactionId": "t2" if second else "t1"}]
            next_link = {} if second else {"next": {"href": lead + transactions + "?offset=2"}}
            return Answer(200, {"transactions": {"booked": booked, "_links": next_link}})

        bank.add("GET", transactions, page)
        client = make_client(bank.base_url)

        assert client.payments.status(href=created.status_link, psu=PSU).transaction_status == "ACSC"
        assert client.payments.start_authorisation(href=created.start_authorisation, psu=PSU).sca_status
        client.payments.delete(href=created.links["self"].href, psu=PSU)
        listed = client.accounts.transactions("enc!!a=", psu=PSU)

    assert [t.transaction_id for t in listed.booked] == ["t1", "t2"]
    assert [r.target for r in bank.received] == [
        "/psd2" + PAYMENT + "/status",
        "/psd2" + PAYMENT + "/authorisations",
        "/psd2" + PAYMENT,
        "/psd2" + transactions + "?bookingStatus=both",
        "/psd2" + transactions + "?offset=2",
    ]
