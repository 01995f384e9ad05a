"""A payment whose initiation answer is lost, in a real browser on a phone (390 px wide), against the sandbox
bank playing each answer to a repeated X-Request-ID (``BANK_SIM_REQUEST_ID_REPLAY``, a bank per mode): the
journey of issue 28 from the submit to one approved payment at the bank.

1. Sign in, connect the bank, fill in the payment form, review it.
2. The bank is armed to lose its next initiation answer (sandbox ``drop-next-payment-answer``, a TCP reset after
   it stored the payment); the submit ends on "Checking with the bank", never "refused".
3. A reload sends nothing again (the bank's own database still holds one payment).
4. "Check now" replays the very same request: ``same``: the bank answers with its payment and the PSU goes on to
   approve it; ``conflict`` and ``new``: the bank refuses the replay, the page says "Check with your bank" (passed
   to staff) and offers no way to make the payment again.
5. Back to the filled-in form and submit it again: "This form was sent already", no second payment.
6. A fresh form with the same details: while the first is unconfirmed the review refuses (409) and links to it;
   while it is processing (``same``) the bank refuses the new one as a logical duplicate and the edit page shows
   the first payment instead of the "pay it again" box.
7. The end: exactly one approved payment of that amount at the bank. ``conflict``/``new``: the bank holds the
   first payment unapproved and the portal cannot approve it (its answer, with the bank's id, was lost; the
   portal never adopts an id read from an error text). Staff settle it with the bank: they ask the bank to cancel
   the payment the bank named in its refusal, then mark the portal's payment "not at the bank"; the user then
   sends the fresh payment of step 6, which the bank now makes, and approves it.

Screenshots of every page go to test-artifacts/screenshots/lost-answer-<mode>-*.png.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from core.bank import bank_audit_context, bank_client
from devtools.livebank import RunningBank, bank_sql, running_bank
from payments.models import Payment, PaymentState
from payments.services.staff import payment_staff_settle
from tests.browser.problems import portal_problems
from tests.browser.test_payment_journeys import PASSWORD, _bank_sca, _connect, _sign_in
from tests.payments.journeys import PRIVATE_2
from xs2a.psu import PsuContext

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

TIMEOUT = 20_000  # ms
PHONE = {"width": 390, "height": 844}
AMOUNT = Decimal("150000")
DETAILS = {
    "amount": "150000",
    "currency": "NOK",
    "creditor_name": "Müller Maschinenbau GmbH",
    "creditor_account": "DE89 3704 0044 0532 0130 00",
    "creditor_agent": "COBADEFFXXX",
    "creditor_country": "DE",
    "creditor_city": "München",
    "remittance_information": "Invoice 2026-114",
    "regulatory_reporting_code": "29",
    "regulatory_reporting_information": "Engineering services",
}


@pytest.fixture(scope="module", params=["same", "conflict", "new"])
def replay_bank(request, tmp_path_factory) -> Iterator[RunningBank]:
    """The sandbox bank (gunicorn: the lost answer resets the connection) answering a repeated X-Request-ID as
    the mode says."""
    mode = request.param
    with running_bank(
        tmp_path_factory.mktemp(f"lost-answer-{mode}"),
        workers=1,
        settings={"BANK_SIM_REQUEST_ID_REPLAY": mode},
    ) as bank:
        yield bank


@pytest.fixture
def portal(replay_bank, live_server, settings) -> Iterator[str]:
    """The portal's live server talking to ``replay_bank``, which sends the PSU back to it; background tasks run
    inline (the worker's job)."""
    from tpp_portal.celery import app

    settings.BANK_BASE_URL = replay_bank.base_url
    settings.PORTAL_BASE_URL = live_server.url
    settings.CSRF_TRUSTED_ORIGINS = [live_server.url]
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"] = ["'self'", replay_bank.base_url]
    settings.CONTENT_SECURITY_POLICY = policy
    bank_client.cache_clear()
    app.loader.import_default_modules()  # the tasks the services enqueue (autodiscovered when a worker starts)
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield live_server.url
    app.conf.task_always_eager = eager
    bank_client.cache_clear()


@pytest.fixture
def phone(browser) -> Iterator:
    context = browser.new_context(locale="en-GB", viewport=PHONE)
    page = context.new_page()
    yield page
    context.close()


# --- the bank's own word -------------------------------------------------------------------------------------


def _bank_payments(bank: RunningBank) -> list[dict]:
    """The bank's payments of the journey's amount, read from its database (read-only)."""
    columns = ("payment_id", "status", "amount", "authorised_at", "request_id")
    rows = bank_sql(bank.database_path, f"SELECT {', '.join(columns)} FROM pis_payment ORDER BY id")  # noqa: S608
    payments = [dict(zip(columns, row, strict=True)) for row in rows]
    return [payment for payment in payments if Decimal(str(payment["amount"])) == AMOUNT]


def _arm_lost_answer() -> None:
    armed = bank_client().request(
        "POST", "/v1/sandbox/behaviour/drop-next-payment-answer", json_body={"mode": "reset"}
    )
    assert armed.status == 200, armed.body


# --- the pages -----------------------------------------------------------------------------------------------


class Journey:
    """One PSU's walk; every page looked at is photographed and its text kept."""

    def __init__(self, page, base: str, mode: str, artifacts_dir) -> None:
        self.page, self.base, self.mode, self.artifacts_dir = page, base, mode, artifacts_dir
        self.seen: list[tuple[str, str]] = []

    def look(self, name: str) -> str:
        self.page.wait_for_load_state()
        self.page.screenshot(path=self.artifacts_dir / f"lost-answer-{self.mode}-{name}.png", full_page=True)
        text = self.page.locator("main").inner_text()
        self.seen.append((name, text))
        # a phone shows the page without sideways scrolling
        width = self.page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name}: {width} px wide"
        return text

    def fill_form(self) -> None:
        self.page.goto(f"{self.base}/payments/new/")
        debtor = self.page.locator("[name=debtor_account]")
        debtor.select_option(debtor.locator("option", has_text="BSU").first.get_attribute("value"))
        for name, value in DETAILS.items():
            field = self.page.locator(f"[name={name}]")
            if not field.count():
                continue
            if field.evaluate("e => e.tagName") == "SELECT":
                field.select_option(value)
            else:
                field.fill(value)

    def review(self) -> None:
        self.page.get_by_role("button", name="Review the payment").click()
        self.page.wait_for_url(re.compile(r"/payments/\d+/|/auth/confirm-password/"), timeout=TIMEOUT)
        if "/auth/confirm-password/" in self.page.url:  # a payment was sent since the password was typed
            self.look("password-again")
            self.page.get_by_label("Password").fill(PASSWORD)
            self.page.get_by_role("button", name="Continue").click()
        try:
            self.page.wait_for_url(re.compile(r"/payments/\d+/"), timeout=TIMEOUT)
        except Exception as exc:
            raise AssertionError(
                f"not reviewed: {self.page.url}\n{self.page.locator('main').inner_text()}"
            ) from exc


