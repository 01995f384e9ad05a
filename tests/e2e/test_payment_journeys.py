"""Payment journeys of the end-to-end suite, in chromium against the running product (gunicorn portal, Celery
worker and beat, sandbox bank; tests/e2e/conftest.py starts it once):

1. 20 000 NOK abroad: the form takes it without regulatory reporting; review, SCA at the bank, back, and the
   payment page follows PDNG -> ACSP -> ACSC by itself as the bank's batches run.
2. 150 000 NOK to a German IBAN: the form asks for the tax authority's payment type; with code 29 it is reviewed,
   approved and settled (ACSC).
3. Single SCA: a user without a bank connection types the account to pay from and their fødselsnummer; the bank
   gets it as X-PSU-IDENTITY, and the PSU-ID it makes is kept: the next payment asks for no identity number.
4. Havbruk Nord AS's two signers: the first approves (PATC, the signatures so far and the page's address for the
   next signer), the second signs in as their own portal user and signs; the payment settles (ACSC) and the
   timeline shows each signature.
5. Cancellation before the bank's batch: CANC shown, at the bank too; then the payments list with a status
   filter, and its CSV export with the same filter.

The bank's batches are run with its sandbox control; every status after the approval reaches the page through
the worker's polls (tests/e2e/payment_support.py). Each step leaves a screenshot (payment-<journey>-<step>.png)
and each portal page type met here is checked with axe-core once.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest

from tests.browser.problems import portal_problems
from tests.e2e.conftest import axe_check, connect_bank, create_user, shot, sign_in
from tests.e2e.payment_support import (
    CORPORATE_2,
    GERMAN_CREDITOR,
    PRIVATE_1,
    PRIVATE_2,
    TIMEOUT,
    approve_at_bank,
    at_review,
    choose_debtor,
    confirm_password_if_asked,
    fill,
    keep_document_marked,
    payment_pk,
    payment_row,
    review_the_payment,
    same_document,
    send_to_bank,
    settle_while_watching,
    wait_for_shown_status,
)

pytestmark = [pytest.mark.timeout(300)]

PASSWORD = "a long e2e password for payments"
SWEDISH_CREDITOR = {
    "creditor_name": "Svensson Design AB",
    "creditor_account": "SE45 5000 0000 0583 9825 7466",
    "creditor_agent": "ESSESESS",
    "creditor_country": "SE",
    "creditor_city": "Göteborg",
}


def _journey_shot(page, journey: str):
    return lambda step: shot(page, f"payment-{journey}-{step}")


def _payer(
    page, product, email: str, *, identity: str | None, context: str = "private", agreement: str | None = None
) -> None:
    """A portal user of their own, signed in, with (when ``identity`` is given) a bank connection."""
    create_user(product, email=email, password=PASSWORD)
    sign_in(page, product, email, PASSWORD)
    if identity:
        connect_bank(page, product, identity=identity, context=context, agreement=agreement)


def _approved(page, product, *, identity: str, agreement: str, step) -> int:
    """Send the reviewed payment, approve it at the bank, and wait on its page for the worker's PDNG."""
    send_to_bank(page)
    step("bank-sca")
    approve_at_bank(page, identity=identity, agreement=agreement)
    pk = payment_pk(page)
    wait_for_shown_status(page, "PDNG")
    return pk


