"""Payment steps of the end-to-end suite (tests/e2e/test_payment_journeys.py), done in the browser the way a
payer does them against the running product: the payment form, the password asked again before sending, the
review, the bank's SCA screens, and the payment page following the status by itself.

The bank's batches are run with its sandbox control (``POST /v1/sandbox/batches/run``, signed by the portal's
own bank client in the product's environment); what the payment page then shows comes from the Celery worker's
status polls (beat's dispatcher), never from the test: the status events are checked to have no user as actor.
"""

from __future__ import annotations

import re

from tests.product import Product

TIMEOUT = 30_000  # ms: one page step (a bank call or two behind it)
FOLLOW_TIMEOUT = 90_000  # ms: the worker's next poll, then the page's next read (it slows down to every 30 s)

# Private Customer 1 (docs/bank-interface.md, reference 1): Brukskonto 18 250, Høyrentekonto 84 000 NOK
PRIVATE_1 = "13039319955"
PRIVATE_2 = "12085592767"  # Private Customer 2: BSU 212 000 NOK; also a user of Havbruk Nord AS's agreement
CORPORATE_2 = "20079518612"  # Havbruk Nord AS: its agreement needs two signers

GERMAN_CREDITOR = {
    "creditor_name": "Müller Maschinenbau GmbH",
    "creditor_account": "DE89 3704 0044 0532 0130 00",
    "creditor_agent": "COBADEFFXXX",
    "creditor_country": "DE",
    "creditor_city": "München",
}


def fill(page, values: dict[str, str]) -> None:
    """Type each value into the form control of that name (a select by its option value)."""
    for name, value in values.items():
        field = page.locator(f"[name={name}]")
        assert field.count() == 1, f"the form has no single field {name!r}"
        if field.evaluate("element => element.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)


def choose_debtor(page, label: str) -> None:
    """Pick the account to pay from by (part of) its label."""
    debtor = page.locator("[name=debtor_account]")
    value = debtor.locator("option", has_text=label).first.get_attribute("value")
    debtor.select_option(value)


def review_the_payment(page) -> None:
    page.get_by_role("button", name="Review the payment").click()
    page.wait_for_load_state()


def confirm_password_if_asked(page, password: str) -> bool:
    """The portal asks for the password again before a payment is sent (once per payment); True if it did."""
    if "/auth/confirm-password/" not in page.url:
        return False
    page.locator("input[name=password]").fill(password)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_load_state()
    return True


def at_review(page, password: str) -> None:
    """Wait for the review page (through the password page when it comes first)."""
    confirm_password_if_asked(page, password)
    page.wait_for_selector("text=Send to the bank and approve", timeout=TIMEOUT)


def send_to_bank(page) -> None:
    page.get_by_role("button", name="Send to the bank and approve").click()
    wait_for_bank(page)


def wait_for_bank(page) -> None:
    try:
        page.wait_for_selector("button[name=action]", timeout=TIMEOUT)
    except Exception as exc:
        raise AssertionError(
            f"not at the bank's SCA screen: {page.url}\n{page.locator('body').inner_text()}"
        ) from exc


def approve_at_bank(page, *, identity: str, agreement: str) -> None:
    """The bank's SCA screens of a payment as the PSU sees them: identity number (when asked), the agreement
    (when the PSU has several; ``agreement`` is a part of its label, "PRIVATE - " or "CORPORATE - Havbruk"), then
    "Approve payment"; ends back on the portal's payment page."""
    wait_for_bank(page)
    if page.locator("input[name=identity]").count():
        page.fill("input[name=identity]", identity)
        page.click("button[name=action][value=identify]")
        wait_for_bank(page)
    if page.locator("input[name=agreement]").count():
        page.locator("label", has_text=agreement).first.locator("input[name=agreement]").check()
        page.click("button[name=action][value=context]")
        wait_for_bank(page)
    page.get_by_role("button", name="Approve payment").click()
    page.wait_for_selector("#payment-timeline", timeout=TIMEOUT)


def payment_pk(page) -> int:
    match = re.search(r"/payments/(\d+)/", page.url)
    assert match, f"not on a payment's page: {page.url}"
    return int(match.group(1))


def shown_status(page) -> str:
    return page.locator("#payment-status-label").get_attribute("data-status") or ""


def wait_for_shown_status(page, code: str, *, timeout: float = FOLLOW_TIMEOUT) -> None:
    try:
        page.wait_for_selector(f"#payment-status-label[data-status={code}]", timeout=timeout)
    except Exception as exc:
        raise AssertionError(
            f"the page does not show {code} (shows {shown_status(page)!r}):\n{page.locator('main').inner_text()}"
        ) from exc


def keep_document_marked(page) -> None:
    """Mark the page's document: a reload or a navigation loses the mark (see ``same_document``)."""
    page.evaluate("window.__sameDocument = true")


def same_document(page) -> bool:
    return bool(page.evaluate("window.__sameDocument === true"))


_BATCH_RUN = """
from core.bank import bank_client
answer = bank_client().request("POST", "/v1/sandbox/batches/run", json_body={})
result = {"status": answer.status, "body": answer.json()}
"""


def bank_batch_run(product: Product) -> dict:
    """Run the bank's batch now (its sandbox control), signed by the portal's bank client."""
    ran = product.django(_BATCH_RUN)
    assert ran["status"] == 200, ran
    return ran["body"]


def payment_row(product: Product, pk: int) -> dict:
    columns = ("state", "transaction_status", "connection_id", "user_id", "amount", "currency")
    rows = product.sql(f"SELECT {', '.join(columns)} FROM payments_payment WHERE id = %s", (pk,))  # noqa: S608
    assert rows, f"payment {pk} is not in the portal's database"
    return dict(zip(columns, rows[0], strict=True))


def status_events(product: Product, pk: int) -> list[tuple[str, int | None]]:
    """(bank status, actor) of each status the portal read for the payment, in order."""
    rows = product.sql(
        "SELECT transaction_status, actor_id FROM payments_paymentevent "
        "WHERE payment_id = %s AND kind = 'status' ORDER BY at, id",
        (pk,),
    )
    return [tuple(row) for row in rows]


def settle_while_watching(page, product: Product, pk: int, *, shot) -> list[str]:
    """Run the bank's batches one at a time while the payment page stays open, until it shows ACSC.

    After each batch the page must show the next status by itself: the worker reads it from the bank (beat's
    dispatcher) and the page's script redraws it. ``shot(step)`` is called at each status shown. Returns the
    statuses the page showed, in order."""
    keep_document_marked(page)
    shown = [shown_status(page)]
    for _ in range(4):
        if shown[-1] == "ACSC":
            break
        bank_batch_run(product)
        before = shown[-1]
        page.wait_for_function(
            "before => document.getElementById('payment-status-label').dataset.status !== before",
            arg=before,
            timeout=FOLLOW_TIMEOUT,
        )
        shown.append(shown_status(page))
        shot(f"status-{shown[-1].lower()}")
    assert shown[-1] == "ACSC", f"the payment did not settle: the page showed {shown}"
    assert same_document(page), "the payment page was reloaded: it must follow the status by itself"
    # The statuses the batches made were read by the worker (no user as actor), not by "Check the status now".
    events = status_events(product, pk)
    assert ("ACSC", None) in events, events
    assert all(actor is None for status, actor in events if status in {"ACSP", "ACSC"}), events
    return shown
