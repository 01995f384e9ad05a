"""The admin tells staff what the bank made of a payment: its outcome beside the portal's state, in the list and
on the payment's page, in English and bokmål, and a filter by outcome. A payment the bank rejected or cancelled
never reads "Completed" ("Fullført"): support must not tell a customer it went through."""

from __future__ import annotations

import pytest
from django.urls import reverse

from payments.models import PaymentState
from tests.payments.payment_factories import PaymentFactory

pytestmark = pytest.mark.django_db

PAYMENTS = reverse("admin:payments_payment_changelist")
WORDS = {
    "en": {"completed": "Completed", "rejected": "Rejected", "cancelled": "Cancelled", "outcome": "Outcome"},
    "nb": {"completed": "Fullført", "rejected": "Avvist", "cancelled": "Kansellert", "outcome": "Utfall"},
}


def page(client, url, language, **params):
    client.cookies["django_language"] = language
    response = client.get(url, params, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


@pytest.fixture
def ended(alice):
    return {
        "rejected": PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="RJCT"),
        "cancelled": PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="CANC"),
    }


@pytest.mark.parametrize("language", ["en", "nb"])
def test_rejected_and_cancelled_never_read_completed_in_the_list(support_client, ended, language):
    words = WORDS[language]
    html = page(support_client, PAYMENTS, language)
    assert words["completed"] not in html
    assert words["outcome"] in html  # the column and the filter
    cells = {
        name: page(support_client, PAYMENTS, language, q=payment.payment_id) for name, payment in ended.items()
    }
    assert f'<td class="field-outcome_shown">{words["rejected"]}</td>' in cells["rejected"]
    assert f'<td class="field-outcome_shown">{words["cancelled"]}</td>' in cells["cancelled"]


@pytest.mark.parametrize("language", ["en", "nb"])
@pytest.mark.parametrize("name", ["rejected", "cancelled"])
def test_rejected_and_cancelled_never_read_completed_on_their_page(support_client, ended, language, name):
    words = WORDS[language]
    url = reverse("admin:payments_payment_change", args=[ended[name].pk])
    html = page(support_client, url, language)
    assert words["completed"] not in html
    assert words[name] in html
    assert ended[name].transaction_status in html  # the bank's code stays beside it


def test_a_settled_payment_reads_settled(support_client, alice):
    payment = PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="ACSC")
    html = page(support_client, reverse("admin:payments_payment_change", args=[payment.pk]), "nb")
    assert "Oppgjort" in html


def test_the_filter_by_outcome_lists_exactly_its_payments(support_client, alice, ended):
    settled = PaymentFactory(user=alice, state=PaymentState.FINAL, transaction_status="ACCC")
    processing = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="PDNG")
    unknown = PaymentFactory(user=alice, state=PaymentState.OUTCOME_UNKNOWN, transaction_status="")
    unconfirmed = PaymentFactory(user=alice, state=PaymentState.UNCONFIRMED, transaction_status="")
    refused = PaymentFactory(user=alice, state=PaymentState.REFUSED, payment_id="", transaction_status="")
    draft = PaymentFactory(user=alice, state=PaymentState.DRAFT, payment_id="", transaction_status="")

    def only(outcome: str) -> set[int]:
        response = support_client.get(PAYMENTS, {"outcome": outcome})
        assert response.status_code == 200
        return {p.pk for p in response.context["cl"].result_list}

    assert only("settled") == {settled.pk}
    assert only("rejected") == {ended["rejected"].pk}
    assert only("cancelled") == {ended["cancelled"].pk}
    assert only("processing") == {processing.pk}
    assert only("unknown") == {unknown.pk, unconfirmed.pk}
    assert only("never_at_bank") == {refused.pk}
    assert only("not_sent") == {draft.pk}


def test_the_state_filter_keeps_the_dashboards_links(support_client, alice, ended):
    waiting = PaymentFactory(user=alice, state=PaymentState.AWAITING_STATUS, transaction_status="PDNG")
    response = support_client.get(PAYMENTS, {"state__exact": PaymentState.AWAITING_STATUS})
    assert [p.pk for p in response.context["cl"].result_list] == [waiting.pk]


def test_the_csv_export_names_the_outcome(operator_client, ended):
    response = operator_client.post(
        PAYMENTS, {"action": "export_csv", "_selected_action": [p.pk for p in ended.values()]}
    )
    text = b"".join(response.streaming_content).decode()
    assert "outcome" in text.splitlines()[0]
    assert "Rejected" in text and "Cancelled" in text and "Completed" not in text
