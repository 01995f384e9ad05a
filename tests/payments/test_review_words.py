"""The review page in plain words (issue 31): the tax authority's code and the purpose by their names, the account
paid from with its name, account numbers grouped for reading (the body sent stays compact), the body's data only
behind a "Details" disclosure, and the reporting codes' options without their name twice in bokmål."""

from __future__ import annotations

import json
import re

import pytest
from django.utils import translation

from payments.forms_fields import regulatory_code_choices
from payments.spec import REGULATORY_CODE_NORWEGIAN_NAMES, purpose_code_name, regulatory_code_name
from payments.templatetags.payment_format import account_number
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.test_initiation import _draft
from tests.payments.test_review_page import text_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def connection(alice):
    return BankConnectionFactory(user=alice)


def _review(client, payment, language: str = "en") -> str:
    client.cookies["django_language"] = language
    response = client.get(f"/payments/{payment.pk}/review/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 200
    return response.content.decode()


def _outside_details(html: str) -> str:
    return re.sub(r'<details class="payment-body">.*?</details>', "", html, flags=re.S)


def test_codes_by_name_account_named_numbers_grouped(alice_client, alice, connection, fake_bank):
    BankAccountFactory(connection=connection, iban="NO9386011117947", name="Driftskonto")
    payment = _draft(alice, connection)
    body = json.loads(payment.body_json)
    body.update(purposeCode="SUPP", requestedExecutionDate="2026-03-05")
    payment.body_json = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    payment.save(update_fields=["body_json"])

    html = _review(alice_client, payment)
    page = text_of(_outside_details(html))

    assert "Payment type code 29 - Other purchase or sale of services" in page
    assert "Purpose Supplier payment (SUPP)" in page
    assert "From Driftskonto NO93 8601 1117 947 (NOK)" in page
    assert "Recipient's account DE89 3704 0044 0532 0130 00" in page
    assert "Execution date 5 Mar 2026" in page
    assert "2026-03-05" not in page and '"creditorAccount"' not in html.replace("&quot;", '"').split("<details")[0]
    details = re.search(r'<details class="payment-body">.*?</details>', html, re.S).group(0)
    assert "<summary>Details: the data the bank receives</summary>" in details
    assert "DE89370400440532013000" in details  # the data as sent: compact


def test_the_review_in_bokmaal_names_the_code_once(alice_client, alice, connection):
    payment = _draft(alice, connection)

    page = text_of(_outside_details(_review(alice_client, payment, "nb")))

    assert "29 - Annet kjøp/salg av tjenester" in page and "(Annet kjøp/salg av tjenester)" not in page


def test_without_a_consent_the_account_is_its_number_alone(alice_client, alice, connection):
    payment = _draft(alice, connection)
    page = text_of(_outside_details(_review(alice_client, payment)))
    assert "From NO93 8601 1117 947 (NOK)" in page


def test_reporting_options_never_say_their_name_twice():
    for language in ("en", "nb"):
        with translation.override(language):
            options = [option for _group, grouped in regulatory_code_choices()[1:] for option in grouped]
        for code, label in options:
            norwegian = REGULATORY_CODE_NORWEGIAN_NAMES[code]
            assert not (language == "nb" and label.endswith(f"({norwegian})")), label
            assert label.startswith(f"{code} - ") and label.count(f"{norwegian} ({norwegian})") == 0, label
        labels = [label for _code, label in options]
        if language == "nb":
            assert "14 - Kjøp/salg av varer" in labels
        else:
            assert "14 - Purchase or sale of goods (Kjøp/salg av varer)" in labels


def test_code_names():
    assert regulatory_code_name("29") == "29 - Other purchase or sale of services"
    assert regulatory_code_name("99") == "99"
    assert purpose_code_name("SALA") == "Salary (SALA)" and purpose_code_name("XXXX") == "XXXX"


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        ("NO9386011117947", "NO93 8601 1117 947"),
        ("DE89370400440532013000", "DE89 3704 0044 0532 0130 00"),
        ("86011117947", "8601 11 17947"),
        ("123456", "123456"),
        ("", ""),
        (None, ""),
    ],
)
def test_account_numbers_are_grouped_for_reading(number, shown):
    assert account_number(number) == shown