def test_payment_below_100000_nok_needs_no_reporting_and_settles(page, product):
    step = _journey_shot(page, "small")
    problems = portal_problems(page, product.portal_url)
    _payer(page, product, "small@payer.example", identity=PRIVATE_1)

    page.goto(f"{product.portal_url}/payments/new/")
    step("form")
    axe_check(page)  # the payment form
    choose_debtor(page, "Høyrentekonto")
    fill(page, {"amount": "20 000", "currency": "NOK", **SWEDISH_CREDITOR, "remittance_information": "Faktura 88"})
    review_the_payment(page)
    at_review(page, PASSWORD)
    step("review")
    axe_check(page)  # the review
    # Below 100 000 NOK: accepted without the tax authority's fields, and none is sent to the bank.
    review = page.locator("main").inner_text()
    assert "Payment type code" not in review and "Svensson Design AB" in review
    body = json.loads(page.locator("details.payment-body pre").text_content())
    assert "regulatoryReportingCode" not in body and "regulatoryReportingInformation" not in body, body
    assert Decimal(body["instructedAmount"]["amount"]) == Decimal("20000"), body

    pk = _approved(page, product, identity=PRIVATE_1, agreement="PRIVATE - ", step=step)
    step("pending")
    axe_check(page)  # the payment page while the bank processes it
    row = payment_row(product, pk)
    assert (Decimal(str(row["amount"])), row["currency"]) == (Decimal("20000"), "NOK"), row

    shown = settle_while_watching(page, product, pk, shot=step)
    assert shown[0] == "PDNG" and "ACSP" in shown, shown
    assert page.locator("#payment-status-label").inner_text() == "Completed"
    assert not page.locator("#payment-check-form").is_visible()  # nothing changes any more
    assert not page.locator("#payment-cancel-link").is_visible()
    timeline = page.locator("#payment-timeline").inner_text().lower()
    for words in ("received", "pending", "being settled", "completed", "approved at the bank"):
        assert words in timeline, timeline
    axe_check(page)  # a final payment's page
    assert problems == []


def test_payment_of_150000_nok_to_germany_asks_for_reporting_and_settles(page, product):
    step = _journey_shot(page, "germany")
    problems = portal_problems(page, product.portal_url)
    _payer(page, product, "large@payer.example", identity=PRIVATE_2)

    page.goto(f"{product.portal_url}/payments/new/")
    choose_debtor(page, "BSU")  # 212 000 NOK: enough for 150 000 NOK and the fee
    fill(
        page,
        {"amount": "150000", "currency": "NOK", **GERMAN_CREDITOR, "remittance_information": "Invoice 2026-114"},
    )
    review_the_payment(page)
    # 100 000 NOK or more abroad: the form asks for the payment type and its purpose.
    error = page.locator("#id_regulatory_reporting_code_error")
    error.wait_for(timeout=TIMEOUT)
    assert "/payments/new/" in page.url
    step("reporting-asked")
    axe_check(page)  # the form with errors
    fill(page, {"regulatory_reporting_code": "29", "regulatory_reporting_information": "Engineering services"})
    review_the_payment(page)
    at_review(page, PASSWORD)
    step("review")
    review = page.locator("main").inner_text()
    assert "Müller Maschinenbau GmbH" in review and "DE89 3704 0044 0532 0130 00" in review  # grouped to read
    assert "29 - Other purchase or sale of services" in review and "Engineering services" in review
    body = json.loads(page.locator("details.payment-body pre").text_content())
    assert body["regulatoryReportingCode"] == "29"

    pk = _approved(page, product, identity=PRIVATE_2, agreement="PRIVATE - ", step=step)
    step("pending")
    row = payment_row(product, pk)
    assert (Decimal(str(row["amount"])), row["currency"]) == (Decimal("150000"), "NOK"), row
    settle_while_watching(page, product, pk, shot=step)
    assert page.locator("#payment-status-label").inner_text() == "Completed"
    assert problems == []


def _brukskonto_iban(product) -> str:
    """Private Customer 1's Brukskonto at the bank: the account the single-SCA payer types."""
    rows = product.bank_sql(
        "SELECT a.iban FROM bank_simulator_account a JOIN bank_simulator_customer c ON c.id = a.owner_id "
        "WHERE c.customer_number = ? AND a.name = 'Brukskonto'",
        (PRIVATE_1,),
    )
    assert len(rows) == 1, rows
    return rows[0][0]


def _kept_connections(product, email: str) -> list[tuple]:
    return product.sql(
        "SELECT c.id, c.access, c.context, c.state FROM connections_bankconnection c "
        "JOIN auth_user u ON u.id = c.user_id WHERE u.username = %s AND c.psu_id_hash <> ''",
        (email,),
    )


