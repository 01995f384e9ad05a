"""The payment page: the 404 matrix, the timeline with time and plain-words meaning, fees, bank messages,
insufficient funds, the JSON status behind the live updates, and "check now"."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from payments.models import PaymentEvent, PaymentEventKind, PaymentState
from tests import bankfake
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.payments.test_polling import answers, status_reads

# (method, url name, the owner's expected status)
ID_PAGES = [
    ("get", "payment-detail", 200),
    ("get", "payment-status-json", 200),
    ("post", "payment-check", 302),
    ("get", "payment-cancel", 200),
    ("post", "payment-cancel", 302),
    ("post", "payment-sign", 302),
]


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield
    cache.clear()


def _url(name: str, pk: int) -> str:
    return reverse(name, args=[pk])


@pytest.mark.parametrize(("method", "name", "expected"), ID_PAGES)
@pytest.mark.parametrize("stranger", ["bob", "charlie"])
def test_anyone_else_gets_404_and_no_bank_call(request, alice, fake_bank, method, name, expected, stranger):
    payment = PaymentFactory(user=alice)
    browser = Client()
    browser.force_login(request.getfixturevalue(stranger))

    response = getattr(browser, method)(_url(name, payment.pk))

    assert response.status_code == 404
    assert fake_bank.received == [] and not PaymentEvent.objects.exists()


@pytest.mark.parametrize(("method", "name", "expected"), ID_PAGES)
def test_anonymous_is_sent_to_sign_in(client, alice, fake_bank, method, name, expected):
    payment = PaymentFactory(user=alice)

    response = getattr(client, method)(_url(name, payment.pk))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert fake_bank.received == []


@pytest.mark.parametrize(("method", "name", "expected"), [p for p in ID_PAGES if p[1] != "payment-sign"])
def test_owner_gets_the_page(alice_client, alice, fake_bank, method, name, expected):
    answers(fake_bank, "PDNG")
    fake_bank.add("DELETE", "/v1/payments/{product}/{paymentId}", bankfake.Answer(204))  # cancelled
    payment = PaymentFactory(user=alice)

    response = getattr(alice_client, method)(_url(name, payment.pk))

    assert response.status_code == expected
    assert "no-cache" in response.get("Cache-Control", "") or "no-store" in response.get("Cache-Control", "")


def test_unknown_id_is_404(alice_client):
    assert alice_client.get("/payments/999999/").status_code == 404


def test_the_page_shows_amount_fee_status_meaning_and_the_timeline(alice_client, alice):
    payment = PaymentFactory(
        user=alice,
        transaction_status="ACSP",
        state=PaymentState.AWAITING_STATUS,
        fee_amount=Decimal("50.00"),
        tpp_messages=[{"category": "WARNING", "code": "X", "text": "Cut-off time passed: executed tomorrow"}],
    )
    base = timezone.now() - timedelta(hours=3)
    PaymentEvent.objects.create(payment=payment, at=base, kind=PaymentEventKind.SUBMITTED)
    status_event(payment, "RCVD", at=base + timedelta(seconds=1))
    status_event(payment, "PDNG", at=base + timedelta(minutes=2))
    status_event(payment, "ACSP", at=base + timedelta(hours=2))

    page = alice_client.get(_url("payment-detail", payment.pk)).content.decode()

    assert "150\xa0000,00 NOK" in page or "150,000.00 NOK" in page
    assert "50.00 NOK" in page or "50,00 NOK" in page
    # The bank's own words (in its language, with its codes) are kept for support under Details, not in the page.
    start = page.index('<details class="technical-details">')
    details = page[start : page.index("</details>", start)]
    assert "Cut-off time passed: executed tomorrow" in details
    assert page.count("Cut-off time passed") == 1
    for label, meaning in [
        ("Received", "The bank has received the payment."),
        ("Pending", "waits for the bank&#x27;s next processing run"),
        ("Being settled", "settlement is in process"),
    ]:
        assert label in page and meaning in page
    timeline = page[page.index('id="payment-timeline"') :]
    assert timeline.index("Received") < timeline.index("Pending") < timeline.index("Being settled")
    assert timeline.count("<time datetime=") == 4
    assert 'data-live="true"' in page and "js/payment_live.js" in page


def test_accp_without_funds_is_shown_as_insufficient_funds(alice_client, alice):
    payment = PaymentFactory(
        user=alice, transaction_status="ACCP", funds_available=False, state=PaymentState.AWAITING_STATUS
    )
    status_event(payment, "ACCP", funds_available=False)

    page = alice_client.get(_url("payment-detail", payment.pk)).content.decode()
    data = alice_client.get(_url("payment-status-json", payment.pk)).json()

    assert "Insufficient funds" in page
    assert 'id="payment-insufficient-funds" class="message message-warning">' in page  # not hidden
    assert data["insufficientFunds"] is True and data["statusLabel"] == "Insufficient funds"
    assert data["timeline"][0]["statusLabel"] == "Insufficient funds"


def test_accp_with_funds_is_not_called_insufficient(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="ACCP", funds_available=True)

    data = alice_client.get(_url("payment-status-json", payment.pk)).json()

    assert data["insufficientFunds"] is False and data["statusLabel"] == "Accepted"


def test_the_json_status_carries_what_the_page_redraws(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="ACSC", state=PaymentState.FINAL)
    status_event(payment, "ACSC")

    data = alice_client.get(_url("payment-status-json", payment.pk)).json()

    assert data["transactionStatus"] == "ACSC" and data["final"] is True and data["live"] is False
    assert data["statusMeaning"] == "The payment is settled: the money has left your account."
    assert data["canCancel"] is False
    assert [e["status"] for e in data["timeline"]] == ["ACSC"]


def test_check_now_reads_the_bank_once_and_then_waits(alice_client, alice, fake_bank):
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice)

    first = alice_client.post(_url("payment-check", payment.pk), follow=True)
    second = alice_client.post(_url("payment-check", payment.pk), follow=True)

    assert len(status_reads(fake_bank)) == 1
    assert "The status is up to date." in first.content.decode()
    assert "checked a moment ago" in second.content.decode()
    payment.refresh_from_db()
    assert payment.transaction_status == "PDNG"


def test_check_now_shows_the_banks_text_on_an_error(alice_client, alice, fake_bank):
    answers(fake_bank, bankfake.error(503, "X", "Vedlikehold"))
    payment = PaymentFactory(user=alice)

    response = alice_client.post(_url("payment-check", payment.pk), follow=True)

    assert "Vedlikehold" in response.content.decode()


def test_check_now_answers_json_to_the_script(alice_client, alice, fake_bank):
    answers(fake_bank, "PDNG")
    payment = PaymentFactory(user=alice)

    response = alice_client.post(_url("payment-check", payment.pk), HTTP_ACCEPT="application/json")

    assert response.status_code == 200 and response.json()["transactionStatus"] == "PDNG"


def test_the_static_script_exists_and_uses_no_inline_code():
    from django.contrib.staticfiles import finders

    path = finders.find("js/payment_live.js")
    assert path
    text = open(path, encoding="utf-8").read()
    assert "data-status-url" in text and "innerHTML" not in text and "eval(" not in text


def _last_activity(client, seconds_ago: int) -> str:
    from datetime import UTC, datetime

    from users.security import LAST_ACTIVITY_KEY

    stamp = (datetime.now(UTC) - timedelta(seconds=seconds_ago)).isoformat()
    session = client.session
    session[LAST_ACTIVITY_KEY] = stamp
    session.save()
    return stamp


def test_the_pages_background_refresh_does_not_keep_the_session_alive(alice_client, alice, settings):
    from users.security import BACKGROUND_HEADER, LAST_ACTIVITY_KEY

    payment = PaymentFactory(user=alice)
    stamp = _last_activity(alice_client, 60)

    background = alice_client.get(_url("payment-status-json", payment.pk), headers={BACKGROUND_HEADER: "1"})
    assert background.status_code == 200
    assert alice_client.session[LAST_ACTIVITY_KEY] == stamp  # not the user's activity

    alice_client.get(_url("payment-detail", payment.pk))  # the user's own request is
    assert alice_client.session[LAST_ACTIVITY_KEY] != stamp


def test_an_idle_session_is_signed_out_by_the_background_refresh(alice_client, alice, settings):
    from users.security import BACKGROUND_HEADER

    payment = PaymentFactory(user=alice)
    _last_activity(alice_client, settings.SENSITIVE_IDLE_TIMEOUT + 5)

    response = alice_client.get(_url("payment-status-json", payment.pk), headers={BACKGROUND_HEADER: "1"})

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert "_auth_user_id" not in alice_client.session


def test_text_from_the_user_and_the_bank_is_escaped_on_the_page_and_the_list(alice_client, alice):
    evil = '<img src=x onerror="alert(1)">'
    payment = PaymentFactory(
        user=alice,
        creditor_name=evil[:70],
        psu_message=evil,
        tpp_messages=[{"category": "WARNING", "code": "X", "path": "", "text": evil}],
    )
    PaymentEvent.objects.create(payment=payment, at=timezone.now(), kind=PaymentEventKind.BANK_ERROR, detail=evil)

    page = alice_client.get(reverse("payment-detail", args=[payment.pk])).content.decode()
    listing = alice_client.get(reverse("payment-list")).content.decode()

    for html in (page, listing):
        assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def _outside_details(page: str) -> str:
    """The page without its "Details" disclosures (codes and ids for support live there)."""
    import re

    return re.sub(r'<details class="technical-details">.*?</details>', "", page, flags=re.S)


def test_status_codes_are_only_under_details(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="PDNG", state=PaymentState.AWAITING_STATUS)
    status_event(payment, "RCVD")
    status_event(payment, "PDNG")

    page = alice_client.get(_url("payment-detail", payment.pk)).content.decode()
    data = alice_client.get(_url("payment-status-json", payment.pk)).json()

    visible = _outside_details(page)
    assert "Received" in visible and "Pending" in visible
    for code in ("RCVD", "PDNG", payment.payment_id):
        assert code not in visible.replace('data-status="PDNG"', ""), code
    assert "<summary>Details</summary>" in page
    assert '<code id="payment-status-code">PDNG</code>' in page
    assert f'<code class="technical-id">{payment.payment_id}</code>' in page
    assert data["transactionStatus"] == "PDNG"  # the script keeps the code under Details current


@pytest.mark.parametrize(("code", "label"), [("CANC", "Cancelled"), ("RJCT", "Rejected")])
def test_a_payment_not_carried_out_reads_so_without_a_fee(alice_client, alice, code, label):
    payment = PaymentFactory(user=alice, transaction_status=code, state=PaymentState.FINAL)
    status_event(payment, code)

    page = alice_client.get(_url("payment-detail", payment.pk)).content.decode()
    data = alice_client.get(_url("payment-status-json", payment.pk)).json()

    assert f">{label}</span>" in page
    assert "Completed" not in page  # not "Cancelled · Completed"
    assert 'id="payment-state-label" class="help" hidden></span>' in page
    assert "50.00 NOK" not in page
    assert '<dd id="payment-fee">No fee: the payment was not carried out.</dd>' in page
    assert data["stateLabel"] == "" and data["fee"] == "No fee: the payment was not carried out."


def test_a_settled_payment_shows_its_fee_and_no_second_label(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="ACSC", state=PaymentState.FINAL)

    page = alice_client.get(_url("payment-detail", payment.pk)).content.decode()

    assert '<dd id="payment-fee">50.00 NOK</dd>' in page
    assert page.count("Completed") == 1  # the bank's status; the portal's "Completed" state is not repeated


def test_the_state_is_shown_beside_the_status_when_it_adds_something(alice_client, alice):
    payment = PaymentFactory(user=alice, transaction_status="RCVD", state=PaymentState.AUTHORISING)

    data = alice_client.get(_url("payment-status-json", payment.pk)).json()

    assert data["statusLabel"] == "Received" and data["stateLabel"] == "Being approved at the bank"


def test_a_cancelled_approval_says_what_happened_with_the_codes_under_details(alice, alice_client, fake_bank):
    import hashlib

    from core.bank import CALLBACK_PATH
    from payments.models import PaymentAuthorisation
    from tests.bank_factories import BankConnectionFactory, ScaStateFactory

    connection = BankConnectionFactory(user=alice)
    payment = PaymentFactory(user=alice, connection=connection, transaction_status="RCVD")
    key_hash = hashlib.sha256(alice_client.session.session_key.encode()).hexdigest()
    state = ScaStateFactory(user=alice, session_key_hash=key_hash, purpose="payment", connection=connection)
    PaymentAuthorisation.objects.create(payment=payment, signer=alice, sca_state=state, started_at=timezone.now())
    answers(fake_bank, "RCVD")  # the callback reads the status: still waiting for the approval

    page = alice_client.get(
        CALLBACK_PATH,
        {"system": "SANDBOX-SCA", "status": "401", "code": "SCA_INVALID", "message": "The PSU cancelled."},
    ).content.decode()

    visible = _outside_details(page)
    assert "The approval at the bank was stopped before it was completed." in visible
    assert "Approve at the bank again" in visible
    for technical in ("SCA_INVALID", "401", "RCVD", "SANDBOX-SCA", "The PSU cancelled", "PSU"):
        assert technical not in visible, technical
    assert "<dt>Code</dt><dd><code>SCA_INVALID</code></dd>" in page
    assert "<dt>Status code at the bank</dt><dd><code>RCVD</code></dd>" in page


def _rejected(alice, **fields):
    return PaymentFactory(user=alice, transaction_status="RJCT", state=PaymentState.FINAL, **fields)


@pytest.mark.parametrize("language", ["en", "nb"])
def test_a_rejected_payment_says_why_on_its_final_page(alice_client, alice, language):
    no_money = _rejected(alice)
    status_event(no_money, "ACCP", funds_available=False)
    status_event(no_money, "RJCT")
    said = _rejected(alice, psu_message="Creditor account closed")
    told = _rejected(alice, tpp_messages=[{"category": "ERROR", "code": "PAYMENT_FAILED", "text": "Blocked"}])
    silent = _rejected(alice)
    status_event(silent, "RJCT")
    expected = {
        "en": {
            no_money: "The account did not have enough money for the payment and its fee. No money was moved.",
            said: "No money was moved. The bank says: Creditor account closed",
            told: "No money was moved. The bank says: Blocked",
            silent: "No money was moved. The bank gave no reason; your bank can tell you more.",
        },
        "nb": {
            no_money: "Kontoen hadde ikke nok penger til betalingen og gebyret.",
            said: "Ingen penger ble flyttet. Banken sier: Creditor account closed",
            told: "Ingen penger ble flyttet. Banken sier: Blocked",
            silent: "Ingen penger ble flyttet. Banken oppga ingen grunn; banken din kan fortelle deg mer.",
        },
    }[language]

    for payment, reason in expected.items():
        headers = {"HTTP_ACCEPT_LANGUAGE": language}
        alice_client.cookies["django_language"] = language
        page = alice_client.get(_url("payment-detail", payment.pk), **headers).content.decode()
        data = alice_client.get(_url("payment-status-json", payment.pk), **headers).json()
        marked = page.split('id="payment-status-meaning">', 1)[1].split("</p>", 1)[0]
        meaning = re.sub(r"<[^>]+>", "", marked)
        assert reason in meaning, (payment.psu_message, meaning)
        assert reason in data["statusMeaning"]
        # The bank's own words are quoted as it sent them, marked not to be translated (the page's only).
        bank_words = {said: "Creditor account closed", told: "Blocked"}.get(payment)
        if bank_words:
            assert f'<span translate="no">{bank_words}</span>' in marked, marked
        assert "The bank has rejected the payment" not in meaning
        assert data["psuMessage"] == ""  # the reason already carries the bank's words: not said twice
        assert 'id="payment-psu-message" class="message" hidden>' in page
