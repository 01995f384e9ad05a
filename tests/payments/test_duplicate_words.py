"""The edit page of a payment the bank refused as a logical duplicate says so in the portal's words (the payment
alike to follow, or the "pay it again" box), not in the bank's, which name its request field and its payment
id ("send allowLogicalDuplicate=true ..."). Found by the browser journey of a lost answer
(tests/browser/test_lost_answer_journey.py, same mode)."""

from __future__ import annotations

from payments.models import Payment, PaymentState
from tests.payments.test_initiation import _draft
from tests.payments.test_one_intent import connection  # noqa: F401 - a fixture

BANK_TEXT = "A logical duplicate was received as payment enc!!x=; send allowLogicalDuplicate=true to make it."


def _refused_as_duplicate(alice, connection, *others: dict) -> Payment:  # noqa: F811
    refused = _draft(alice, connection)
    Payment.objects.filter(pk=refused.pk).update(
        state=PaymentState.REFUSED,
        tpp_messages=[
            {"category": "ERROR", "code": "CONFLICT", "path": "allowLogicalDuplicate", "text": BANK_TEXT},
            *others,
        ],
    )
    return refused


def test_a_duplicate_refusal_is_said_in_the_portals_words(alice, alice_client, connection):  # noqa: F811
    open_one = _draft(alice, connection)
    Payment.objects.filter(pk=open_one.pk).update(state=PaymentState.AWAITING_STATUS, transaction_status="PDNG")
    refused = _refused_as_duplicate(alice, connection)

    page = alice_client.get(f"/payments/{refused.pk}/edit/").content.decode()

    assert "allowLogicalDuplicate" not in page and "enc!!x=" not in page
    assert "The bank sees this as the same payment" in page


def test_the_banks_other_texts_are_still_shown(alice, alice_client, connection):  # noqa: F811
    other = {"category": "ERROR", "code": "FORMAT_ERROR", "path": "", "text": "Something else is wrong."}
    refused = _refused_as_duplicate(alice, connection, other)

    page = alice_client.get(f"/payments/{refused.pk}/edit/").content.decode()

    assert "Something else is wrong." in page and "allowLogicalDuplicate" not in page
    assert 'name="allow_logical_duplicate"' in page  # nothing alike is open: "pay it again" is offered
