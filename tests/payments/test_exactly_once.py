"""Issue #28, "exactly once at any bank": the model of tests/payments/exactly_once_model.py run against three
sandbox banks (one per replay mode, the other bank profiles spread between them), with fixed seeds.

EXACTLY_ONCE_EXAMPLES and EXACTLY_ONCE_STEPS set how many examples of how many steps (``make soak`` runs many).
The last test plants a fault in the portal and checks that the model catches it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from core.bank import bank_client
from devtools.livebank import running_bank
from tests.live_bank import portal_connect
from tests.payments import exactly_once_model as model
from tests.payments.journeys import account_named

#: Seconds the whole module may take (``make soak`` sets 0: no limit).
TIMEOUT = int(os.environ.get("EXACTLY_ONCE_TIMEOUT", "900"))
pytestmark = [pytest.mark.live_bank, pytest.mark.timeout(TIMEOUT)]

EXAMPLES = int(os.environ.get("EXACTLY_ONCE_EXAMPLES", "100"))
STEPS = int(os.environ.get("EXACTLY_ONCE_STEPS", "30"))
#: At most this many examples for a planted fault to be found in (it is found in far fewer).
PLANTED_EXAMPLES = 60


def model_settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,  # fixed seeds: the same examples every run
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def banks(tmp_path_factory) -> Iterator[list[model.LiveBank]]:
    with contextlib.ExitStack() as stack:
        yield [
            model.LiveBank(profile, bank.base_url + profile.base_path, bank.database_path)
            for profile in model.PROFILES
            for bank in [
                stack.enter_context(
                    running_bank(
                        tmp_path_factory.mktemp(f"bank-{profile.name}"), workers=1, settings=profile.settings
                    )
                )
            ]
        ]


@pytest.fixture
def connected(banks, db) -> list[model.LiveBank]:
    """A payer per bank, connected to it through the portal's pages (before the examples, which roll back)."""
    from tests.factories import UserFactory

    for bank in banks:
        bank.user = UserFactory(email=f"payer-{bank.profile.name}@example.com")
        with override_settings(BANK_BASE_URL=bank.base_url):
            bank_client.cache_clear()
            client = Client()
            client.force_login(bank.user)
            back, _params = portal_connect(client)
            assert back.status_code == 302, back.content[:1000]
        bank.debtor_key = str(account_named(bank.user, "Brukskonto").pk)
    bank_client.cache_clear()
    return banks


def run_model(banks, examples: int, steps: int) -> None:
    model.ExactlyOnceMachine.banks = banks
    model.ExactlyOnceMachine.steps = steps
    try:
        run_state_machine_as_test(model.ExactlyOnceMachine, settings=model_settings(examples, steps))
    finally:
        print("\n" + model.STATS.summary())


def test_exactly_once_at_any_bank(connected):
    run_model(connected, EXAMPLES, STEPS)


# --- a test of the test: a fault planted in the portal makes the model fail -----------------------------------


def _reset_read_as_not_sent(monkeypatch):
    """xs2a's transport classification reads a reset (or timeout) after the request left as "never sent"."""
    import xs2a.core

    monkeypatch.setattr(xs2a.core, "was_not_sent", lambda exc: True)


def _edit_page_accepts_unknown_outcome(monkeypatch):
    from payments import views_initiation
    from payments.models import PaymentState

    editable = views_initiation.EDITABLE_STATES | {PaymentState.OUTCOME_UNKNOWN, PaymentState.UNCONFIRMED}
    monkeypatch.setattr(views_initiation, "EDITABLE_STATES", editable)


def _replay_allows_a_logical_duplicate(monkeypatch):
    """payment_reconcile's replay sends allowLogicalDuplicate=true (a bank taking the repeat for a new request
    then makes a second payment)."""
    from payments.services import initiation_call

    real = initiation_call.send

    def send(payment, psu, *, actor, replay=False):
        if replay:
            payment.allow_logical_duplicate = True
        return real(payment, psu, actor=actor, replay=False)

    monkeypatch.setattr(initiation_call, "send", send)


#: A planted fault, what the model's failure says, and the banks it is looked for at (a replay makes a second
#: payment only at the bank that takes a repeated X-Request-ID for a new request).
PLANTED = {
    "replay-allows-a-logical-duplicate": (
        _replay_allows_a_logical_duplicate,
        "the bank holds 2 payments",
        {"new"},
    ),
    "reset-read-as-not-sent": (_reset_read_as_not_sent, "the portal says", None),
    "edit-page-accepts-unknown-outcome": (
        _edit_page_accepts_unknown_outcome,
        "of unknown outcome: its edit page",
        None,
    ),
}


@pytest.mark.parametrize("fault", sorted(PLANTED))
def test_a_planted_fault_makes_the_model_fail(connected, monkeypatch, fault):
    plant, message, at = PLANTED[fault]
    plant(monkeypatch)
    model.ExactlyOnceMachine.banks = [bank for bank in connected if at is None or bank.profile.name in at]
    model.ExactlyOnceMachine.steps = STEPS
    quick = settings(
        model_settings(PLANTED_EXAMPLES, STEPS),
        report_multiple_bugs=False,
        phases=[Phase.explicit, Phase.generate],  # the first failure is enough: no shrinking
    )
    with pytest.raises(AssertionError, match=message):
        run_state_machine_as_test(model.ExactlyOnceMachine, settings=quick)
