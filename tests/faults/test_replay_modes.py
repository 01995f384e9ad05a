"""A lost initiation answer against every plausible bank: the specification promises nothing about a repeated
X-Request-ID ("identifier unique to the call"), so the sandbox bank plays each behaviour
(``BANK_SIM_REQUEST_ID_REPLAY``) and the portal's reconciliation, which replays the same request, is run against
each. Whatever the bank does, it holds at most one payment per submission, and a payment the bank may hold is
never shown as refused nor sent again by itself:

- ``same``: the bank answers a repeated X-Request-ID with the payment it made the first time: reconciled,
  initiated;
- ``conflict``: it refuses a repeated X-Request-ID (4xx CONFLICT): the payment is "sent; check with your bank"
  and passed to staff;
- ``new``: it takes the repeat for a new request; the replay asks for no logical duplicate, so the bank refuses
  it when the first arrived ("sent; check with your bank") and makes it when the first never arrived.

One product serves the three behaviours: its bank is restarted with each in turn (same port and database, as a
redeploy would), and every submission has an amount of its own; the count of payments is read from the bank's own
database.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.faults.test_faults import _SUBMIT, INITIATE, PASSWORD, check_now
from tests.live_bank import PRIVATE_1
from tests.product import Fault, Product, connect_bank, sign_in, user_create, wait_until, whole_product

pytestmark = [pytest.mark.product, pytest.mark.timeout(600)]

_amounts = itertools.count(301)


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Iterator[Product]:
    """The product, with a payer connected to the bank."""
    with whole_product(
        tmp_path_factory.mktemp("replay"),
        redis="own",
        bank_timeout=2.0,
        extra_env={"DJANGO_SETTINGS_MODULE": "tests.faults.settings"},
    ) as running:
        user_create(running, "payer", PASSWORD)
        session = sign_in(running, "payer", PASSWORD)
        page = connect_bank(running, session, identity=PRIVATE_1)
        assert page.status_code == 200, page.text[:1000]
        yield running


@pytest.fixture(scope="module", params=["same", "conflict", "new"])
def product(request, whole) -> Iterator[Product]:
    """The product with its bank playing the behaviour named by the parameter."""
    with whole.bank_settings({"BANK_SIM_REQUEST_ID_REPLAY": request.param}) as running:
        running.replay_mode = request.param
        yield running


def _payments_at_bank(product: Product, request_id: str, amount: str) -> int:
    """The bank's payments of this submission: by its X-Request-ID, and by its amount (a bank that took the
    replay for a new request would have made a second payment under the same X-Request-ID or another)."""
    by_request = product.bank_sql("SELECT count(*) FROM pis_payment WHERE request_id = ?", (request_id,))[0][0]
    by_amount = product.bank_sql("SELECT count(*) FROM pis_payment WHERE amount = ?", (amount,))[0][0]
    assert by_request == by_amount, (by_request, by_amount)
    return by_amount


def _state(product: Product, pk: int) -> str:
    return product.sql("SELECT state FROM payments_payment WHERE id = %s", (pk,))[0][0]


@pytest.mark.parametrize(
    ("fault", "bank_saw_it"),
    [
        (Fault(delay=3.5, forward=True), True),  # beyond the 2 s timeout: the bank made it, the answer lost
        (Fault(drop=True, forward=True), True),  # the bank made it, the connection dropped
        (Fault(status=500), False),  # the bank failed before making it
    ],
    ids=["slow", "dropped", "500"],
)
def test_a_lost_answer_never_becomes_a_second_payment_whatever_the_bank_does(product, fault, bank_saw_it):
    amount = f"{next(_amounts)}.25"
    fault.match, fault.times = INITIATE, 1
    start = len(product.proxy.seen)
    product.proxy.inject(fault)

    done = product.django(_SUBMIT, username="payer", amount=amount, text=f"replay {product.replay_mode}")

    assert done["state"] == "outcome_unknown", done
    # Once the faulted request is over (a late one reached the bank), the payer's check (inside the replay
    # window) replays the very same request.
    wait_until(lambda: any(s.fault for s in list(product.proxy.seen)[start:]), timeout=30)
    state = check_now(product, done["id"], until=("initiated", "unconfirmed"))
    assert state == _state(product, done["id"])
    assert _payments_at_bank(product, done["request_id"], amount) == 1
    if not bank_saw_it or product.replay_mode == "same":
        assert state == "initiated"  # the bank answered the replay with the one payment
    else:
        assert state == "unconfirmed"  # the bank refused the replay: it may hold the payment, so never "refused"
    # Nothing is sent again by itself: later dispatcher runs leave the bank's count as it is.
    product.proxy.clear()
    unknown = "SELECT count(*) FROM payments_payment WHERE state IN ('outcome_unknown', 'submitting')"
    wait_until(lambda: product.sql(unknown)[0][0] == 0, timeout=30)
    assert _payments_at_bank(product, done["request_id"], amount) == 1
