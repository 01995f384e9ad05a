"""One intent, one payment; never a second payment beside one of unknown outcome (issue 28, items 3 and 4)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from payments.models import Payment, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import drafts, submission
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.test_initiation import _bank, _draft, _submit


@pytest.fixture
def connection(alice):
    connection = BankConnectionFactory(user=alice)
    BankAccountFactory(connection=connection, iban="NO9386011117947", currency="NOK")
    return connection


def _form(alice_client, url: str) -> dict:
    page = alice_client.get(url)
    assert page.status_code == 200
    return {"intent": str(page.context["intent"])}


def _typed(connection) -> dict:
    account = connection.accounts.first()
    return {
        "debtor_account": str(account.pk),
        "amount": "1200",
        "currency": "NOK",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": "DE89370400440532013000",
        "creditor_agent": "COBADEFFXXX",
        "creditor_country": "DE",
        "creditor_city": "Berlin",
        "remittance": "Invoice 1",
    }


def test_the_same_form_posted_twice_is_one_payment(alice_client, alice, connection):
    data = {**_form(alice_client, "/payments/new/"), **_typed(connection)}

    first = alice_client.post("/payments/new/", data)
    assert first.status_code == 302, first.context["form"].errors if first.context else first
    again = alice_client.post("/payments/new/", data)  # Back and submit, reload, a second tab

    assert Payment.objects.filter(user=alice).count() == 1
    payment = Payment.objects.get(user=alice)
    assert first["Location"] == again["Location"] == f"/payments/{payment.pk}/review/"


def test_a_form_posted_again_after_its_payment_was_sent_shows_that_payment(
    alice_client, alice, connection, fake_bank
):
    bank = _bank(fake_bank)
    data = {**_form(alice_client, "/payments/new/"), **_typed(connection)}
    alice_client.post("/payments/new/", data)
    payment = Payment.objects.get(user=alice)
    _submit(payment, alice)

    again = alice_client.post("/payments/new/", data, follow=True)

    assert Payment.objects.filter(user=alice).count() == 1 and len(bank.initiations) == 1
    assert again.redirect_chain[-1][0] == f"/payments/{payment.pk}/"
    assert "This form was sent already" in again.content.decode()


def test_an_edit_form_posted_again_shows_its_draft_when_the_edited_draft_is_gone(alice_client, alice, connection):
    """Found by the exactly-once model: the edit of a draft replaces (deletes) that draft, so the edit form posted
    again (Back, reload) used to answer 404 from the gone draft's address instead of showing the form's draft."""
    data = {**_form(alice_client, "/payments/new/"), **_typed(connection)}
    first = Payment.objects.get(pk=int(alice_client.post("/payments/new/", data)["Location"].split("/")[2]))
    edit_url = f"/payments/{first.pk}/edit/"
    edited = {**_form(alice_client, edit_url), **_typed(connection), "amount": "1300"}

    made = alice_client.post(edit_url, edited)
    again = alice_client.post(edit_url, edited)

    (draft,) = Payment.objects.filter(user=alice)
    assert draft.amount == Decimal("1300") and not Payment.objects.filter(pk=first.pk).exists()
    assert made["Location"] == again["Location"] == f"/payments/{draft.pk}/review/"


def test_each_showing_of_the_form_is_a_new_intent(alice_client, connection):
    assert _form(alice_client, "/payments/new/") != _form(alice_client, "/payments/new/")


def test_two_drafts_of_one_intent_cannot_be_made(alice, connection):
    import uuid

    from payments.instructions import AccountReference, PaymentInstruction

    intent = uuid.uuid4()
    instruction = PaymentInstruction(
        debtor_account=AccountReference(currency="NOK", iban="NO9386011117947"),
        amount=Decimal("1200"),
        currency="NOK",
        creditor_name="Müller Maschinenbau GmbH",
        creditor_account=AccountReference(currency="NOK", iban="DE89370400440532013000"),
    )
    made = dict(
        user=alice,
        product="norwegian-cross-border-credit-transfers",
        context="PRIVATE",
        connection=connection,
        instruction=instruction,
        form_data={},
        intent_key=intent,
    )
    first = drafts.payment_draft_create(**made)
    with pytest.raises(drafts.IntentAlreadySent) as again:
        drafts.payment_draft_create(**made)
    assert again.value.payment == first


@pytest.mark.parametrize(
    "state", [PaymentState.SUBMITTING, PaymentState.OUTCOME_UNKNOWN, PaymentState.UNCONFIRMED]
)
def test_a_payment_alike_is_not_sent_while_one_is_of_unknown_outcome(
    fake_bank, alice, alice_client, connection, state
):
    bank = _bank(fake_bank)
    unknown = _draft(alice, connection, reference="FPUNKNOWN1")
    Payment.objects.filter(pk=unknown.pk).update(state=state)
    other = _draft(alice, connection, reference="FPOTHER001")

    with pytest.raises(submission.PaymentNotSubmittable) as refused:
        _submit(other, alice)
    assert refused.value.blocking == unknown and "never paid twice" in refused.value.message
    page = alice_client.get(f"/payments/{other.pk}/review/")
    assert page.status_code == 409 and "never paid twice" in page.content.decode()
    assert f"/payments/{unknown.pk}/reconcile/" in page.content.decode()
    assert bank.initiations == []
    # Another amount is another payment: not held back.
    different = _draft(alice, connection, amount=Decimal("150000.01"))
    assert _submit(different, alice).payment.state == PaymentState.INITIATED


@pytest.mark.parametrize("state", [PaymentState.FOUND, PaymentState.NOT_AT_BANK, PaymentState.FINAL])
def test_a_settled_payment_alike_holds_nothing_back(fake_bank, alice, connection, state):
    _bank(fake_bank)
    Payment.objects.filter(pk=_draft(alice, connection).pk).update(state=state)

    assert _submit(_draft(alice, connection), alice).payment.state == PaymentState.INITIATED


def test_a_duplicate_refusal_while_the_earlier_is_unknown_is_evidence_the_bank_holds_it(
    fake_bank, alice, connection
):
    """The bank refuses a payment alike as a logical duplicate while the user's earlier one is of unknown outcome
    (here: the earlier one became unknown while the second was on its way): the earlier one gets the note that
    the bank holds it, not approved; nothing is sent for it."""
    bank = _bank(fake_bank)
    earlier = _draft(alice, connection)
    second = _draft(alice, connection)

    def refuse_while_earlier_unknown(received):
        Payment.objects.filter(pk=earlier.pk).update(state=PaymentState.OUTCOME_UNKNOWN)
        return bankfake.refusal(409, ("CONFLICT", "allowLogicalDuplicate", "Logical duplicate"))

    bank.failures.append(refuse_while_earlier_unknown)
    outcome = _submit(second, alice)

    assert outcome.payment.state == PaymentState.REFUSED
    assert "the bank has this payment, not approved" in outcome.errors[0]
    note = PaymentEvent.objects.get(payment=earlier, kind=PaymentEventKind.NOTE)
    assert "Approve or cancel it at the bank" in note.detail
    assert len(bank.initiations) == 1


def test_pay_it_again_is_offered_only_when_every_payment_alike_is_final_and_names_it(
    fake_bank, alice, alice_client, connection
):
    _bank(fake_bank)
    open_one = _draft(alice, connection, reference="FPOPEN0001")
    Payment.objects.filter(pk=open_one.pk).update(state=PaymentState.AWAITING_STATUS, transaction_status="ACTC")
    refused = _draft(alice, connection)
    Payment.objects.filter(pk=refused.pk).update(
        state=PaymentState.REFUSED,
        tpp_messages=[{"category": "ERROR", "code": "CONFLICT", "path": "allowLogicalDuplicate", "text": "dup"}],
    )

    page = alice_client.get(f"/payments/{refused.pk}/edit/")
    assert not page.context["offer_duplicate"] and page.context["alike_open"] == open_one
    assert 'name="allow_logical_duplicate"' not in page.content.decode()
    assert f"/payments/{open_one.pk}/" in page.content.decode()

    Payment.objects.filter(pk=open_one.pk).update(state=PaymentState.FINAL, transaction_status="ACSC")
    page = alice_client.get(f"/payments/{refused.pk}/edit/")
    assert page.context["offer_duplicate"] and page.context["duplicates"] == open_one
    assert "FPOPEN0001" in page.content.decode() and 'name="allow_logical_duplicate"' in page.content.decode()


def test_the_checking_page_checks_by_itself_only_inside_the_replay_window(
    alice, alice_client, connection, settings
):
    from datetime import timedelta

    from django.utils import timezone

    payment = _draft(alice, connection)
    now = timezone.now()
    Payment.objects.filter(pk=payment.pk).update(state=PaymentState.OUTCOME_UNKNOWN, submitted_at=now)

    page = alice_client.get(f"/payments/{payment.pk}/reconcile/").content.decode()
    assert 'data-check-after="0"' in page and "js/payment_reconcile.js" in page

    Payment.objects.filter(pk=payment.pk).update(replay_not_before=now + timedelta(seconds=30))
    later = alice_client.get(f"/payments/{payment.pk}/reconcile/")
    assert 25 < later.context["check_after"] <= 31

    Payment.objects.filter(pk=payment.pk).update(
        submitted_at=now - settings.PAYMENT_REPLAY_WINDOW - timedelta(seconds=1)
    )
    past = alice_client.get(f"/payments/{payment.pk}/reconcile/").content.decode()
    assert "data-check-after" not in past
