"""What became of a payment, for staff (payments.status.payment_outcome): the bank's final status decides, the
portal's state otherwise; the filter of the ORM (outcome_query) follows the same rule for every pair."""

from __future__ import annotations

import itertools

import pytest
from django.utils import translation

from payments.models import Payment, PaymentState
from payments.status import OUTCOMES, outcome_query, payment_outcome
from tests.payments.payment_factories import PaymentFactory

S = PaymentState
CODES = ("", "RCVD", "PATC", "PDNG", "ACTC", "ACCP", "ACSP", "ACSC", "ACCC", "RJCT", "CANC", "XXXX")


@pytest.mark.parametrize(
    ("state", "code", "outcome"),
    [
        (S.FINAL, "ACSC", "settled"),
        (S.FINAL, "ACCC", "settled"),
        (S.FINAL, "RJCT", "rejected"),
        (S.FINAL, "CANC", "cancelled"),
        (S.AUTHORISING, "RJCT", "rejected"),  # the bank's final word decides whatever the state
        (S.AWAITING_STATUS, "PDNG", "processing"),
        (S.AWAITING_STATUS, "XXXX", "processing"),  # a code the portal does not know is not final
        (S.INITIATED, "RCVD", "processing"),
        (S.AUTHORISING, "PATC", "processing"),
        (S.OUTCOME_UNKNOWN, "", "unknown"),
        (S.UNCONFIRMED, "", "unknown"),
        (S.SUBMITTING, "", "unknown"),
        (S.FINAL, "ACSP", "unknown"),  # FINAL without a final status: nobody should call it settled
        (S.FOUND, "", "at_bank"),
        (S.NOT_AT_BANK, "", "never_at_bank"),
        (S.REFUSED, "", "never_at_bank"),
        (S.DRAFT, "", "not_sent"),
    ],
)
def test_each_outcome(state, code, outcome):
    payment = Payment(state=state, transaction_status=code)
    result = payment_outcome(payment)
    assert result.key == outcome
    assert (result.label, result.tone) == (str(OUTCOMES[outcome][0]), OUTCOMES[outcome][1])


def test_rejected_and_cancelled_never_read_completed_in_either_language():
    for code, language in itertools.product(("RJCT", "CANC"), ("en", "nb")):
        with translation.override(language):
            label = payment_outcome(Payment(state=S.FINAL, transaction_status=code)).label
        assert label not in ("Completed", "Fullført", "Settled", "Oppgjort"), (code, language)


@pytest.mark.parametrize(
    ("key", "nb"),
    [
        ("settled", "Oppgjort"),
        ("rejected", "Avvist"),
        ("cancelled", "Kansellert"),
        ("processing", "Under behandling"),
        ("unknown", "Ukjent - sjekk med banken"),
        ("at_bank", "I banken, uten endelig status"),
        ("never_at_bank", "Aldri i banken: ingen penger ble flyttet"),
        ("not_sent", "Ikke sendt ennå"),
    ],
)
def test_every_outcome_reads_in_bokmal(key, nb):
    with translation.override("nb"):
        assert str(OUTCOMES[key][0]) == nb


@pytest.mark.django_db
def test_the_filter_agrees_with_the_function_for_every_state_and_status():
    payments = [
        PaymentFactory(state=state, transaction_status=code) for state, code in itertools.product(S.values, CODES)
    ]
    expected = {key: set() for key in OUTCOMES}
    for payment in payments:
        expected[payment_outcome(payment).key].add(payment.pk)
    for key in OUTCOMES:
        assert set(Payment.objects.filter(outcome_query(key)).values_list("pk", flat=True)) == expected[key], key
    assert all(expected.values())  # every outcome is reached by some pair


def test_an_unknown_outcome_is_no_filter():
    with pytest.raises(ValueError):
        outcome_query("completed")
