"""The admin of payments: list, filters and search, the status timeline and signatures on the page, nothing secret
shown, "Poll the bank's status now" through the real client with the bank's answer or error text, and the roles."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse
from django.utils import timezone

from core.models import BankCall
from payments.models import PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from tests.bankfake import Answer
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.staff.fixtures import PSU_ID

pytestmark = pytest.mark.django_db

PAYMENTS = reverse("admin:payments_payment_changelist")
PRODUCT = "norwegian-cross-border-credit-transfers"


def listed(response) -> list:
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def poll(client, *payments):
    response = client.post(
        PAYMENTS, {"action": "poll_status_now", "_selected_action": [p.pk for p in payments]}, follow=True
    )
    assert response.status_code == 200
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def test_list_filters_and_search(support_client, alice, bob):
    waiting = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="PDNG")
    done = PaymentFactory(
        user=bob, state=PaymentState.FINAL, transaction_status="ACSC", creditor_name="Fjordkraft AS"
    )
    draft = PaymentFactory(user=alice, state=PaymentState.DRAFT, payment_id="", transaction_status="")

    def only(**params) -> set[int]:
        return {p.pk for p in listed(support_client.get(PAYMENTS, params))}

    assert only(waiting="yes") == {waiting.pk}
    assert only(waiting="no") == {done.pk, draft.pk}
    assert only(state__exact=PaymentState.FINAL) == {done.pk}
    assert only(transaction_status__exact="PDNG") == {waiting.pk}
    assert only(q=waiting.payment_id) == {waiting.pk}
    assert only(q=str(done.request_id)) == {done.pk}  # the X-Request-ID of the initiation
    assert only(q=str(draft.idempotency_key)) == {draft.pk}
    assert only(q=str(uuid.uuid4())) == set()
    assert only(q="Fjordkraft") == {done.pk}
    assert only(q="bob@example.com") == {done.pk}


def test_the_page_shows_the_timeline_and_signatures_and_nothing_secret(support_client, alice, bob):
    payment = PaymentFactory(
        user=alice,
        state=PaymentState.AWAITING_STATUS,
        tpp_session_id="session-token-that-must-stay-hidden-0123456789",
        psu_identity=PSU_ID,
        links={"status": {"href": f"/v1/payments/{PRODUCT}/secret-link-id/status"}},
    )
    status_event(payment, "RCVD", at=timezone.now() - timedelta(minutes=5))
    PaymentEvent.objects.create(payment=payment, kind=PaymentEventKind.BANK_ERROR, detail="The bank is busy.")
    status_event(payment, "PATC")
    PaymentAuthorisation.objects.create(payment=payment, signer=alice, completed_at=timezone.now())
    PaymentAuthorisation.objects.create(
        payment=payment, signer=bob, failed_at=timezone.now(), failure="SCA failed"
    )

    response = support_client.get(reverse("admin:payments_payment_change", args=[payment.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    timeline = html.index("RCVD"), html.index("The bank is busy."), html.index("PATC")
    assert list(timeline) == sorted(timeline)  # in time order
    assert "alice@example.com" in html and "bob@example.com" in html and "SCA failed" in html
    for secret in (PSU_ID, "session-token-that-must-stay-hidden", "secret-link-id"):
        assert secret not in html
    assert "status" in html  # the link's name is shown, not its address
    assert "150\xa0000.00 NOK" in html and "50.00 NOK" in html  # amounts in the currency's minor units
    assert not response.context["has_change_permission"]


def test_an_operator_polls_the_status_now_and_the_call_is_audited(
    own_seal_bank_settings, fake_bank, operator_client, operator, alice
):
    payment = PaymentFactory(user=alice, payment_id="pay-0001", state=PaymentState.AUTHORISING)
    fake_bank.add("GET", f"/v1/payments/{PRODUCT}/pay-0001/status", Answer(200, {"transactionStatus": "ACSC"}))

    shown = poll(operator_client, payment)

    assert shown == [("success", f"Payment #{payment.pk}: bank status changed to ACSC.")]
    payment.refresh_from_db()
    assert (payment.transaction_status, payment.state) == ("ACSC", PaymentState.FINAL)
    entry = LogEntry.objects.get()
    assert (entry.user, entry.action_flag, entry.object_id) == (operator, CHANGE, str(payment.pk))
    call = BankCall.objects.get()
    assert call.user == operator and call.status == 200
    assert (call.content_type, call.object_id) == (ContentType.objects.get_for_model(payment), str(payment.pk))


def test_the_banks_error_text_is_shown(own_seal_bank_settings, fake_bank, operator_client, alice):
    payment = PaymentFactory(user=alice, payment_id="pay-0002", state=PaymentState.AWAITING_STATUS)
    fake_bank.add(
        "GET",
        f"/v1/payments/{PRODUCT}/pay-0002/status",
        Answer(
            404,
            {"tppMessages": [{"category": "ERROR", "code": "RESOURCE_UNKNOWN", "text": "Payment not found here"}]},
        ),
    )

    ((level, message),) = poll(operator_client, payment)

    assert level == "error" and "Payment not found here" in message
    assert not LogEntry.objects.exists()
    assert BankCall.objects.get().tpp_message_codes == ["RESOURCE_UNKNOWN"]


def test_a_final_payment_is_not_polled(own_seal_bank_settings, fake_bank, operator_client, alice):
    payment = PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="ACSC")
    ((level, message),) = poll(operator_client, payment)
    assert level == "success" and "nothing to check" in message.lower()
    assert fake_bank.received == []


def test_support_can_read_but_not_poll_or_change(own_seal_bank_settings, fake_bank, support_client, alice):
    payment = PaymentFactory(user=alice, payment_id="pay-0003")
    listing = support_client.get(PAYMENTS).content.decode()
    assert "poll_status_now" not in listing
    support_client.post(PAYMENTS, {"action": "poll_status_now", "_selected_action": [payment.pk]})
    assert fake_bank.received == [] and not BankCall.objects.exists()
    change_url = reverse("admin:payments_payment_change", args=[payment.pk])
    assert support_client.post(change_url, {"creditor_name": "Someone else"}).status_code == 403
    assert support_client.get(reverse("admin:payments_payment_add")).status_code == 403
    assert (
        support_client.post(
            reverse("admin:payments_payment_delete", args=[payment.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    payment.refresh_from_db()
    assert payment.creditor_name == "Müller Maschinenbau GmbH"


def test_csv_export_of_payments_keeps_amounts_exact(operator_client, alice):
    payment = PaymentFactory(user=alice, creditor_name="@Evil", amount="1234.50")
    response = operator_client.post(PAYMENTS, {"action": "export_csv", "_selected_action": [payment.pk]})
    text = b"".join(response.streaming_content).decode()
    assert "1234.50 NOK" in text  # exact, in the currency's minor units
    assert ",'@Evil," in text


def test_customers_are_refused(client, alice):
    client.force_login(alice)
    response = client.get(PAYMENTS)
    assert response.status_code == 403 and "Location" not in response  # refused where asked
