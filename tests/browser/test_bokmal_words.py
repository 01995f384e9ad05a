"""No English on a bokmål page: the customer pages and the staff pages read at 390 px in bokmål, every visible
word checked against a list of English words that are not also Norwegian ones.

What a page may show in English is allowed by where it stands or by name: codes and identifiers (``<code>``,
``<pre>``, ``translate="no"``), the names of the product, the people and the companies in the data, and the
language switcher's "English". A screenshot of each page is kept (``words-NAME-nb-390.png``); the English words
found are reported for  pages together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts.models import BalanceSnapshot
from payments.models import PaymentState
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.staff.fixtures import bank_call

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

WIDTH, HEIGHT = 390, 844

#: English words that are not Norwegian words too (so "for", "at", "bank", "time", "all", "sent", "last", "type",
#: "filter" and "skip" are left out).
ENGLISH = set(
    """
    the and of not yet with your you this that these those are was were will would should could cannot can't don't
    please enter required field fields account accounts payment payments balance balances refresh refreshes
    available booked pending expected authorised consent consented consents connection connections connect
    disconnect sign signed password email address details detail show hide view select change add delete save
    search home dashboard calls call errors error duration customer customers new reset create sandbox
    clock batch batches name number amount yes none today tomorrow yesterday left next planned rule
    automatic unattended limit reached resume waiting final completed cancelled rejected refused
    certificate certificates valid until expires expired expiry days day hours hour only when where what who
    which there their they it's its into than then also less used use each every any from
    bank's payer creditor debtor reference message messages history overview settings language menu
    content help back cancel confirm submit approve review draft drafts edit export download log logs audit
    operation operations state states percentile rates exchange fee fees request requests answer
    answers link links marked reconnect reconnection reconnecting agreement agreements engagement
    engagements transaction transactions mock copy while away updates update shows how many
    welcome about administration site recent actions action group groups user users permissions staff
    superuser active first joined date since ago within without between after before again private corporate
    """.split()
)
#: Words of the data and the product shown as they are, in any language.
ALLOWED = {"fjordpay", "english", "brukskonto", "sparekonto"}
#: Names of several words that are the same in bokmål (a country of the payment form's list).
ALLOWED_NAMES = ("New Zealand",)
#: What a page shows as code or as it was sent: left out of the check.
VISIBLE_TEXT = """
() => {
  const skip = 'code, pre, kbd, samp, [translate="no"], script, style, noscript, template';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [document.title];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip)) continue;
    const style = getComputedStyle(parent);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    if (parent.closest('details:not([open])') && !parent.closest('summary')) continue;
    out.push(node.textContent);
  }
  for (const e of document.querySelectorAll('input[type=submit], input[type=button], [aria-label], [title]')) {
    if (e.closest(skip)) continue;
    out.push(e.value || '', e.getAttribute('aria-label') || '', e.getAttribute('title') || '');
  }
  return out.join('\\n');
}
"""


def english_words(text: str) -> list[str]:
    """The English words of ``text``; paths (/v1/accounts) and hyphenated codes (X-Request-ID) are not words."""
    for name in ALLOWED_NAMES:
        text = text.replace(name, "")
    text = re.sub(r"\S*/\S*", " ", text)
    words = [word for word in re.findall(r"[A-Za-z][A-Za-z'-]*", text) if "-" not in word]
    return sorted({word for word in words if word.lower() in ENGLISH and word.lower() not in ALLOWED})


def test_the_english_word_check_finds_english_and_passes_bokmal():
    found = english_words("Automatic refresh - Next: not planned yet - Left today 4 of 4 (the bank's rule)")
    assert found == sorted(
        ["Automatic", "refresh", "Next", "not", "planned", "yet", "Left", "today", "of", "the", "bank's", "rule"]
    )
    assert english_words("Automatiske oppdateringer · Neste oppdatering: ingen planlagt ennå · 4 av 4") == []
    assert english_words("Fjordpay · English · Brukskonto NO9386011100001 NOK") == []
    assert english_words("X-Request-ID · GET /v1/accounts · New Zealand") == []


@dataclass(frozen=True)
class Screen:
    name: str
    who: str  # "visitor", "customer" or "staff"
    path: str
    then: object = None  # what to do on the page before reading it (page)


def _empty_sign_up(page) -> None:
    page.locator("main form button[type=submit]").first.click()
    page.wait_for_load_state("load")
    assert page.locator(".field-error").count() == 3, "the empty sign-up showed no errors"


def _past_payment(page) -> None:
    page.locator("[name=amount]").fill("10")
    page.locator("[name=requested_execution_date]").fill((timezone.localdate() - timedelta(days=3)).isoformat())
    page.locator("main form[method=post] button[type=submit].button").last.click()
    page.wait_for_load_state("load")
    assert page.locator(".field-error").count() >= 2, "the payment form showed no errors"


def _screens(account_pk: int, payment_pk: int) -> list[Screen]:
    return [
        Screen("home", "visitor", "/"),
        Screen("sign-in", "visitor", "/auth/sign-in/"),
        Screen("sign-up-errors", "visitor", "/auth/sign-up/", then=_empty_sign_up),
        Screen("home-signed-in", "customer", "/"),
        Screen("accounts", "customer", "/bank/accounts/"),
        Screen("account", "customer", f"/bank/accounts/{account_pk}/"),
        Screen("connections", "customer", "/bank/connections/"),
        Screen("payments", "customer", "/payments/"),
        Screen("payment", "customer", f"/payments/{payment_pk}/"),
        Screen("payment-form-errors", "customer", "/payments/new/", then=_past_payment),
        Screen("my-account", "customer", "/account/"),
        Screen("admin", "staff", "/admin/"),
        Screen("admin-payments", "staff", "/admin/payments/payment/"),
        Screen("admin-audit-log", "staff", "/admin/tpp_portal/bankcall/"),
        Screen("admin-connections", "staff", "/admin/connections/bankconnection/"),
        Screen("admin-accounts", "staff", "/admin/accounts/bankaccount/"),
        Screen("staff-dashboard", "staff", "/staff/dashboard/"),
        Screen("sandbox-new-customer", "staff", "/staff/sandbox/customers/new/"),
        Screen("sandbox-reset", "staff", "/staff/sandbox/reset/"),
    ]


def _data(alice) -> tuple[int, int, object]:
    connection = BankConnectionFactory(user=alice)
    account = BankAccountFactory(connection=connection, name="Brukskonto")
    account.balances_refreshed_at = timezone.now()
    account.save()
    for n, code in enumerate(("openingBooked", "closingBooked", "interimBooked", "interimAvailable")):
        BalanceSnapshot.objects.create(
            account=account,
            balance_type=code,
            amount=Decimal(1000 + n),
            currency="NOK",
            fetched_at=account.balances_refreshed_at,
        )
    payment = PaymentFactory(
        user=alice,
        connection=connection,
        state=PaymentState.FINAL,
        transaction_status="ACSC",
        creditor_name="Bergen Utleie AS",
        final_at=timezone.now(),
    )
    for seen in ("RCVD", "ACSP", "ACSC"):
        status_event(payment, seen)
    bank_call(path="/v1/accounts", status=200, duration_ms=120)
    staff = get_user_model().objects.create_superuser("root@example.com", "root@example.com", "x" * 20)
    return account.pk, payment.pk, staff


def _session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


def test_no_english_on_the_bokmal_pages_at_390_px(browser, live_server, settings, alice, artifacts_dir):
    settings.BANK_IS_SANDBOX = True
    account_pk, payment_pk, staff = _data(alice)
    sessions = {"visitor": None, "customer": _session_of(alice), "staff": _session_of(staff)}
    context = browser.new_context(locale="nb-NO", viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    found = {}
    try:
        for screen in _screens(account_pk, payment_pk):
            context.clear_cookies()
            cookies = [{"url": live_server.url, "name": django_settings.LANGUAGE_COOKIE_NAME, "value": "nb"}]
            if sessions[screen.who]:
                cookies.append(
                    {
                        "url": live_server.url,
                        "name": django_settings.SESSION_COOKIE_NAME,
                        "value": sessions[screen.who],
                    }
                )
            context.add_cookies(cookies)
            response = page.goto(live_server.url + screen.path)
            assert response is not None and response.status == 200, (screen.name, response and response.status)
            if screen.then:
                screen.then(page)
            assert page.evaluate("document.documentElement.lang") == "nb", screen.name
            page.screenshot(path=artifacts_dir / f"words-{screen.name}-nb-{WIDTH}.png", full_page=True)
            words = english_words(page.evaluate(VISIBLE_TEXT))
            if words:
                found[screen.name] = words
    finally:
        context.close()
    assert not found, "English on bokmål pages:\n" + "\n".join(f"{name}: {words}" for name, words in found.items())
