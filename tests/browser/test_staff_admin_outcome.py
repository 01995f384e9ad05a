"""Staff in a real browser at 390 px and 1280 px, in English and bokmål (issue 31, item 2): a staff member who
signs in (password, then the authenticator app's code) lands on the staff dashboard; the admin's payment list
shows the bank's outcome (settled, rejected, cancelled, being processed, unknown) beside the portal's state,
filters by outcome, and the payment's page shows both. The unit-level checks are
tests/staff/test_admin_payment_outcome.py; the second factor's page of the sign-in is checked with axe here (the
page tour, tests/browser/test_tour.py, cannot reach it with a ready session)."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.utils import translation

from payments.models import PaymentState
from payments.status import OUTCOMES
from staff.admin.payments import STATE_LABELS
from tests.browser.axe import axe_all, describe
from tests.payments.payment_factories import PaymentFactory
from tests.second_factor import new_totp_secret, totp_code

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.real_second_factor,
]

WIDTHS = {390: 844, 1280: 800}
LANGUAGES = ("en", "nb")
PASSWORD = "a-long-test-password-31"

#: outcome -> (the payment's state, its bank status, creditor (to find its row))
PAYMENTS = {
    "settled": (PaymentState.FINAL, "ACSC", "Oppgjort Kreditor AS"),
    "rejected": (PaymentState.FINAL, "RJCT", "Avvist Kreditor AS"),
    "cancelled": (PaymentState.FINAL, "CANC", "Kansellert Kreditor AS"),
    "processing": (PaymentState.AWAITING_STATUS, "PDNG", "Behandles Kreditor AS"),
    "unknown": (PaymentState.OUTCOME_UNKNOWN, "", "Ukjent Kreditor AS"),
}


def _words(language: str) -> dict[str, str]:
    with translation.override(language):
        return {
            **{key: str(label) for key, (label, _tone) in OUTCOMES.items()},
            **{f"state:{key}": str(label) for key, label in STATE_LABELS.items()},
        }


def _sign_in(page, base: str, email: str, secret: str) -> None:
    """The staff member's sign-in as a person does it: the password, then the app's code."""
    page.goto(f"{base}/auth/sign-in/")
    page.locator("main input[name=login]").fill(email)
    page.locator("main input[name=password]").fill(PASSWORD)
    page.locator("main form[method=post] button[type=submit]").first.click()
    page.wait_for_url("**/auth/2fa/authenticate/")
    violations = describe(axe_all(page))
    assert violations == [], violations
    page.locator("main input[name=code]").fill(totp_code(secret))
    page.locator("main form[method=post] button[type=submit]").first.click()


def test_staff_land_on_the_dashboard_and_read_the_outcome_beside_the_state(browser, live_server, alice):
    from allauth.mfa.totp.internal.auth import TOTP
    from django.contrib.auth import get_user_model

    payments = {
        key: PaymentFactory(user=alice, state=state, transaction_status=status, creditor_name=name)
        for key, (state, status, name) in PAYMENTS.items()
    }
    english = _words("en")
    for language in LANGUAGES:
        words = _words(language)
        if language != "en":
            assert all(words[key] != english[key] for key in PAYMENTS), "the outcomes are not translated"
        for width, height in WIDTHS.items():
            # A staff member of their own per sign-in: each code of an app is taken once.
            email = f"staff-{language}-{width}@example.invalid"
            staff = get_user_model().objects.create_superuser(email, email, PASSWORD)
            secret = new_totp_secret()
            TOTP.activate(staff, secret)
            context = browser.new_context(
                locale={"en": "en-GB", "nb": "nb-NO"}[language], viewport={"width": width, "height": height}
            )
            context.add_cookies(
                [{"url": live_server.url, "name": django_settings.LANGUAGE_COOKIE_NAME, "value": language}]
            )
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            where = f"{language}-{width}"

            _sign_in(page, live_server.url, email, secret)
            page.wait_for_url(f"{live_server.url}/staff/dashboard/")
            assert page.evaluate("document.documentElement.lang") == language, where

            page.goto(f"{live_server.url}/admin/payments/payment/")
            for key, payment in payments.items():
                row = page.locator("#result_list tbody tr", has_text=payment.creditor_name)
                assert row.count() == 1, (where, key)
                assert row.locator("td.field-outcome_shown").inner_text().strip() == words[key], (where, key)
                state = row.locator("td.field-state_shown").inner_text().strip()
                assert state == words[f"state:{payment.state}"], (where, key, state)
                # The outcome stands right beside the portal's state.
                beside = row.locator("td.field-outcome_shown + td.field-state_shown")
                assert beside.count() == 1, (where, key)

            for key, payment in payments.items():
                page.goto(f"{live_server.url}/admin/payments/payment/")
                page.locator("#changelist-filter a", has_text=words[key]).first.click()
                page.wait_for_url(f"**outcome={key}**")
                rows = page.locator("#result_list tbody tr")
                assert rows.count() == 1, (where, key, rows.all_inner_texts())
                assert payment.creditor_name in rows.first.inner_text(), (where, key)
                rows.first.locator("th a, td a").first.click()
                page.wait_for_url(f"**/admin/payments/payment/{payment.pk}/change/**")
                outcome = page.locator(".field-outcome_shown .readonly").inner_text().strip()
                state = page.locator(".field-state_shown .readonly").inner_text().strip()
                assert (outcome, state) == (words[key], words[f"state:{payment.state}"]), (where, key)
            assert errors == [], (where, errors)
            context.close()