def test_single_sca_with_the_national_identity_number_keeps_the_psu_id(page, product):
    step = _journey_shot(page, "single-sca")
    problems = portal_problems(page, product.portal_url)
    email = "single@payer.example"
    _payer(page, product, email, identity=None)
    iban = _brukskonto_iban(product)
    domestic = {"creditor_name": "Bergen Utleie AS", "creditor_account": "1506.12.34508"}

    page.goto(f"{product.portal_url}/payments/new/domestic/")
    step("form")
    axe_check(page)  # the form with a typed account to pay from
    fill(page, {"debtor_account": iban, "amount": "2500", **domestic, "remittance_information": "Husleie"})
    review_the_payment(page)
    at_review(page, PASSWORD)
    identity_field = page.get_by_label("Your national identity number (fødselsnummer)")
    assert identity_field.is_visible()
    step("review-identity")
    axe_check(page)  # the review asking for the identity number
    identity_field.fill(PRIVATE_1)
    # The bank still authenticates the PSU at its screen (the identity number typed there).
    pk = _approved(page, product, identity=PRIVATE_1, agreement="PRIVATE - ", step=step)
    step("pending")

    # The bank made a PSU-ID for the identity number; the portal keeps it as a payments connection of the user.
    (kept,) = _kept_connections(product, email)
    assert kept[1:] == ("payments", "PRIVATE", "active"), kept
    assert payment_row(product, pk)["connection_id"] == kept[0]

    # Next time: no identity number is asked, and the bank takes the payment with the kept PSU-ID.
    page.goto(f"{product.portal_url}/payments/new/domestic/")
    fill(page, {"debtor_account": iban, "amount": "99", **domestic, "remittance_information": "Strøm"})
    review_the_payment(page)
    at_review(page, PASSWORD)
    assert page.locator("[name=national_identity_number]").count() == 0
    step("review-again")
    again = _approved(
        page, product, identity=PRIVATE_1, agreement="PRIVATE - ", step=lambda name: step(f"again-{name}")
    )
    assert again != pk and payment_row(product, again)["connection_id"] == kept[0]
    assert len(_kept_connections(product, email)) == 1
    assert problems == []


def test_two_signer_corporate_payment_reaches_acsc(browser, product):
    first = browser.new_context(locale="en-GB").new_page()
    second = browser.new_context(locale="en-GB").new_page()
    problems_first, problems_second = (
        portal_problems(first, product.portal_url),
        portal_problems(second, product.portal_url),
    )
    step_first, step_second = _journey_shot(first, "corporate-first"), _journey_shot(second, "corporate-second")
    try:
        _payer(
            first, product, "finance@havbruk.example", identity=PRIVATE_2, context="corporate", agreement="Havbruk"
        )
        _payer(
            second, product, "ceo@havbruk.example", identity=CORPORATE_2, context="corporate", agreement="Havbruk"
        )

        first.goto(f"{product.portal_url}/payments/new/")
        choose_debtor(first, "Driftskonto")
        fill(
            first,
            {
                "amount": "150000",
                "currency": "NOK",
                **GERMAN_CREDITOR,
                "remittance_information": "Invoice 2026-207",
                "regulatory_reporting_code": "29",
                "regulatory_reporting_information": "Engineering services",
            },
        )
        review_the_payment(first)
        at_review(first, PASSWORD)
        send_to_bank(first)
        step_first("bank-sca")
        approve_at_bank(first, identity=PRIVATE_2, agreement="CORPORATE - Havbruk")
        wait_for_shown_status(first, "PATC")
        pk = payment_pk(first)
        keep_document_marked(first)
        # PATC: the signatures so far, and the page's address for the next signer.
        signatures = first.locator("#payment-signature-list").inner_text()
        assert "finance@havbruk.example" in signatures and "ceo@havbruk.example" not in signatures, signatures
        # Shown whether the page came back from the bank before or after the worker read PATC (its script then
        # shows the block the page was rendered with).
        assert first.locator("input.share-link").is_visible()
        link = first.locator("input.share-link").input_value()
        assert link == f"{product.portal_url}/payments/{pk}/"
        step_first("patc")
        axe_check(first)  # the payment page waiting for more signatures

        second.goto(link)
        second.wait_for_selector("text=More signatures needed", timeout=TIMEOUT)
        step_second("patc")
        second.get_by_role("button", name="Sign at the bank").click()
        second.wait_for_load_state()
        if confirm_password_if_asked(second, PASSWORD):  # the password page sends the signer back to the payment
            second.get_by_role("button", name="Sign at the bank").click()
        step_second("bank-sca")
        approve_at_bank(second, identity=CORPORATE_2, agreement="CORPORATE - Havbruk")
        wait_for_shown_status(second, "PDNG")
        signatures = second.locator("#payment-signature-list").inner_text()
        assert "finance@havbruk.example" in signatures and "ceo@havbruk.example" in signatures, signatures
        step_second("pending")

        # The first signer's page, open all along, follows without a reload, and on to ACSC.
        wait_for_shown_status(first, "PDNG")
        assert same_document(first)
        assert not first.locator("#payment-patc").is_visible()  # no more signatures asked for
        settle_while_watching(first, product, pk, shot=step_first)
        timeline = first.locator("#payment-timeline").inner_text()
        assert "Approved at the bank" in timeline and "finance@havbruk.example" in timeline, timeline
        assert "Signature added" in timeline and "ceo@havbruk.example" in timeline, timeline
        assert problems_first == [] and problems_second == []
    finally:
        first.context.close()
        second.context.close()


