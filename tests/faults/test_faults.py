"""Faults of the whole product, as processes (tests/product.py): the bank down, slow beyond the client's timeout,
answering 500 and 429, or dropping the connection, during payment initiation, status polling and account
refresh; a process killed with SIGKILL in the middle of a payment submission, a poll or a refresh; Redis
restarted; the database connection dropped (PostgreSQL) or locked (SQLite); a task delivered twice; two beat
processes; the portal's clock 59 and 61 seconds off the bank's (its bank client's clock moved by
PRODUCT_CLOCK_SKEW_SECONDS).

Initiation is submitted here through payments.services.submission.payment_submit in the portal's environment (the
page calls the same service synchronously); tests/load submits through the pages themselves.

Each test fails when anything is lost (a payment forgotten, a state stuck) or duplicated (two payments at the
bank for one submission, two pollers of one payment at once, a refresh beyond the bank's allowance). The
portal processes run ``tests.faults.settings`` (the product's settings with beat's dispatchers every 3 s and a
6 s poll lease) so that recovery shows within seconds.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import sqlite3
import threading
import time
import uuid
from decimal import Decimal

import pytest
import requests

from accounts.models import UNATTENDED_CALLS_PER_DAY
from tests.live_bank import PRIVATE_1
from tests.product import (
    Fault,
    Product,
    connect_bank,
    csrf_of,
    sign_in,
    user_create,
    wait_until,
    whole_product,
)
from xs2a.links import quote_id

pytestmark = [pytest.mark.product, pytest.mark.live_bank, pytest.mark.timeout(600)]

PASSWORD = "correct horse battery 42"
STATUS_GET = r"^GET /v1/payments/[^/]+/[^/]+/status$"
INITIATE = r"^POST /v1/payments/[^/]+$"

_SUBMIT = """
from decimal import Decimal
from django.contrib.auth import get_user_model
from accounts.models import BankAccount
from connections.models import BankConnection
from payments.services import drafts, submission

from payments.instructions import AccountReference, CreditorAddress, PaymentInstruction, initiation_body_json
from xs2a.psu import PsuContext

user = get_user_model().objects.get(username=params["username"])
connection = BankConnection.objects.filter(user=user).order_by("id").first()
debtor = BankAccount.objects.filter(connection=connection, kind="account", currency="NOK").order_by("id").first()
instruction = PaymentInstruction(
    debtor_account=AccountReference(currency="NOK", bban=debtor.bban),
    amount=Decimal(params["amount"]),
    currency="EUR",
    creditor_name="Müller Maschinenbau GmbH",
    creditor_account=AccountReference(currency="EUR", iban="DE89370400440532013000"),
    creditor_agent="COBADEFFXXX",
    creditor_address=CreditorAddress(country="DE", city="Berlin"),
    remittance_information=params["text"],
)
payment = drafts.payment_draft_create(
    user=user, product="norwegian-cross-border-credit-transfers", context="PRIVATE", connection=connection,
    instruction=instruction, form_data={},
)
presence = PsuContext(ip_address="127.0.0.1", http_method="POST", user_agent="fault tests")
outcome = submission.payment_submit(
    payment=payment, user=user, idempotency_key=str(payment.idempotency_key), presence=presence
)
result = {"id": payment.pk, "state": outcome.payment.state, "message": outcome.message,
          "errors": outcome.errors, "request_id": str(payment.request_id)}
"""

# The payer's "check now" (the reconcile page's button, or its automatic check): inside the replay window it
# replays the very same request with the payer's live presence headers. The background never replays.
_CHECK = """
from django.contrib.auth import get_user_model
from payments.services import reconciliation
from xs2a.psu import PsuContext

