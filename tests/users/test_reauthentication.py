"""require_recent_authentication: the password again before a payment, unless typed within REAUTH_MAX_AGE."""

import pytest
from django.test import RequestFactory
from django.urls import reverse

from users import security

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.users.urls")]
PAY = "/test/pay/"
REAUTH = reverse("reauthenticate", urlconf="tests.users.urls")


@pytest.fixture
def signed_in(client, alice, clock):
    client.force_login(alice)
    return client


def keep_active(client, clock, minutes):
    """Stay active (a request every 4 minutes) while the re-authentication ages."""
    for _ in range(minutes // 4):
        clock.advance(minutes=4)
        client.get(reverse("home"))


def test_a_fresh_sign_in_counts_as_recent(signed_in):
    assert signed_in.get(PAY).content == b"payment GET"


def test_after_the_max_age_the_password_is_asked_and_the_user_comes_back(signed_in, clock, password):
    keep_active(signed_in, clock, 8)
    response = signed_in.post(PAY)
    assert response.status_code == 302
    assert response["Location"] == f"{REAUTH}?next=%2Ftest%2Fpay%2F"

    page = signed_in.get(response["Location"])
    assert page.status_code == 200
    assert 'value="/test/pay/"' in page.content.decode()

    done = signed_in.post(REAUTH, {"password": password, "next": PAY})
    assert done["Location"] == PAY
    assert signed_in.post(PAY).content == b"payment POST"


def test_a_wrong_password_is_an_error_next_to_the_field(signed_in, clock, alice):
    keep_active(signed_in, clock, 8)
    response = signed_in.post(REAUTH, {"password": "not-it", "next": PAY})
    assert response.status_code == 200
    assert "Incorrect password." in response.content.decode()
    assert 'id="id_password_error"' in response.content.decode()
    assert signed_in.get(PAY).status_code == 302


def test_guessing_the_password_again_is_locked_out(signed_in, clock, password):
    keep_active(signed_in, clock, 8)
    statuses = [signed_in.post(REAUTH, {"password": f"guess-{n}", "next": PAY}).status_code for n in range(5)]
    assert statuses == [200] * 5
    assert signed_in.post(REAUTH, {"password": password, "next": PAY}).status_code == 429
    assert signed_in.get(PAY).status_code == 302


def test_next_outside_the_portal_is_ignored(signed_in, password):
    response = signed_in.post(REAUTH, {"password": password, "next": "https://evil.example/pay"})
    assert response["Location"] == reverse("account")


def test_a_stricter_max_age_per_view(signed_in, clock):
    clock.advance(seconds=61)
    assert signed_in.get("/test/pay-strict/").status_code == 302
    assert signed_in.get(PAY).status_code == 200


def test_the_payment_page_is_also_subject_to_the_idle_timeout(signed_in, clock):
    clock.advance(minutes=6)
    assert signed_in.get(PAY)["Location"].startswith(reverse("login"))


def test_anonymous_visitors_are_sent_to_sign_in(client):
    assert client.get(PAY)["Location"].startswith(reverse("login"))


def test_helpers_for_the_payments_code(signed_in, clock, settings, alice):
    request = RequestFactory().post(PAY)
    request.user = alice
    request.session = signed_in.session
    assert security.is_recently_authenticated(request)
    assert security.ensure_recent_authentication(request) is None

    settings.REAUTH_MAX_AGE = 30
    clock.advance(seconds=31)
    assert not security.is_recently_authenticated(request)
    assert security.is_recently_authenticated(request, max_age=60)
    response = security.ensure_recent_authentication(request, next_url="/payments/7/confirm/")
    assert response["Location"] == f"{REAUTH}?next=%2Fpayments%2F7%2Fconfirm%2F"

    security.session_mark_reauthenticated(request)
    assert security.is_recently_authenticated(request)
    security.session_forget_reauthentication(request)
    assert not security.is_recently_authenticated(request)


def test_the_right_password_forgets_earlier_failures(signed_in, clock, password, alice):
    keep_active(signed_in, clock, 8)
    for n in range(4):
        assert signed_in.post(REAUTH, {"password": f"typo-{n}", "next": PAY}).status_code == 200
    assert signed_in.post(REAUTH, {"password": password, "next": PAY})["Location"] == PAY
    # Four more typos are not the fifth to ninth failure: no lockout.
    for n in range(4):
        assert signed_in.post(REAUTH, {"password": f"typo-again-{n}", "next": PAY}).status_code == 200
    assert signed_in.post(REAUTH, {"password": password, "next": PAY})["Location"] == PAY
