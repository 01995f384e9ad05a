"""The staff queue: payments the portal could not settle by itself, settled by staff with the bank; and a KID
payment found in its account by KID, amount and date."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

from django.utils import timezone

from accounts.models import Transaction
from payments.models import Payment, PaymentEventKind, PaymentState
from payments.services import reconciliation
from payments.services.staff import payment_staff_settle
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.payment_factories import PaymentFactory


def _unconfirmed(user, **fields) -> Payment:
    return PaymentFactory(
        user=user,
        state=PaymentState.UNCONFIRMED,
        submitted_at=timezone.now(),
        staff_flagged_at=timezone.now(),
        staff_reason="lost answer",
        **{"payment_id": "", "transaction_status": "", **fields},
    )


def test_staff_settle_an_unconfirmed_payment_either_way(alice, admin_user):
    there, not_there = _unconfirmed(alice), _unconfirmed(alice)

    assert payment_staff_settle(payment_id=there.pk, staff_user=admin_user, at_bank=True)
    assert payment_staff_settle(payment_id=not_there.pk, staff_user=admin_user, at_bank=False)
    assert not payment_staff_settle(payment_id=there.pk, staff_user=admin_user, at_bank=False)  # once

    there.refresh_from_db()
    not_there.refresh_from_db()
    assert (there.state, there.staff_flagged_at) == (PaymentState.FOUND, None)
    assert (not_there.state, not_there.staff_flagged_at) == (PaymentState.NOT_AT_BANK, None)
    assert there.events.filter(kind=PaymentEventKind.STAFF_RESOLVED, actor=admin_user).count() == 1


def test_the_admin_queue_lists_the_flagged_and_its_actions_settle_them(alice, admin_client):
    flagged = _unconfirmed(alice)
    PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS)

    page = admin_client.get("/admin/payments/payment/?staff=yes")
    assert page.status_code == 200
    assert list(page.context["cl"].queryset) == [flagged]

    done = admin_client.post(
        "/admin/payments/payment/",
        {"action": "settle_not_at_bank", "_selected_action": [flagged.pk]},
        follow=True,
    )
    assert done.status_code == 200
    flagged.refresh_from_db()
    assert flagged.state == PaymentState.NOT_AT_BANK
    assert list(admin_client.get("/admin/payments/payment/?staff=yes").context["cl"].queryset) == []


def test_a_kid_payment_is_found_by_its_kid_amount_and_date(alice):
    connection = BankConnectionFactory(user=alice)
    debtor = BankAccountFactory(connection=connection, bban="12345678903", iban="")
    body = {"remittanceInformationStructuredArray": [{"reference": "1234567890128", "referenceType": "KID"}]}
    payment = _unconfirmed(
        alice,
        body_json=json.dumps(body),
        reference="",
        amount=Decimal("1250.00"),
        currency="NOK",
        debtor_account="12345678903",
    )

    def debit(kid: str, amount: str) -> None:
        Transaction.objects.create(
            account=debtor,
            transaction_id=f"tx-{uuid.uuid4()}",
            status="booked",
            booking_date=timezone.localdate(),
            amount=Decimal(amount),
            currency="NOK",
            kid=kid,
            fingerprint=uuid.uuid4().hex,
            first_seen_at=timezone.now(),
            updated_at=timezone.now(),
        )

    debit("1234567890128", "-1250.01")  # another amount
    debit("9999999999999", "-1250.00")  # another KID
    assert not reconciliation.unconfirmed_find(payment_id=payment.pk)

    debit("1234567890128", "-1250.00")
    assert reconciliation.unconfirmed_find(payment_id=payment.pk)
    payment.refresh_from_db()
    assert payment.state == PaymentState.FOUND and payment.staff_flagged_at is None


#: The bank's payment, as staff attach an unconfirmed one to it (GET /v1/payments/{product}/{paymentId}).
PAYMENT = "/v1/payments/{product}/{paymentId}"


def _details(payment: Payment, *, amount: str | None = None, status: str = "RCVD") -> dict:
    body = json.loads(payment.body_json)
    body["instructedAmount"] = {"amount": amount or str(payment.amount), "currency": payment.currency}
    body["debtorAccount"] = {"iban": payment.debtor_account}
    body["creditorAccount"] = {"iban": payment.creditor_account}
    body.setdefault("creditorName", payment.creditor_name)
    body["remittanceInformationUnstructured"] = f"{payment.reference} Invoice"
    return {
        **body,
        "paymentId": "bank-pay-1",
        "transactionStatus": status,
        "_links": {"startAuthorisation": {"href": "/v1/payments/p/bank-pay-1/authorisations"}},
    }


def test_staff_attach_an_unconfirmed_payment_the_bank_confirms(alice, admin_user, fake_bank):
    from payments.services import staff

    payment = _unconfirmed(alice, reference="FPATTACH01", debtor_account="NO9386011117947")
    fake_bank.add("GET", PAYMENT, _details(payment))

    outcome = staff.payment_staff_attach(
        payment_id=payment.pk, staff_user=admin_user, bank_payment_id="bank-pay-1"
    )

    assert outcome.ok, outcome.message
    payment.refresh_from_db()
    assert (payment.state, payment.payment_id, payment.transaction_status) == (
        PaymentState.INITIATED,
        "bank-pay-1",
        "RCVD",
    )
    assert payment.staff_flagged_at is None and "startAuthorisation" in payment.links
    assert [r.path for r in fake_bank.received] == [f"/v1/payments/{payment.product}/bank-pay-1"]


def test_staff_cannot_attach_a_payment_the_bank_does_not_confirm(alice, admin_user, fake_bank):
    from payments.services import staff

    payment = _unconfirmed(alice, reference="FPATTACH02", debtor_account="NO9386011117947")
    # x: the bank's payment is for another amount; y: the bank knows no such payment
    fake_bank.add("GET", PAYMENT, _details(payment, amount="1.00"), bankfake.error(404, "RESOURCE_UNKNOWN"))
    assert not staff.payment_staff_attach(payment_id=payment.pk, staff_user=admin_user, bank_payment_id="x").ok
    assert not staff.payment_staff_attach(payment_id=payment.pk, staff_user=admin_user, bank_payment_id="y").ok

    payment.refresh_from_db()
    assert payment.state == PaymentState.UNCONFIRMED and payment.payment_id == ""
    assert [r.path.rsplit("/", 1)[1] for r in fake_bank.received] == ["x", "y"]


def test_the_admin_attach_action_asks_for_the_payment_id_then_attaches(alice, admin_client, fake_bank):
    payment = _unconfirmed(alice, reference="FPATTACH03", debtor_account="NO9386011117947")
    fake_bank.add("GET", PAYMENT, _details(payment))
    selected = {"action": "attach_bank_payment", "_selected_action": [payment.pk]}

    asked = admin_client.post("/admin/payments/payment/", selected)
    assert asked.status_code == 200 and b"The bank's paymentId" in asked.content
    done = admin_client.post(
        "/admin/payments/payment/", {**selected, "apply": "Attach", "bank_payment_id": "bank-pay-1"}, follow=True
    )

    assert done.status_code == 200
    payment.refresh_from_db()
    assert payment.state == PaymentState.INITIATED and payment.payment_id == "bank-pay-1"