user = get_user_model().objects.get(username=params["username"])
presence = PsuContext(ip_address="127.0.0.1", http_method="POST", user_agent="fault tests")
outcome = reconciliation.payment_reconcile(payment_id=params["id"], actor=user, presence=presence)
result = {"state": outcome.state, "attempted": outcome.attempted, "message": str(outcome.message)}
"""


def check_now(product: Product, pk: int, *, until=("initiated",), timeout: float = 60) -> str:
    """Press "check now" until the payment is in one of ``until`` (a check is refused while the caller's lease
    holds, for the first 15 s after the answer was lost, or before the backoff after a failed one); the payment's
    state."""
    states: list[str] = []

    def settled() -> bool:
        state = product.django(_CHECK, username="payer", id=pk)["state"]
        states.append(state)
        return state in until

    try:
        wait_until(settled, timeout=timeout, interval=2)
    except AssertionError as late:
        raise AssertionError(f"{late}; checked: {states[-5:]}") from None
    return states[-1]


_POLL = """
from payments.services.polling import payment_poll
outcome = payment_poll(payment_id=params["id"])
result = {"ok": outcome.ok, "message": outcome.message, "status": outcome.status, "skipped": outcome.skipped}
"""

_POLL_SOON = """
from payments.models import Payment
from payments.services.polling import poll_soon
for pk in params["ids"]:
    poll_soon(Payment.objects.get(pk=pk))