def _csv_download(page) -> list[dict[str, str]]:
    with page.expect_download() as download:
        page.get_by_role("link", name="Download as CSV").click()
    path = download.value.path()
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def test_cancellation_before_the_batch_then_the_list_filter_and_csv(page, product):
    step = _journey_shot(page, "cancel")
    problems = portal_problems(page, product.portal_url)
    _payer(page, product, "cancel@payer.example", identity=PRIVATE_1)

    page.goto(f"{product.portal_url}/payments/new/")
    choose_debtor(page, "Brukskonto")
    fill(page, {"amount": "1500", "currency": "NOK", **SWEDISH_CREDITOR, "remittance_information": "Order 7"})
    review_the_payment(page)
    at_review(page, PASSWORD)
    pk = _approved(page, product, identity=PRIVATE_1, agreement="PRIVATE - ", step=step)
    step("pending")

    # Before the bank's batch it may still be cancelled.
    page.locator("#payment-cancel-link").click()
    page.wait_for_selector("text=Cancel the payment?", timeout=TIMEOUT)
    step("confirm")
    axe_check(page)  # the cancel confirmation
    page.get_by_role("button", name="Cancel the payment").click()
    wait_for_shown_status(page, "CANC", timeout=TIMEOUT)
    assert page.locator("#payment-status-label").inner_text() == "Cancelled"
    assert "The payment is cancelled." in page.locator("body").inner_text()
    assert not page.locator("#payment-cancel-link").is_visible()
    assert "Cancellation requested" in page.locator("#payment-timeline").inner_text()
    step("cancelled")
    payment_id = product.scalar("SELECT payment_id FROM payments_payment WHERE id = %s", (pk,))
    assert product.bank_sql("SELECT status FROM pis_payment WHERE payment_id = ?", (payment_id,)) == [("CANC",)]

    # A second payment, approved and waiting for the bank's batch, for the list's filter to leave out.
    page.goto(f"{product.portal_url}/payments/new/")
    choose_debtor(page, "Brukskonto")
    fill(page, {"amount": "300", "currency": "NOK", **SWEDISH_CREDITOR, "creditor_name": "Nordlys Design AB"})
    review_the_payment(page)
    at_review(page, PASSWORD)
    pending = _approved(page, product, identity=PRIVATE_1, agreement="PRIVATE - ", step=lambda name: None)

    page.goto(f"{product.portal_url}/payments/")
    listed = page.locator("table.payment-list tbody").inner_text()
    assert "Svensson Design AB" in listed and "Nordlys Design AB" in listed, listed
    step("list")
    axe_check(page)  # the payments list
    page.locator("select[name=group]").select_option(label="Rejected or cancelled")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(lambda url: "group=" in url)
    rows = page.locator("table.payment-list tbody tr")
    assert rows.count() == 1, page.locator("table").inner_text()
    assert "Svensson Design AB" in rows.first.inner_text() and "Cancelled" in rows.first.inner_text()
    step("list-filtered")

    exported = _csv_download(page)  # the same filter
    # The headers are the user's words (English here), the status in words with its code beside it.
    assert [(row["Payment number"], row["Status code at the bank"], row["Status"]) for row in exported] == [
        (str(pk), "CANC", "Cancelled")
    ], exported
    assert exported[0]["Amount"] == "1500.00" and exported[0]["Currency"] == "NOK"
    page.goto(f"{product.portal_url}/payments/")
    everything = {row["Payment number"] for row in _csv_download(page)}
    assert everything == {str(pk), str(pending)}, everything
    assert problems == []
