"""KID (the customer reference of a Norwegian invoice) on domestic payments: checked by its MOD10 or MOD11 check
digit with a clear error beside the field, sent as remittanceInformationStructuredArray [{reference, referenceType
KID}], shown on the review page, and received by the sandbox bank (which refuses a biller's payment without it)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from html import unescape

import pytest
from django.core.exceptions import ValidationError

from accounts.models import BankAccount
from payments.forms import DomesticPaymentForm
from payments.instructions import AccountReference, PaymentInstruction, validate_instruction
from payments.models import Payment, PaymentState
from payments.services.submission import bank_errors_by_field
from tests.live_bank import live_bank, live_bank_server, portal_connect  # noqa: F401 - the fixtures
from tests.payments.conftest import TODAY
from users.security import REAUTHENTICATED_KEY

MOD10_KID = "20261145"  # Luhn
MOD11_KID = "12345678903"  # weights 2-7 from the right
MOD11_DASH_KID = "000006-"  # MOD11 gives 10: written "-"
BILLER = "15030000002"  # the sandbox's biller that collects by KID (bank_simulator.pis.tables)


def domestic(**changes) -> DomesticPaymentForm:
    data = {
        "debtor_account": "NO9386011117947",
        "debtor_account_currency": "NOK",
        "amount": "1249",
        "creditor_name": "Fjordkraft AS",
        "creditor_account": BILLER,
    }
    data.update(changes)
    return DomesticPaymentForm(data, today=TODAY)


@pytest.mark.parametrize("typed", [MOD10_KID, MOD11_KID, "2026 1145", " 1234 5678 903 ", MOD11_DASH_KID])
def test_a_valid_kid_is_sent_as_the_bank_s_structured_reference(typed):
    form = domestic(kid=typed)
    assert form.is_valid(), form.errors
    compact = "".join(typed.split())
    assert form.instruction().kid == compact
    body = json.loads(form.bank_body_json())
    assert body["remittanceInformationStructuredArray"] == [{"reference": compact, "referenceType": "KID"}]


def test_no_kid_sends_no_structured_reference():
    form = domestic()
    assert form.is_valid(), form.errors
    assert "remittanceInformationStructuredArray" not in form.bank_body()


@pytest.mark.parametrize(
    ("typed", "code", "words"),
    [
        ("20261146", "kid_check_digit", "its last digit does not match the others"),
        ("12345678904", "kid_check_digit", "its last digit does not match the others"),
        ("1", "kid_format", "2 to 25 digits"),
        ("KID2026114", "kid_format", "without letters"),
        ("1" * 26, "kid_format", "2 to 25 digits"),
        ("000007-", "kid_check_digit", "does not match"),  # "-" only where MOD11 gives 10
    ],
)
def test_a_bad_kid_is_refused_beside_the_field(typed, code, words):
    form = domestic(kid=typed)
    assert not form.is_valid()
    assert list(form.errors) == ["kid"]
    (error,) = form.errors.as_data()["kid"]
    assert error.code == code and words in str(error.message)


def test_services_check_the_kid_too():
    instruction = PaymentInstruction(
        debtor_account=AccountReference(currency="NOK", iban="NO9386011117947"),
        amount=Decimal("10"),
        currency="NOK",
        creditor_name="Fjordkraft AS",
        creditor_account=AccountReference(currency="NOK", bban=BILLER),
        kid="20261146",
    )
    with pytest.raises(ValidationError) as raised:
        validate_instruction(instruction, today=TODAY)
    assert "kid" in raised.value.message_dict


def test_the_bank_s_kid_errors_stand_beside_the_field_in_plain_words():
    by_field, general = bank_errors_by_field(
        [
            {
                "category": "ERROR",
                "code": "KID_MISSING",
                "path": "remittanceInformationStructuredArray",
                "text": "x",
            },
            {
                "category": "ERROR",
                "code": "KID_INVALID",
                "path": "remittanceInformationStructuredArray[0].reference",
                "text": "y",
            },
        ]
    )
    assert general == []
    assert by_field["kid"] == [
        "The recipient asks for a KID with every payment: enter the KID from the invoice.",
        "The bank did not accept this KID: check it against the invoice.",
    ]


@pytest.mark.django_db
def test_the_review_page_shows_the_kid(alice_client):
    response = alice_client.post(
        "/payments/new/domestic/",
        {
            "debtor_account": "NO9386011117947",
            "amount": "1249",
            "creditor_name": "Fjordkraft AS",
            "creditor_account": BILLER,
            "kid": "2026 1145",
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    payment = Payment.objects.get()
    assert json.loads(payment.body_json)["remittanceInformationStructuredArray"][0]["reference"] == MOD10_KID
    page = " ".join(
        unescape(
            re.sub(r"<[^>]+>", " ", alice_client.get(f"/payments/{payment.pk}/review/").content.decode())
        ).split()
    )
    assert f"KID (customer reference) {MOD10_KID}" in page


@pytest.mark.django_db
def test_the_form_shows_the_kid_error_next_to_the_field(alice_client):
    response = alice_client.post(
        "/payments/new/domestic/",
        {
            "debtor_account": "NO9386011117947",
            "amount": "10",
            "creditor_name": "X",
            "creditor_account": BILLER,
            "kid": "20261146",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200 and not Payment.objects.exists()
    error = r'id="id_kid_error"[^>]*>(<span class="visually-hidden">Error: </span>)?This KID is not valid'
    assert re.search(error, html)
    assert 'value="20261146"' in html  # nothing typed is lost


@pytest.mark.live_bank
def test_the_sandbox_bank_receives_the_kid(live_bank, alice_client, alice):  # noqa: F811
    portal_connect(alice_client)
    account = BankAccount.objects.get(connection__user=alice, name="Brukskonto")
    data = {
        "debtor_account": str(account.pk),
        "amount": "1249",
        "creditor_name": "Fjordkraft AS",
        "creditor_account": BILLER,
    }

    def send(form_data, url="/payments/new/domestic/"):
        drafted = alice_client.post(url, form_data)
        assert drafted.status_code == 302, drafted.context["form"].errors
        payment = Payment.objects.get(pk=int(drafted["Location"].strip("/").split("/")[1]))
        sent = alice_client.post(
            f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)}
        )
        payment.refresh_from_db()
        return payment, sent

    # Without the KID the biller's payment is refused by the bank (KID_MISSING): the form says so at the field.
    refused, sent = send(data)
    assert refused.state == PaymentState.REFUSED, refused.tpp_messages
    assert refused.tpp_messages[0]["code"] == "KID_MISSING", refused.tpp_messages
    assert sent["Location"] == f"/payments/{refused.pk}/edit/"
    edit = alice_client.get(sent["Location"])
    assert "The recipient asks for a KID" in " ".join(str(e) for e in edit.context["form"].errors["kid"])

    # With it, the bank accepts the payment: it received the KID. (The password was typed just now again.)
    session = alice_client.session
    session[REAUTHENTICATED_KEY] = datetime.now(UTC).isoformat()
    session.save()
    accepted, sent = send({**data, "kid": MOD10_KID}, url=f"/payments/{refused.pk}/edit/")
    assert accepted.state == PaymentState.AUTHORISING and accepted.payment_id, accepted.tpp_messages
    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