"""


@pytest.fixture(scope="module")
def product(tmp_path_factory) -> Product:
    with whole_product(
        tmp_path_factory.mktemp("faults"),
        redis="own",
        bank_timeout=2.0,
        extra_env={"DJANGO_SETTINGS_MODULE": "tests.faults.settings"},
    ) as running:
        user_create(running, "payer", PASSWORD)
        session = sign_in(running, "payer", PASSWORD)
        page = connect_bank(running, session, identity=PRIVATE_1)
        assert page.status_code == 200, page.text[:1000]
        assert running.scalar("SELECT count(*) FROM accounts_bankaccount") >= 2
        yield running


@pytest.fixture(autouse=True)
def _no_fault_left(product):
    product.proxy.clear()
    yield
    product.proxy.clear()


_amounts = itertools.count(101)


def submit(product: Product, text: str) -> dict:
    """Submit a payment; each has another amount (the bank refuses a logical duplicate: same debtor, creditor,
    amount and day)."""
    return product.django(_SUBMIT, username="payer", amount=f"{next(_amounts)}.25", text=text)


def payment_row(product: Product, pk: int) -> dict:
    columns = ("state", "transaction_status", "payment_id", "next_poll_at", "poll_lease_until", "poll_count")
    row = product.sql(f"SELECT {', '.join(columns)} FROM payments_payment WHERE id = %s", (pk,))  # noqa: S608
    assert row, f"payment {pk} is lost"
    return dict(zip(columns, row[0], strict=True))


def at_bank(product: Product, request_id: str) -> int:
    """How many payments the bank made for the initiation with this X-Request-ID."""
    return product.bank_sql("SELECT count(*) FROM pis_payment WHERE request_id = ?", (request_id,))[0][0]


def status_reads_arrived(product: Product) -> int:
    return sum(1 for request in list(product.proxy.arrived) if request.endswith("/status"))


def initiated(product: Product, text: str) -> dict:
    done = submit(product, text)
    assert done["state"] == "initiated", done
    return done


# --- payment initiation --------------------------------------------------------------------------------------


def test_a_lost_initiation_answer_is_reconciled_into_exactly_one_payment(product):
    faults = {
        "slow": (Fault(delay=3.5, forward=True), True),  # beyond the 2 s timeout: the bank made it, answer lost
        "dropped": (Fault(drop=True, forward=True), True),  # the bank made it, the connection dropped
        "500": (Fault(status=500), False),  # the bank failed before making it
    }
    submitted = {}
    for name, (fault, bank_saw_it) in faults.items():
        fault.match, fault.times = INITIATE, 1
        start = len(product.proxy.seen)
        product.proxy.inject(fault)
        done = submit(product, f"lost answer {name}")
        # The user is told clearly, and the payment is being checked, never sent anew as another payment.
        assert done["state"] == "outcome_unknown", (name, done)
        assert "never be sent twice" in done["message"]
        wait_until(lambda start=start: any(s.fault for s in product.proxy.seen[start:]), timeout=30)
        assert at_bank(product, done["request_id"]) == (1 if bank_saw_it else 0), (name, product.proxy.last_answer)
        submitted[name] = done

    # The payer checks (inside the replay window): one payment each, initiated.
    for name, done in submitted.items():
        assert check_now(product, done["id"]) == "initiated", name
        assert at_bank(product, done["request_id"]) == 1, name
        row = payment_row(product, done["id"])
        assert row["payment_id"] and row["transaction_status"] == "RCVD", (name, row)


def test_a_process_killed_in_the_middle_of_a_submission_leaves_exactly_one_payment(product):
    """The process submitting the payment (a web worker, here an interpreter of the product's own) is killed
    with SIGKILL while its initiation is on the way to the bank: nothing of it runs again, the row stays
    SUBMITTING with its lease, and when the lease runs out (8 s here) the beat's dispatcher takes it over as of
    unknown outcome (no replay: the payer is not present); the payer's check then replays the very same request:
    one payment at the bank, the row initiated."""
    amount = f"{next(_amounts)}.25"
    arrived, seen = len(product.proxy.arrived), len(product.proxy.seen)
    # The bank gets the request 5 s late (it then makes the payment): the caller is still waiting when killed.
    product.proxy.inject(Fault(delay=5, forward=True, match=INITIATE, times=1))
    submitting = product.django_start(_SUBMIT, username="payer", amount=amount, text="killed while submitting")
    try:
        wait_until(
            lambda: any(re.match(INITIATE, r) for r in product.proxy.arrived[arrived:]),
            timeout=60,
            message=f"the initiation on its way\n{product.log_text('django-started')[-3000:]}",
        )
        os.killpg(submitting.pid, signal.SIGKILL)  # before the client's 2 s timeout: no way out for it
        assert submitting.wait(timeout=10) == -signal.SIGKILL
    finally:
        if submitting.poll() is None:
            os.killpg(submitting.pid, signal.SIGKILL)
    (row,) = product.sql(
        "SELECT id, state, request_id, reconcile_at FROM payments_payment WHERE amount = %s", (Decimal(amount),)
    )
    pk, state, stored_request_id, lease = row
    request_id = str(uuid.UUID(str(stored_request_id)))  # as sent (X-Request-ID), whatever the column's type
    assert state == "submitting" and lease is not None, row

    # Once the lease has run out, beat's dispatcher takes the payment over (outcome unknown, no replay) ...
    wait_until(
        lambda: payment_row(product, pk)["state"] == "outcome_unknown",
        timeout=90,
        message=f"taken over by reconciliation\n{product.log('worker')}\n{product.log('beat')}",
    )
    # ... and the payer's check replays the very same request.
    assert check_now(product, pk) == "initiated"
    assert at_bank(product, request_id) == 1

    def initiations() -> list:
        return [s for s in list(product.proxy.seen)[seen:] if re.search(INITIATE, f"{s.method} {s.path}")]

    # The killed caller's request (forwarded after its delay) and the reconciler's replay of it: both reached
    # the bank, which made one payment of the one X-Request-ID.
    wait_until(lambda: len(initiations()) == 2, timeout=30, message="both initiations seen")
    assert all(s.forwarded for s in initiations()), initiations()
    assert at_bank(product, request_id) == 1
    assert payment_row(product, pk)["transaction_status"] == "RCVD"
    kinds = [
        kind
        for (kind,) in product.sql(
            "SELECT kind FROM payments_paymentevent WHERE payment_id = %s ORDER BY at, id", (pk,)
        )
    ]
    # Sent (at the claim), the caller's death seen by the reconciler, the bank's answer of the replay.
    assert kinds == ["created", "submitted", "unknown", "reconciled", "status"], kinds


def test_an_initiation_answered_429_is_refused_with_the_banks_text_and_nothing_is_made(product):
    product.proxy.inject(
        Fault(
            status=429,
            code="ACCESS_EXCEEDED",
            text="Too many payments now",
            retry_after=60,
            match=INITIATE,
            times=1,
        )
    )
    done = submit(product, "answered 429")
    # A 4xx means the bank made nothing: the user sees the bank's own text beside the payment, nothing is
    # reconciled or sent again by itself.
    assert done["state"] == "refused", done
    assert any("Too many payments now" in error for error in done["errors"]), done
    assert at_bank(product, done["request_id"]) == 0
    row = payment_row(product, done["id"])
    assert (row["state"], row["payment_id"], row["next_poll_at"]) == ("refused", "", None)
    again = initiated(product, "after the 429")
    assert at_bank(product, again["request_id"]) == 1


def refresh_now(product: Product, session: requests.Session) -> str:
    """Press "Refresh now" on the accounts page; the page the user then sees."""
    page = session.get(f"{product.portal_url}/bank/accounts/", timeout=60)
    assert page.status_code == 200, page.text[:500]
    done = session.post(
        f"{product.portal_url}/bank/accounts/refresh/",
        data={"csrfmiddlewaretoken": csrf_of(page.text)},
        headers={"Referer": f"{product.portal_url}/bank/accounts/"},
        timeout=120,
    )
    assert done.status_code == 200 and done.url.endswith("/bank/accounts/"), (done.status_code, done.url)
    return done.text


def balances_stored(product: Product) -> list[tuple]:
    return product.sql("SELECT * FROM accounts_balancesnapshot ORDER BY id")


def test_the_bank_down_sends_nothing_twice_tells_the_user_and_resumes(product):
    session = sign_in(product, "payer", PASSWORD)
    balances = balances_stored(product)
    product.bank_stop()
    try:
        with pytest.raises(requests.RequestException):
            requests.get(f"{product.bank_url}/healthz", timeout=2)
        done = submit(product, "bank down")
        # Nothing arrived (draft: send again) or it may have (checking): both are told, neither is lost.
        assert done["state"] in {"draft", "outcome_unknown"}, done
        assert done["message"], done
        assert at_bank(product, done["request_id"]) == 0
        # "Refresh now": a clear message, and the balances shown stay as they were.
        page = refresh_now(product, session)
        assert "The bank did not answer as expected. Please try again later." in page, page[:3000]
        assert balances_stored(product) == balances
    finally:
        product.bank_start()
    assert "Balances and transactions refreshed." in refresh_now(product, session)
    if done["state"] == "outcome_unknown":
        assert check_now(product, done["id"]) == "initiated"
        assert at_bank(product, done["request_id"]) == 1
    else:
        assert at_bank(product, done["request_id"]) == 0
    # The product works again: a new payment goes through.
    again = initiated(product, "after the bank came back")
    assert at_bank(product, again["request_id"]) == 1


# --- status polling ------------------------------------------------------------------------------------------


_POLLS = """
from payments.services.polling import payment_poll
result = []
for _ in range(params["times"]):
    outcome = payment_poll(payment_id=params["id"])
    result.append({"ok": outcome.ok, "message": outcome.message, "status": outcome.status,
                   "skipped": outcome.skipped})
"""


def test_failed_status_polls_keep_the_payment_and_polling_resumes(product):
    done = initiated(product, "failed polls")
    before = payment_row(product, done["id"])
    # One fault per poll, in this order (the client retries a GET after a timeout or a dropped connection,
    # three attempts in all; it does not retry a 500, nor a 429 whose Retry-After is beyond its patience).
    for fault in (
        Fault(status=500, text="Status service unavailable", times=1),
        Fault(status=429, code="ACCESS_EXCEEDED", text="Too many status reads", retry_after=3600, times=1),
        Fault(delay=3, times=3),
        Fault(drop=True, times=3),
    ):
        fault.match = STATUS_GET
        product.proxy.inject(fault)
    outcomes = product.django(_POLLS, id=done["id"], times=5)

    failed, last = outcomes[:4], outcomes[4]
    assert [o["ok"] for o in failed] == [False] * 4, outcomes
    assert all(o["message"] for o in failed), outcomes
    assert "Status service unavailable" in failed[0]["message"]
    assert "Too many status reads" in failed[1]["message"]
    # The fault is gone: the fifth poll reads the status; nothing was lost or changed by the failures.
    assert last["ok"] is True and last["status"] == "RCVD", outcomes
    after = payment_row(product, done["id"])
    assert (after["state"], after["transaction_status"]) == (before["state"], before["transaction_status"])
    assert after["next_poll_at"] is not None and after["poll_lease_until"] is None
    assert after["poll_count"] >= before["poll_count"] + 5


def test_a_worker_killed_in_the_middle_of_a_poll_loses_nothing(product):
    done = initiated(product, "worker killed")
    start = len(product.proxy.requests(STATUS_GET))
    arrived = status_reads_arrived(product)
    product.proxy.inject(Fault(delay=30, forward=True, match=STATUS_GET, times=1))
    product.django(_POLL_SOON, ids=[done["id"]])
    wait_until(
        lambda: (
            status_reads_arrived(product) > arrived
            and payment_row(product, done["id"])["poll_lease_until"] is not None
        ),
        timeout=30,
        message="the worker is in the middle of the poll",
    )
    product.worker_kill()
    product.worker_start()
    # The lease expires (6 s here), beat's dispatcher finds the poll due again and the new worker does it.
    wait_until(
        lambda: (
            len([s for s in product.proxy.requests(STATUS_GET)[start:] if not s.fault and s.status == 200])
            and payment_row(product, done["id"])["poll_lease_until"] is None
        ),
        timeout=60,
        message=f"the poll resumed\n{product.log('worker')}\n{product.log('beat')}",
    )
    row = payment_row(product, done["id"])
    assert row["transaction_status"] == "RCVD" and row["poll_count"] >= 1
    assert at_bank(product, done["request_id"]) == 1


def test_a_poll_delivered_twice_calls_the_bank_once_at_a_time(product):
    done = initiated(product, "delivered twice")
    start, since = len(product.proxy.seen), time.monotonic()
    product.proxy.inject(Fault(delay=2, forward=True, match=STATUS_GET))
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(product.django(_POLL, fresh=True, id=done["id"])))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    product.proxy.clear()
    assert len(results) == 2
    assert sorted(r["skipped"] for r in results) in ([False, True], [False, False]), results
    assert_never_overlapping(product.proxy.seen[start:], since=since)


def assert_never_overlapping(seen, *, since: float) -> None:
    """No two status reads of the same payment (the same path) started at or after ``since`` (time.monotonic())
    were at the bank at once. (Earlier ones may be a killed worker's request still held by the proxy.)"""
    by_payment: dict[str, list] = {}
    for request in seen:
        if request.path.endswith("/status") and request.started >= since:
            by_payment.setdefault(request.path, []).append((request.started, request.ended))
    for path, spans in by_payment.items():
        spans.sort()
        for (_, first_end), (second_start, _) in itertools.pairwise(spans):
            assert second_start >= first_end - 0.05, f"two polls of {path} at once: {spans}"


def test_two_beat_processes_by_mistake_do_not_poll_a_payment_twice_at_once(product):
    payments = [initiated(product, f"two beats {n}") for n in range(2)]
    start, since = len(product.proxy.seen), time.monotonic()
    product.beat_start("beat-2")
    try:
        product.proxy.inject(Fault(delay=1, forward=True, match=STATUS_GET))
        product.django(_POLL_SOON, ids=[p["id"] for p in payments])
        time.sleep(12)  # several dispatcher runs of both beats
    finally:
        product.stop("beat-2")
        product.proxy.clear()
    polls = [s for s in product.proxy.seen[start:] if s.path.endswith("/status")]
    assert len(polls) >= 2, "the payments were polled"
    assert_never_overlapping(polls, since=since)
    for p in payments:
        assert at_bank(product, p["request_id"]) == 1


# --- account refresh -----------------------------------------------------------------------------------------

_REFRESH = """
from accounts.refresh import account_refresh
from xs2a.psu import PsuContext
presence = None
if params["present"]:
    presence = PsuContext(ip_address="127.0.0.1", http_method="POST", user_agent="fault tests")
outcome = account_refresh(account_id=params["id"], presence=presence)
result = {"ok": outcome.ok, "message": outcome.message, "calls": outcome.calls}
"""

_REFRESH_TWICE = """
from django.utils import timezone
from accounts.tasks import refresh_accounts
planned = timezone.now().isoformat()
refresh_accounts.delay([params["id"]], planned)
refresh_accounts.delay([params["id"]], planned)
"""


def accounts_of_payer(product: Product) -> list[tuple[int, str]]:
    """(id, the balances path at the bank) of the payer's accounts (not cards)."""
    rows = product.sql("SELECT id, resource_id FROM accounts_bankaccount WHERE kind = 'account' ORDER BY id")
    return [(pk, f"/v1/accounts/{quote_id(resource)}/balances") for pk, resource in rows]


def unattended_at_bank_within_allowance(product: Product) -> None:
    for account, kind, calls in product.bank_sql(
        "SELECT account_id, kind, count(*) FROM bank_simulator_unattendedaccess GROUP BY account_id, kind"
    ):
        assert calls <= UNATTENDED_CALLS_PER_DAY, (account, kind, calls)


def test_unattended_refresh_with_the_bank_failing_tells_why_and_never_exceeds_the_allowance(product):
    pk, balances = accounts_of_payer(product)[0]
    match = f"^GET {re.escape(balances)}$"
    product.proxy.inject(Fault(status=500, text="Balances are not available now", match=match, times=1))
    failed = product.django(_REFRESH, id=pk, present=False)
    assert failed["ok"] is False and "Balances are not available now" in failed["message"], failed

    product.proxy.inject(
        Fault(status=429, code="ACCESS_EXCEEDED", text="Daily limit used", retry_after=3600, match=match, times=1)
    )
    limited = product.django(_REFRESH, id=pk, present=False)
    assert limited["ok"] is False and "Daily limit used" in limited["message"], limited
    assert product.scalar("SELECT refresh_blocked_until FROM accounts_bankaccount WHERE id = %s", (pk,))

    # Blocked after the 429: the next unattended refresh does not call the bank at all.
    before = len(product.proxy.requests(match))
    refused = product.django(_REFRESH, id=pk, present=False)
    assert refused["ok"] is False and refused["calls"] == 0 and refused["message"], refused
    assert len(product.proxy.requests(match)) == before

    # With the PSU present ("Refresh now") the account is read, the block notwithstanding.
    present = product.django(_REFRESH, id=pk, present=True)
    assert present["ok"] is True, present
    assert len(product.proxy.requests(match)) == before + 1
    unattended_at_bank_within_allowance(product)


def test_a_refresh_task_delivered_twice_calls_the_bank_once(product):
    pk, balances = accounts_of_payer(product)[1]
    match = f"^GET {re.escape(balances)}$"
    before = len(product.proxy.requests(match))
    worker_log = len(product.log_text("worker"))
    product.proxy.inject(Fault(delay=1, forward=True, match=match))
    product.django(_REFRESH_TWICE, id=pk)
    done = re.compile(r"accounts\.refresh_accounts\[[^\]]+\] succeeded")
    wait_until(
        lambda: len(done.findall(product.log_text("worker")[worker_log:])) >= 2,
        timeout=60,
        message=f"both deliveries handled\n{product.log('worker')}",
    )
    assert len(product.proxy.requests(match)) == before + 1, product.proxy.requests(match)
    assert (
        product.scalar(
            "SELECT count(*) FROM accounts_refreshcall WHERE account_id = %s AND kind = 'balances'", (pk,)
        )
        == 1
    )
    unattended_at_bank_within_allowance(product)


_REFRESH_PLANNED = """
from datetime import datetime
from django.utils import timezone
from accounts.tasks import refresh_accounts
planned = params["planned"] or timezone.now().isoformat()
refresh_accounts.delay([params["id"]], planned)
result = planned
"""


def ledger(product: Product, pk: int) -> int:
    return product.scalar("SELECT count(*) FROM accounts_refreshcall WHERE account_id = %s", (pk,))


def test_a_worker_killed_in_the_middle_of_a_refresh_does_not_refresh_twice(product):
    pk, balances = accounts_of_payer(product)[1]
    match = f"^GET {re.escape(balances)}$"
    before_calls = len([s for s in product.proxy.requests(match) if not s.fault])
    before_ledger = ledger(product, pk)
    arrived = sum(1 for r in list(product.proxy.arrived) if r == f"GET {balances}")
    product.proxy.inject(Fault(delay=20, drop=True, match=match, times=1))
    planned = product.django(_REFRESH_PLANNED, id=pk, planned=None)
    wait_until(
        lambda: sum(1 for r in list(product.proxy.arrived) if r == f"GET {balances}") > arrived,
        timeout=30,
        message="the worker is in the middle of the refresh",
    )
    product.worker_kill()
    product.worker_start()
    # The reserved calls stay counted (the bank may have seen them); the same planned refresh delivered again
    # (as the broker redelivers an unacknowledged task) calls nothing.
    reserved = ledger(product, pk) - before_ledger
    assert reserved >= 1
    worker_log = len(product.log_text("worker"))
    product.django(_REFRESH_PLANNED, id=pk, planned=planned)
    done = re.compile(r"accounts\.refresh_accounts\[[^\]]+\] succeeded")
    wait_until(lambda: done.search(product.log_text("worker")[worker_log:]), timeout=60, message="redelivered")
    assert ledger(product, pk) - before_ledger == reserved
    assert len([s for s in product.proxy.requests(match) if not s.fault]) == before_calls
    # The user can still read the account at once.
    present = product.django(_REFRESH, id=pk, present=True)
    assert present["ok"] is True, present
    unattended_at_bank_within_allowance(product)


# --- infrastructure ------------------------------------------------------------------------------------------


def test_redis_restarted_the_portal_and_the_worker_carry_on(product):
    assert product.redis is not None
    product.redis.stop()
    health = requests.get(f"{product.portal_url}/healthz", timeout=20)
    assert health.status_code == 503 and health.json()["checks"]["broker"] != "ok", health.text
    product.redis.start()
    wait_until(
        lambda: requests.get(f"{product.portal_url}/healthz", timeout=20).status_code == 200,
        timeout=30,
        message="the portal sees the broker again",
    )
    done = initiated(product, "after a Redis restart")
    start = len(product.proxy.requests(STATUS_GET))
    product.django(_POLL_SOON, ids=[done["id"]])
    wait_until(
        lambda: len(product.proxy.requests(STATUS_GET)) > start,
        timeout=60,
        message=f"the worker reconnected and polled\n{product.log('worker')}",
    )


def test_the_database_connection_dropped_or_locked_the_product_carries_on(product):
    done = initiated(product, "database fault")
    session = sign_in(product, "payer", PASSWORD)
    if product.db.vendor == "postgresql":
        # The portal's and the worker's persistent connections (CONN_MAX_AGE) are ended under them.
        assert session.get(f"{product.portal_url}/bank/accounts/", timeout=60).status_code == 200
        wait_until(lambda: product.db.terminate_connections() >= 1, timeout=30, message="sessions to end")
        fault = contextlib.nullcontext()
    else:
        fault = _sqlite_locked(product.db.sqlite_path, seconds=4)
    start = len(product.proxy.requests(STATUS_GET))
    with fault:
        product.django(_POLL_SOON, ids=[done["id"]])
        page = session.get(f"{product.portal_url}/bank/accounts/", timeout=60)
    assert page.status_code == 200, page.text[:500]
    wait_until(lambda: len(product.proxy.requests(STATUS_GET)) > start, timeout=60, message="polled")
    # The status calls counted above may be of the earlier tests' payments, which are still polled: this one's
    # own count says it was polled after the fault.
    wait_until(lambda: payment_row(product, done["id"])["poll_count"] >= 1, timeout=60, message="this one polled")
    wait_until(lambda: payment_row(product, done["id"])["poll_lease_until"] is None, timeout=30)


@contextlib.contextmanager
def _sqlite_locked(path, *, seconds: float):
    """Hold SQLite's write lock for ``seconds`` in a thread while the body runs."""
    locked = threading.Event()

    def hold() -> None:
        with contextlib.closing(sqlite3.connect(path, timeout=20, isolation_level=None)) as conn:
            conn.execute("BEGIN EXCLUSIVE")
            locked.set()
            time.sleep(seconds)
            conn.execute("COMMIT")

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(20)
    try:
        yield
    finally:
        thread.join(60)


# --- clocks --------------------------------------------------------------------------------------------------


# The Date header counts whole seconds: a clock 61 s ahead whose Date is cut from x.95 s and arrives 60 ms later
# looks 59.99 s off to the bank. The skewed polls therefore start just after a second begins (x.1 s), where a
# clock 59 or 61 s off looks 59 or 61 s off, give or take the call's own latency.
_POLL_EARLY_IN_A_SECOND = "import time\ntime.sleep((1.1 - time.time() % 1) % 1)\n" + _POLL


def test_the_portal_clock_59_seconds_off_works_61_gives_a_clear_audited_error(product):
    done = initiated(product, "clock skew")
    ok = product.django(_POLL_EARLY_IN_A_SECOND, id=done["id"], env={"PRODUCT_CLOCK_SKEW_SECONDS": "59"})
    assert ok["ok"] is True and ok["status"] == "RCVD", ok
    ok = product.django(_POLL_EARLY_IN_A_SECOND, id=done["id"], env={"PRODUCT_CLOCK_SKEW_SECONDS": "-59"})
    assert ok["ok"] is True, ok

    calls_before = product.scalar("SELECT count(*) FROM tpp_portal_bankcall WHERE status = 400")
    refused = product.django(_POLL_EARLY_IN_A_SECOND, id=done["id"], env={"PRODUCT_CLOCK_SKEW_SECONDS": "61"})
    assert refused["ok"] is False and "Date" in refused["message"] and "60 seconds" in refused["message"], refused
    audited = product.sql(
        "SELECT status, tpp_message_texts FROM tpp_portal_bankcall WHERE status = 400 ORDER BY id DESC LIMIT 1"
    )
    assert product.scalar("SELECT count(*) FROM tpp_portal_bankcall WHERE status = 400") == calls_before + 1
    assert "60 seconds" in str(audited[0][1])
    row = payment_row(product, done["id"])
    assert row["transaction_status"] == "RCVD" and row["state"] == "initiated"


def test_environment_is_the_products_own(product):
    """The harness really runs separate processes with their own database and broker."""
    names = set(product.processes)
    assert {"bank", "web", "worker", "beat"} <= names
    assert all(product.processes[n].poll() is None for n in ("bank", "web", "worker", "beat"))
    assert product.env["BANK_BASE_URL"] == product.proxy.base_url != product.bank_url
    assert product.env["REDIS_URL"] == product.redis.url
    assert os.environ.get("REDIS_URL") != product.redis.url
