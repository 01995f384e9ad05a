"""The payment page's script follows the viewer's turn to sign without a reload (payment_live.js): a co-signer
who signs in another tab sees the "Sign at the bank" button give way on the page left open."""

import pytest
from django.urls import reverse
from django.utils import timezone

from payments.models import PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from tests.browser.problems import portal_problems
from tests.payments.test_multisign import corporate_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

TIMEOUT = 15_000  # the script reads the status after 2 s, then every 3 s, 4.5 s, ...


def test_the_sign_button_goes_when_the_viewer_signs_elsewhere(
    page, live_server, artifacts_dir, alice, bob, password
):
    payment = corporate_pair(alice, bob, transaction_status="PATC", state=PaymentState.AWAITING_STATUS)
    problems = portal_problems(page, live_server.url)
    page.goto(f"{live_server.url}{reverse('login')}?next={reverse('payment-detail', args=[payment.pk])}")
    page.get_by_label("E-mail address or username").fill(bob.email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("#payment-patc")
    page.evaluate("window.__sameDocument = true")
    sign = page.get_by_role("button", name="Sign at the bank")
    assert sign.is_visible()

    # bob signs in another tab: the bank confirmed his signature
    now = timezone.now()
    PaymentAuthorisation.objects.create(payment=payment, signer=bob, completed_at=now)
    PaymentEvent.objects.create(payment=payment, at=now, kind=PaymentEventKind.SIGNATURE, actor=bob)

    sign.wait_for(state="hidden", timeout=TIMEOUT)
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
    assert "bob@example.com" in page.locator("#payment-signature-list").inner_text()
    page.screenshot(path=artifacts_dir / "payment-live-signed-elsewhere.png", full_page=True)
    assert problems == []
