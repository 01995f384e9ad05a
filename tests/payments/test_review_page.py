"""The form says from which amount a currency asks for reporting (rate, date, margin); the review page shows the
NOK equivalent with the same rate and date, the signed body readable and wrapped (and exactly the body sent), and
the recipient's address without empty parts (the payment's page too)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from decimal import Decimal
from html import unescape

import pytest
from django.utils import translation
from django.utils.formats import date_format

from payments.forms import CrossBorderPaymentForm
from payments.models import Payment, PaymentState
from payments.validators import oslo_today
from tests.payments.conftest import make_rate

pytestmark = pytest.mark.django_db

LONG_NAME = "Internationale Maschinenbau- und Anlagenbaugesellschaft Nordrhein mbH"  # 70 characters
RATE_DAY = oslo_today() - timedelta(days=8)


@pytest.fixture
def eur_eight_days_old(db):
    return make_rate("EUR", "11.50", on=RATE_DAY)


def typed_payment(**changes) -> dict[str, str]:
    data = {
        "debtor_account": "NO9386011117947",
        "debtor_account_currency": "NOK",
        "amount": "10",
        "currency": "EUR",
        "creditor_name": LONG_NAME,
        "creditor_account": "DE89370400440532013000",
        "creditor_city": "Berlin",
        "creditor_country": "DE",
    }
    data.update(changes)
    return data


def make_draft(client, **changes) -> Payment:
    response = client.post("/payments/new/", typed_payment(**changes))
    assert response.status_code == 302, response.context["form"].errors
    return Payment.objects.get(pk=int(response["Location"].strip("/").split("/")[1]))


def text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_ten_euros_with_an_old_rate_go_to_the_review_without_reporting(alice_client, eur_eight_days_old):
    payment = make_draft(alice_client)
    assert payment.state == PaymentState.DRAFT
    assert (payment.nok_equivalent, payment.nok_rate, payment.nok_rate_unit, payment.nok_rate_date) == (
        Decimal("115.00"),
        Decimal("11.50"),
        1,
        RATE_DAY,
    )
    assert "regulatoryReportingCode" not in json.loads(payment.body_json)
    page = text_of(alice_client.get(f"/payments/{payment.pk}/review/").content.decode())
    assert f"About, in NOK 115.00 NOK at 1 EUR = 11.50 NOK, Norges Bank's rate of {date_format(RATE_DAY)}" in page
    Payment.objects.filter(pk=payment.pk).update(state=PaymentState.AWAITING_STATUS)  # sent: its own page
    detail = text_of(alice_client.get(f"/payments/{payment.pk}/").content.decode())
    assert f"About in NOK 115.00 NOK at 1 EUR = 11.50 NOK, Norges Bank's rate of {date_format(RATE_DAY)}" in detail


def test_near_the_threshold_the_form_asks_and_says_which_rate_and_margin(alice_client, eur_eight_days_old):
    response = alice_client.post("/payments/new/", typed_payment(amount="8000"))  # 92 000 NOK
    assert response.status_code == 200 and not Payment.objects.exists()
    error = str(response.context["form"].errors["regulatory_reporting_code"][0])
    assert "about 92 000 NOK at 1 EUR = 11.50 NOK, Norges Bank's rate of" in error
    assert "we ask from 91 000 NOK (a margin of 9\xa0%" in error
    html = response.content.decode()
    help_text = re.search(r'id="id_regulatory_reporting_code_helptext">([^<]*)<', html).group(1)
    assert unescape(help_text).startswith(
        "Required from 7 914 EUR, about 91 000 NOK. We use 1 EUR = 11.50 NOK, Norges"
    )
    assert ", 8 days old. The bank converts at its own rate, so we ask from 9\xa0% below 100 000 NOK" in unescape(
        help_text
    )


def test_the_form_carries_each_currency_s_basis_for_its_script(alice_client, eur_eight_days_old):
    html = alice_client.get("/payments/new/").content.decode()
    texts = json.loads(
        re.search(r'<script id="reporting-help" type="application/json">(.*?)</script>', html).group(1)
    )
    assert texts["NOK"] == "Required for payments of 100 000 NOK or more."
    assert texts["EUR"].startswith("Required from 7 914 EUR, about 91 000 NOK.")
    assert "GHS" not in texts and texts["*"].startswith("Required for any amount in {currency}:")
    assert "js/payment_reporting.js" in html
    with translation.override("nb"):
        form = CrossBorderPaymentForm(today=oslo_today())
    assert form.reporting_help["EUR"].startswith(
        "Kreves fra 7 914 EUR, omtrent 91 000 NOK. Vi bruker 1 EUR = 11,50"
    )
    assert "8 dager gammel" in form.reporting_help["EUR"]


def test_the_review_shows_exactly_the_body_sent_readable_and_no_empty_address_parts(alice_client, eur_rate_today):
    payment = make_draft(alice_client)  # no street: the address is city and country only
    html = alice_client.get(f"/payments/{payment.pk}/review/").content.decode()
    shown = unescape(re.search(r'<pre class="payment-body-json">(.*?)</pre>', html, re.S).group(1))
    assert "\n" in shown and json.loads(shown) == json.loads(payment.body_json)
    assert list(json.loads(shown)) == list(json.loads(payment.body_json))  # the same fields, the same order
    assert json.dumps(json.loads(shown), ensure_ascii=False, separators=(",", ":")) == payment.body_json
    assert LONG_NAME in shown  # as itself, not escaped
    page = text_of(html)
    assert "Recipient's address Berlin, Germany" in page
    assert ", ," not in page and "address: ," not in page and "address ," not in page
    detail = text_of(alice_client.get(f"/payments/{payment.pk}/").content.decode())
    assert "Recipient's address Berlin, Germany" in detail


@pytest.mark.parametrize(
    ("parts", "shown"),
    [
        ({"creditor_street": "Unter den Linden", "creditor_building_number": "5"}, "Unter den Linden 5, Berlin"),
        ({"creditor_postal_code": "10117"}, "10117 Berlin, Germany"),
        ({"creditor_city": "", "creditor_street": "Hauptstr."}, "Hauptstr., Germany"),
        ({"creditor_city": ""}, "Recipient's address Germany"),
    ],
)
def test_every_address_shows_only_its_given_parts(alice_client, eur_rate_today, parts, shown):
    payment = make_draft(alice_client, **parts)
    page = text_of(alice_client.get(f"/payments/{payment.pk}/review/").content.decode())
    assert shown in page and ", ," not in page and " ," not in page


@pytest.fixture
def eur_rate_today(db):
    return make_rate("EUR", "11.50", on=oslo_today())
