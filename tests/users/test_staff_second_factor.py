"""Staff sign in with a second factor (allauth.mfa): an authenticator app (TOTP) or a security key, with recovery
codes. Without one, a staff user is sent to enrol before anything else; with one, the sign-in asks for it, and a
session that skipped it is signed out."""

from __future__ import annotations

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value, yield_hotp_counters_from_time
from django.urls import reverse

from tests.factories import DEFAULT_PASSWORD
from tests.users.helpers import sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.real_second_factor]
STAFF_PAGES = ["/admin/", "/staff/dashboard/", "/staff/sandbox/", "/"]


def totp(secret: str) -> str:
    return format_hotp_value(hotp_value(secret, next(yield_hotp_counters_from_time())))


@pytest.fixture
def staff(django_user_model, password):
    return django_user_model.objects.create_user(
        "staff@example.com", "staff@example.com", password, is_staff=True, is_superuser=True
    )


def enrol(client, password=DEFAULT_PASSWORD) -> str:
    """Set up an authenticator app through allauth's page (after the password again, which allauth asks before
    any change of factors); returns its secret."""
    page = client.get(reverse("mfa_activate_totp"))
    if page.status_code == 302:
        assert page["Location"].startswith(reverse("account_reauthenticate"))
        again = client.post(page["Location"], {"password": password})
        assert again["Location"] == reverse("mfa_activate_totp")
        page = client.get(reverse("mfa_activate_totp"))
    assert page.status_code == 200
    secret = client.session["mfa.totp.secret"]
    response = client.post(reverse("mfa_activate_totp"), {"code": totp(secret)})
    assert response.status_code == 302, response.content.decode()[:2000]
    return secret


def test_enrolling_in_a_browser_asks_for_the_password_once_and_comes_back(client, staff, password):
    """As a browser follows the links: allauth asks for the password again before a change of factors even just
    after signing in; the password page must show (not send the browser straight back: a redirect loop), and the
    password brings the browser back to the app's page."""
    sign_in(client, staff.email, password)
    page = client.get(reverse("mfa_index"))
    assert reverse("mfa_activate_totp") in page.content.decode()
    asked = client.get(reverse("mfa_activate_totp"))
    assert asked.status_code == 302 and asked["Location"].startswith(reverse("account_reauthenticate"))
    again = client.get(asked["Location"])
    assert again.status_code == 200, again.get("Location")
    back = client.post(asked["Location"], {"password": password})
    assert back["Location"] == reverse("mfa_activate_totp")
    assert client.get(back["Location"]).status_code == 200


@pytest.mark.parametrize("path", STAFF_PAGES)
def test_staff_without_a_second_factor_are_sent_to_enrol_first(client, staff, password, path):
    assert sign_in(client, staff.email, password).status_code == 302
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == reverse("mfa_index")
    assert "Staff accounts need a second factor" in client.get(response["Location"]).content.decode()


def test_enrolling_an_authenticator_app_opens_the_staff_pages_and_makes_recovery_codes(client, staff, password):
    sign_in(client, staff.email, password)
    enrol(client)
    assert Authenticator.objects.filter(user=staff, type=Authenticator.Type.TOTP).exists()
    assert Authenticator.objects.filter(user=staff, type=Authenticator.Type.RECOVERY_CODES).exists()
    assert client.get("/admin/").status_code == 200
    assert client.get("/staff/dashboard/").status_code == 200


def test_the_next_sign_in_asks_for_the_code(client, staff, password):
    sign_in(client, staff.email, password)
    secret = enrol(client)
    client.post(reverse("account_logout"))

    response = sign_in(client, staff.email, password, query="?next=/admin/")
    assert response["Location"] == reverse("mfa_authenticate")
    assert "_auth_user_id" not in client.session  # the password alone signs nobody in
    assert client.post(reverse("mfa_authenticate"), {"code": "000000"}).status_code == 200
    done = client.post(reverse("mfa_authenticate"), {"code": totp(secret)})
    assert done["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_recovery_code_signs_in_instead_of_the_app(client, staff, password):
    sign_in(client, staff.email, password)
    enrol(client)
    codes = Authenticator.objects.get(user=staff, type=Authenticator.Type.RECOVERY_CODES).wrap().get_unused_codes()
    client.post(reverse("account_logout"))
    sign_in(client, staff.email, password)
    assert client.post(reverse("mfa_authenticate"), {"code": codes[0]})["Location"] == reverse("home")
    assert client.get("/admin/").status_code == 200


def test_a_session_that_skipped_the_second_factor_is_signed_out(client, staff):
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "JBSWY3DPEHPK3PXP"})
    client.force_login(staff)  # not through the sign-in page, so no code was asked
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))
    assert "_auth_user_id" not in client.session


def test_the_admins_own_sign_in_is_the_portals(client):
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_customers_need_no_second_factor(alice_client):
    assert alice_client.get(reverse("account")).status_code == 200