def _payment_id(url: str) -> int:
    match = re.search(r"/payments/(\d+)/", url)
    assert match, url
    return int(match.group(1))


def _staff_settle_cancelled_at_bank(payment: Payment, staff) -> str:
    """What staff do with a payment the bank did not confirm whose replay the bank refused naming its payment:
    ask the bank to cancel that payment (it was never approved), then settle the portal's payment as not at the
    bank (``payment_staff_settle``, as the admin's action does). Returns the bank's payment id."""
    text = " ".join(message.get("text", "") for message in payment.tpp_messages)
    match = re.search(r"payment (\S+);", text)
    assert match, text  # the bank's refusal names the payment it holds
    bank_payment_id = match.group(1)
    with bank_audit_context(user=staff, obj=payment):
        bank_client().payments.delete(
            payment_id=bank_payment_id, product=payment.product, psu=PsuContext(psu_id=payment.connection.psu_id)
        )
    assert payment_staff_settle(payment_id=payment.pk, staff_user=staff, at_bank=False)
    return bank_payment_id


def test_a_lost_answer_ends_in_one_approved_payment(phone, portal, replay_bank, artifacts_dir, django_user_model):
    mode = replay_bank.env["BANK_SIM_REQUEST_ID_REPLAY"]
    page = phone
    journey = Journey(page, portal, mode, artifacts_dir)
    problems = portal_problems(page, portal)

    # 1. sign in, connect, fill in, review
    _sign_in(page, portal, "payer@example.com", django_user_model)
    _connect(page, portal, identity=PRIVATE_2, context="PRIVATE")
    journey.fill_form()
    journey.look("1-form")
    journey.review()
    page.wait_for_selector("text=Send to the bank and approve", timeout=TIMEOUT)
    journey.look("1-review")
    first = Payment.objects.get(pk=_payment_id(page.url))

    # 2. the bank stores the payment and loses its answer
    _arm_lost_answer()
    # The checking page presses "Check now" by itself 3 s after it loads (static/js/payment_reconcile.js): the
    # page's clock stands still until the journey lets it run.
    page.clock.install()
    page.clock.pause_at(datetime.now(UTC) + timedelta(seconds=1))
    page.get_by_role("button", name="Send to the bank and approve").click()
    page.wait_for_url(re.compile(rf"/payments/{first.pk}/reconcile/"), timeout=TIMEOUT)
    text = journey.look("2-checking")
    assert "Checking with the bank" in text and "Check now" in text
    first.refresh_from_db()
    assert first.state == PaymentState.OUTCOME_UNKNOWN
    (held,) = _bank_payments(replay_bank)
    assert held["status"] == "RCVD" and held["request_id"] == str(first.request_id)

    # 3. a reload sends nothing
    page.reload()
    assert "Checking with the bank" in journey.look("3-reloaded")
    assert len(_bank_payments(replay_bank)) == 1
    first.refresh_from_db()
    assert first.state == PaymentState.OUTCOME_UNKNOWN and first.reconcile_attempts == 0

    # 4. check now: the same request again. The payer presses it (same), or the page does it by itself (conflict
    # and new); either way once.
    if mode == "same":
        page.get_by_role("button", name="Check now").click()
    else:
        page.clock.run_for(3_500)
    page.clock.resume()
    if mode == "same":
        # the bank answered with the payment it made: on to its approval, which the PSU gives
        page.wait_for_url(lambda url: url.startswith(replay_bank.base_url), timeout=TIMEOUT)
        journey.look("4-bank-approval")
        _bank_sca(page, identity=PRIVATE_2, context="PRIVATE", approve_label="Approve payment")
        page.wait_for_selector("#payment-timeline", timeout=TIMEOUT)
        assert _payment_id(page.url) == first.pk
        journey.look("4-approved")
        first.refresh_from_db()
        assert first.payment_id == held["payment_id"]
        assert first.state == PaymentState.AWAITING_STATUS  # approved; the bank's batches have not run
    else:
        page.wait_for_selector("h1:has-text('Check with your bank')", timeout=TIMEOUT)
        text = journey.look("4-check-with-your-bank")
        assert "We will not send it again." in text
        main = page.locator("main")
        assert main.locator("form").count() == 0  # no "check now", no way to send it again from here
        assert main.locator(f"a[href*='/payments/{first.pk}/edit/'], a[href$='/payments/new/']").count() == 0
        first.refresh_from_db()
        assert first.state == PaymentState.UNCONFIRMED and first.staff_flagged_at is not None
    assert len(_bank_payments(replay_bank)) == 1

    # 5. Back to the filled-in form, sent again: the payment made from it, no second one
    for _ in range(8):
        if re.search(r"/payments/new/$", page.url):
            break
        page.go_back()
    assert re.search(r"/payments/new/$", page.url), page.url
    journey.look("5-form-again")
    assert page.locator("[name=creditor_name]").input_value() == DETAILS["creditor_name"]
    assert page.locator("[name=intent_kept]").input_value() == str(first.intent_key)
    # the count follows the value the browser put back (70 characters at most)
    name_count = page.locator("#id_creditor_name ~ .character-count-status")
    assert name_count.inner_text() == f"You have {70 - len(DETAILS['creditor_name'])} characters remaining"
    # the account fields (autocomplete off) are not put back by the browser: typed again
    for name in ("creditor_account", "creditor_agent"):
        if not page.locator(f"[name={name}]").input_value():
            page.locator(f"[name={name}]").fill(DETAILS[name])
    journey.review()
    text = journey.look("5-sent-already")
    assert "This form was sent already" in text
    assert _payment_id(page.url) == first.pk
    assert Payment.objects.filter(user=first.user).count() == 1
    assert len(_bank_payments(replay_bank)) == 1

    # 6. a fresh form with the same details
    journey.fill_form()
    journey.review()
    second = Payment.objects.get(pk=_payment_id(page.url))
    assert second.pk != first.pk and second.state == PaymentState.DRAFT
    if mode == "same":
        page.wait_for_selector("text=Send to the bank and approve", timeout=TIMEOUT)
        journey.look("6-review")
        page.get_by_role("button", name="Send to the bank and approve").click()
        page.wait_for_url(re.compile(rf"/payments/{second.pk}/edit/"), timeout=TIMEOUT)
        text = journey.look("6-duplicate-of-the-first")
        second.refresh_from_db()
        assert second.state == PaymentState.REFUSED  # the bank made nothing of it
        assert page.locator("[name=allow_logical_duplicate]").count() == 0  # no "pay it again"
        assert "The bank sees this as the same payment" in text and "allowLogicalDuplicate" not in text
        page.locator("main").get_by_role("link", name="Show that payment").click()
        page.wait_for_url(re.compile(rf"/payments/{first.pk}/$"), timeout=TIMEOUT)
        journey.look("6-the-first")
    else:
        assert page.reload().status == 409
        text = journey.look("6-review-refused")
        assert "never paid twice" in text
        assert page.locator("main").get_by_role("button", name="Send to the bank and approve").count() == 0
        link = page.locator("#alike-unknown a")
        assert link.get_attribute("href") == f"/payments/{first.pk}/reconcile/"
        second.refresh_from_db()
        assert second.state == PaymentState.DRAFT
        assert len(_bank_payments(replay_bank)) == 1

        # 7. staff settle the first with the bank; the user then sends the fresh one and approves it
        first.refresh_from_db()
        staff = django_user_model.objects.create_user("staff@example.com", "staff@example.com", "x", is_staff=True)
        cancelled_id = _staff_settle_cancelled_at_bank(first, staff)
        assert cancelled_id == held["payment_id"]
        assert [row["status"] for row in _bank_payments(replay_bank)] == ["CANC"]
        page.goto(f"{portal}/payments/{first.pk}/reconcile/")
        page.wait_for_url(re.compile(rf"/payments/{first.pk}/$"), timeout=TIMEOUT)
        journey.look("7-first-settled")
        page.goto(f"{portal}/payments/{second.pk}/review/")
        page.get_by_role("button", name="Send to the bank and approve").click()
        _bank_sca(page, identity=PRIVATE_2, context="PRIVATE", approve_label="Approve payment")
        page.wait_for_url(re.compile(rf"/payments/{second.pk}/$"), timeout=TIMEOUT)
        page.wait_for_selector("#payment-timeline", timeout=TIMEOUT)
        journey.look("7-approved")

    # 7. the bank's own word: one payment of that amount approved, and no other live one
    at_bank = _bank_payments(replay_bank)
    approved = [row for row in at_bank if row["authorised_at"] is not None]
    assert len(approved) == 1, at_bank
    assert all(row["status"] in ("CANC", "RJCT") for row in at_bank if row["authorised_at"] is None), at_bank
    # the portal never called "refused" a payment the bank holds (the words of the state and of the edit page)
    for name, text in journey.seen:
        if name != "6-duplicate-of-the-first":  # the second, which the bank did refuse and does not hold
            assert "Refused by the bank" not in text and "The bank refused this payment" not in text, name
    first.refresh_from_db()
    assert first.state != PaymentState.REFUSED
    # the review page of the second answers 409 while the first is unconfirmed, as it should: chromium logs it
    expected = f"status of 409 (Conflict) at {portal}/payments/{second.pk}/review/"
    assert [problem for problem in problems if not problem.endswith(expected)] == []
