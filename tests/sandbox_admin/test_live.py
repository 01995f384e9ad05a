"""The sandbox pages against the running sandbox bank: listing with its toggles and timing, creating customers,
agreements, accounts and mock transactions, the bank's refusals shown with its text, and the reset."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse
from django.utils.http import urlencode

from core.models import BankCall
from tests.sandbox_admin.conftest import new_identity_number, new_organisation_number

pytestmark = pytest.mark.live_bank

LIST = reverse("sandbox_admin:customers")


def page_of(customer_id: str, name: str = "sandbox_admin:customer", **extra: str) -> str:
    return reverse(name) + "?" + urlencode({"customer": customer_id, **extra})


def text(response) -> str:
    return unescape(response.content.decode())


def field_errors(response, field: str) -> list[str]:
    """The error texts shown beside ``field`` (includes/field.html: one paragraph, "Error:" for screen readers)."""
    shown = re.search(rf'<p class="field-error" id="id_{field}_error">(.*?)</p>', response.content.decode(), re.S)
    if shown is None:
        return []
    texts = (unescape(re.sub(r"<[^>]+>", "", part)) for part in shown.group(1).split("<br>"))
    return [text.strip().removeprefix("Error:").strip() for text in texts]


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_listing_with_both_flags_shows_what_the_bank_holds(charlie_client, bank_direct):
    expected = bank_direct.sandbox.customers(with_accounts=True, with_agreements=True)
    assert len(expected) == 4  # the known state (docs/bank-interface.md, reference 1)

    response = charlie_client.get(LIST, {"listed": "1", "with_accounts": "on", "with_agreements": "on"})

    assert response.status_code == 200
    body = text(response)
    listing = response.context["listing"]
    assert [c.customer_number for c in listing.customers] == [c.customer_number for c in expected]
    for customer in expected:
        assert f'value="{customer.customer_number}"' in body  # the "use in test" box
        assert customer.customer_name in body
        for account in customer.accounts + customer.card_accounts:
            assert account in body
        for agreement in customer.agreements:
            assert agreement.name in body
            for engaged in agreement.engagements:
                assert engaged in body
    assert sum(len(c.card_accounts) for c in expected) == 2 and "13039319955" in body
    assert re.search(r"4 customers listed in\s+<strong class=\"listing-ms\">\d+\.\d ms</strong>", body)
    assert "withAccounts=true, withAgreements=true" in body
    call = BankCall.objects.get()
    assert (call.method, call.path_template, call.status) == ("GET", "/v1/sandbox/customers", 200)
    assert call.user.email == "charlie@example.com"


def test_listing_without_flags_leaves_accounts_and_agreements_out_and_keeps_each_timing(
    charlie_client, bank_direct
):
    known = bank_direct.sandbox.customers(with_accounts=True, with_agreements=True)
    charlie_client.get(LIST)  # the first visit lists with both flags
    response = charlie_client.get(LIST, {"listed": "1"})  # both boxes unticked

    body = text(response)
    assert "withAccounts=false, withAgreements=false" in body
    assert all(c.accounts == [] and c.agreements == [] for c in response.context["listing"].customers)
    assert body.count("not requested") == 3 * len(known)
    assert not any(a in body for c in known for a in c.accounts)
    timings = response.context["timings"]
    assert [(t["with_accounts"], t["with_agreements"]) for t in timings] == [(False, False), (True, True)]
    assert all(t["duration_ms"] > 0 and t["customers"] == 4 for t in timings)
    only_accounts = charlie_client.get(LIST, {"listed": "1", "with_accounts": "on"})
    assert only_accounts.context["listing"].customers[0].accounts
    assert only_accounts.context["listing"].customers[0].agreements == []


def test_a_private_customer_is_created_and_gets_its_agreement(charlie_client, bank_direct, restore_known_state):
    number = new_identity_number()
    response = charlie_client.post(
        reverse("sandbox_admin:customer-create"),
        {"customer_type": "PRIVATE", "customer_number": number, "customer_name": "Test Testesen"},
        follow=True,
    )

    assert response.status_code == 200
    (created,) = [c for c in bank_direct.sandbox.customers() if c.customer_number == number]
    assert response.redirect_chain == [(page_of(created.customer_id), 302)]
    body = text(response)
    (message,) = messages_of(response)
    assert message == (
        "Customer Test Testesen created. Type its customer number (below) at the bank's SCA screen to sign in as "
        "this customer."
    )
    assert f'id="sca-number-customer" class="sca-number-value" type="text" value="{number}"' in body
    assert "Test Testesen - privat" in body  # the agreement the bank made
    calls = BankCall.objects.order_by("id")
    assert [(c.method, c.path_template, c.status) for c in calls] == [
        ("POST", "/v1/sandbox/customers", 201),
        ("GET", "/v1/sandbox/customers/{customer_id}", 200),
    ]
    assert all(c.user.email == "charlie@example.com" for c in calls)
    assert not any(number in str(value) for c in calls for value in c.__dict__.values())


def test_the_banks_refusal_of_a_duplicate_is_shown_beside_the_field(charlie_client, live_bank):
    response = charlie_client.post(
        reverse("sandbox_admin:customer-create"),
        {"customer_type": "PRIVATE", "customer_number": "130393 19955", "customer_name": "Twin"},
    )

    assert response.status_code == 200
    (error,) = field_errors(response, "customer_number")
    assert error.startswith(
        "The bank refused: A customer with customerNumber 13039319955 exists already. (CONFLICT)"
    )
    call = BankCall.objects.get()
    assert call.status == 409 and call.tpp_message_codes == ["CONFLICT"]
    assert f"X-Request-ID {call.request_id}" in error


def test_an_invalid_number_is_refused_before_the_bank_is_called(charlie_client):
    cases = [
        ({"customer_type": "PRIVATE", "customer_number": "13039319956"}, "Not a valid national identity number"),
        ({"customer_type": "PRIVATE", "customer_number": "923609016"}, "A private customer needs an 11-digit"),
        ({"customer_type": "CORPORATE", "customer_number": "923609017"}, "Not a valid organisation number"),
        ({"customer_type": "CORPORATE", "customer_number": "12ab"}, "11 digits"),
    ]
    for data, message in cases:
        response = charlie_client.post(reverse("sandbox_admin:customer-create"), {**data, "customer_name": "X"})
        assert response.status_code == 200
        (error,) = field_errors(response, "customer_number")
        assert error.startswith(message), error
    assert not BankCall.objects.exists()


def test_a_name_the_bank_cannot_process_is_refused_before_the_bank_is_called(charlie_client):
    response = charlie_client.post(
        reverse("sandbox_admin:customer-create"),
        {
            "customer_type": "PRIVATE",
            "customer_number": new_identity_number(),
            "customer_name": "Test \N{GRINNING FACE}\u200b",
        },
    )
    assert response.status_code == 200
    (error,) = field_errors(response, "customer_name")
    assert error.startswith("The bank cannot process some characters in this text")
    assert "U+1F600 GRINNING FACE, U+200B ZERO WIDTH SPACE" in error
    assert not BankCall.objects.exists()


def test_a_company_gets_an_agreement_and_accounts_engaged_in_it(charlie_client, bank_direct, restore_known_state):
    private_user = next(c for c in bank_direct.sandbox.customers() if c.customer_type == "PRIVATE")
    number = new_organisation_number()
    created = charlie_client.post(
        reverse("sandbox_admin:customer-create"),
        {"customer_type": "CORPORATE", "customer_number": number, "customer_name": "Fjordtest AS"},
    )
    (company,) = [c for c in bank_direct.sandbox.customers() if c.customer_number == number]
    assert created["Location"] == page_of(company.customer_id)
    assert bank_direct.sandbox.customer(company.customer_id).agreements == []  # a company gets none by itself

    form_page = charlie_client.get(page_of(company.customer_id, "sandbox_admin:agreement-create"))
    assert private_user.customer_name in text(form_page)
    charlie_client.post(
        page_of(company.customer_id, "sandbox_admin:agreement-create"),
        {"name": "Fjordtest hovedavtale", "signers_required": "2", "users": [private_user.customer_id]},
    )
    (agreement,) = bank_direct.sandbox.customer(company.customer_id).agreements
    assert agreement.name == "Fjordtest hovedavtale" and agreement.extra["signersRequired"] == 2

    engaged = charlie_client.post(
        page_of(company.customer_id, "sandbox_admin:account-create"),
        {
            "account_type": "ACCOUNT",
            "currency": "nok",
            "name": "Drift",
            "balance": "1500.50",
            "agreement": agreement.id,
        },
        follow=True,
    )
    message = messages_of(engaged)[-1]  # the customer and agreement messages were not shown yet
    assert message.endswith("added to the agreement.")
    loose = charlie_client.post(
        page_of(company.customer_id, "sandbox_admin:account-create"),
        {"account_type": "ACCOUNT", "currency": "EUR", "name": "Valuta", "agreement": ""},
    )
    assert loose.status_code == 302
    after = bank_direct.sandbox.customer(company.customer_id)
    assert len(after.accounts) == 2
    (in_agreement,) = after.agreements[0].engagements
    (outside,) = set(after.accounts) - {in_agreement}
    assert in_agreement in message

    again = charlie_client.post(
        page_of(company.customer_id, "sandbox_admin:engagement-create"),
        {"agreement": agreement.id, "account": in_agreement},
    )
    assert field_errors(again, "account") == ["This account is in the agreement already."]
    charlie_client.post(
        page_of(company.customer_id, "sandbox_admin:engagement-create"),
        {"agreement": agreement.id, "account": outside},
    )
    assert set(bank_direct.sandbox.customer(company.customer_id).agreements[0].engagements) == {
        in_agreement,
        outside,
    }
    listing = text(charlie_client.get(LIST))
    assert "Fjordtest hovedavtale" in listing and outside in listing


def test_a_private_customer_gets_no_agreement_form(charlie_client, bank_direct):
    private = next(c for c in bank_direct.sandbox.customers() if c.customer_type == "PRIVATE")
    response = charlie_client.get(page_of(private.customer_id, "sandbox_admin:agreement-create"))
    assert response.status_code == 302 and response["Location"] == page_of(private.customer_id)
    form = charlie_client.get(page_of(private.customer_id, "sandbox_admin:account-create")).context["form"]
    assert "agreement" not in form.fields


def test_mock_transactions_in_and_the_banks_refusal_when_another_account_is_the_debtor(
    charlie_client, bank_direct, restore_known_state
):
    private_1, private_2 = [
        c for c in bank_direct.sandbox.customers(with_accounts=True) if c.customer_type == "PRIVATE"
    ]
    account = private_1.accounts[0]
    url = page_of(private_1.customer_id, "sandbox_admin:transaction-create", account=account)
    assert charlie_client.get(url).context["form"]["account"].value() == account

    credit = charlie_client.post(
        url,
        {
            "account": account,
            "amount": "12.500",  # 12.50 by value: sent with the two fraction digits of NOK
            "currency": "NOK",
            "booking_status": "booked",
            "booking_date": "2026-01-15",
            "counterparty_name": "Onkel Skrue",
            "debtor_iban": "DE89 3704 0044 0532 0130 00",
            "remittance": "Gave",
        },
        follow=True,
    )
    (message,) = messages_of(credit)
    assert "created: 12.50 NOK on" in message and account in message

    other = charlie_client.post(
        page_of(private_2.customer_id, "sandbox_admin:account-create"),
        {"account_type": "ACCOUNT", "currency": "NOK", "name": "Sparing"},
        follow=True,
    )
    other_iban = re.search(r"IBAN (NO\d+)", messages_of(other)[0]).group(1)
    BankCall.objects.all().delete()

    refused = charlie_client.post(
        url,
        {
            "account": account,
            "amount": "100",
            "currency": "NOK",
            "booking_status": "booked",
            "debtor_iban": other_iban,
        },
    )
    assert refused.status_code == 200
    (error,) = field_errors(refused, "debtor_iban")
    assert error.startswith(
        "The bank refused: Another account of the bank is the debtor; create the transaction on that account."
    )
    wrong_currency = charlie_client.post(
        url, {"account": account, "amount": "5", "currency": "EUR", "booking_status": "pending"}
    )
    (error,) = field_errors(wrong_currency, "currency")
    assert "The transaction currency must be the account currency NOK." in error
    assert [c.status for c in BankCall.objects.filter(method="POST").order_by("id")] == [400, 400]


def test_transaction_form_checks_before_the_bank(charlie_client, bank_direct):
    private_1 = next(c for c in bank_direct.sandbox.customers(with_accounts=True) if c.customer_type == "PRIVATE")
    url = page_of(private_1.customer_id, "sandbox_admin:transaction-create")
    BankCall.objects.all().delete()
    response = charlie_client.post(
        url,
        {
            "account": private_1.accounts[0],
            "amount": "10.005",
            "currency": "NOK",
            "booking_status": "booked",
            "debtor_iban": "NO00 1234",
            "kid": "12a",
        },
    )
    assert field_errors(response, "amount") == ["NOK amounts have at most 2 decimal places."]
    assert field_errors(response, "debtor_iban") == [
        "This IBAN has the wrong number of characters for its country. Check for a missing or extra one."
    ]
    assert field_errors(response, "kid") == ["A KID is 2 to 25 digits."]
    zero = charlie_client.post(url, {"account": private_1.accounts[0], "amount": "0", "currency": "JPY"})
    assert field_errors(zero, "amount") == ["The amount must be more than zero."]
    emoji = charlie_client.post(
        url,
        {
            "account": private_1.accounts[0],
            "amount": "1",
            "currency": "NOK",
            "booking_status": "booked",
            "counterparty_name": "Kaffe \N{HOT BEVERAGE}",
            "remittance": "Takk \N{GRINNING FACE}",
        },
    )
    assert emoji.status_code == 200
    assert field_errors(emoji, "counterparty_name")[0].startswith("The bank cannot process some characters")
    assert "U+1F600 GRINNING FACE" in field_errors(emoji, "remittance")[0]
    not_theirs = charlie_client.post(url, {"account": "enc!!someone-else", "amount": "1", "currency": "NOK"})
    assert field_errors(not_theirs, "account")
    assert [c.method for c in BankCall.objects.all()] == ["GET"] * 4  # only reading the customer


def test_reset_needs_confirmation_and_brings_back_the_known_state(
    charlie_client, bank_direct, restore_known_state
):
    number = new_identity_number()
    charlie_client.post(
        reverse("sandbox_admin:customer-create"),
        {"customer_type": "PRIVATE", "customer_number": number, "customer_name": "Midlertidig"},
    )
    assert len(bank_direct.sandbox.customers()) == 5
    BankCall.objects.all().delete()

    confirm_page = charlie_client.get(reverse("sandbox_admin:reset"))
    assert "Every customer, agreement, account and transaction created here is removed." in text(confirm_page)
    unconfirmed = charlie_client.post(reverse("sandbox_admin:reset"), {})
    assert field_errors(unconfirmed, "confirm") == ["This field is required."]
    assert not BankCall.objects.exists()
    assert len(bank_direct.sandbox.customers()) == 5

    done = charlie_client.post(reverse("sandbox_admin:reset"), {"confirm": "on"}, follow=True)
    assert messages_of(done) == ["The sandbox is back to its known state: 4 customers."]
    numbers = {c.customer_number for c in bank_direct.sandbox.customers()}
    assert numbers == {"13039319955", "12085592767", "18129215603", "20079518612"}
    assert number not in text(done)
    assert BankCall.objects.filter(method="POST", path_template="/v1/sandbox/initialize", status=200).count() == 1


def test_a_bank_that_does_not_answer_is_reported(charlie_client, settings, live_bank):
    from core.bank import bank_client
    from devtools.livebank import free_port

    settings.BANK_BASE_URL = f"http://127.0.0.1:{free_port()}"
    bank_client.cache_clear()
    response = charlie_client.get(LIST)
    assert response.status_code == 502
    assert "The bank could not be reached." in text(response)
    created = charlie_client.post(
        reverse("sandbox_admin:customer-create"),
        {"customer_type": "PRIVATE", "customer_number": new_identity_number(), "customer_name": "Nobody"},
    )
    assert created.status_code == 200
    assert "The bank could not be reached." in text(created)
    bank_client.cache_clear()
