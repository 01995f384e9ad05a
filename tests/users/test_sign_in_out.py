"""Signing in and out (allauth), and the lockout after repeated failures (per login and client address)."""

import re

import pytest
from django.urls import reverse
from django.utils import translation

from tests.signin import LOGIN_FIELD, PASSWORD_FIELD, SIGN_IN_PATH, sign_in
from tests.users.helpers import ratelimit_clock

pytestmark = pytest.mark.django_db
LOGIN = reverse("account_login")


def test_the_tests_sign_in_names_the_page_and_fields_the_portal_has(client):
    """tests/signin.py's address and fields (every transport's sign-in uses them) are the portal's."""
    assert SIGN_IN_PATH == LOGIN
    form = client.get(LOGIN).content.decode()
    assert f'name="{LOGIN_FIELD}"' in form and f'name="{PASSWORD_FIELD}"' in form


def test_sign_in_with_the_e_mail_address_in_any_letter_case_follows_next(client, alice, password):
    response = sign_in(client, "Alice@Example.COM", password, query="?next=/account/")
    assert response.status_code == 302
    assert response["Location"] == "/account/"
    assert client.session["_auth_user_id"] == str(alice.pk)


def test_a_customer_without_next_lands_where_customers_always_have(client, alice, password):
    response = sign_in(client, alice.email, password)
    assert response.status_code == 302
    assert response["Location"] == reverse("home")


def test_staff_without_next_land_on_the_staff_dashboard(client, support, password):
    response = sign_in(client, support.email, password)
    assert response.status_code == 302
    assert response["Location"] == reverse("staff-dashboard")
    assert client.get(response["Location"]).status_code == 200


def test_staff_who_may_not_read_the_dashboard_land_on_the_admin(client, charlie, password):
    response = sign_in(client, charlie.email, password)
    assert response["Location"] == reverse("admin:index")
    assert client.get(response["Location"]).status_code == 200


def test_staff_with_next_follow_it(client, support, password):
    response = sign_in(client, support.email, password, query="?next=/admin/payments/payment/")
    assert response["Location"] == "/admin/payments/payment/"


def test_a_username_signs_in_too(client, django_user_model):
    user = django_user_model.objects.create_user("demo", "demo@example.invalid", "a-long-demo-password")
    assert sign_in(client, "demo", "a-long-demo-password").status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)


@pytest.mark.parametrize(
    ("language", "label"), [("en", "E-mail address or username"), ("nb", "E-postadresse eller brukernavn")]
)
def test_the_label_names_both_ways_to_sign_in(client, language, label):
    client.cookies["django_language"] = language
    with translation.override(language):
        html = client.get(LOGIN, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert re.search(rf'<label for="id_login">{label}<span class="required"', html), html
    login_input = re.search(r'<input[^>]*name="login"[^>]*>', html).group(0)
    assert "maxlength" not in login_input  # nothing typed is cut
    assert "data-character-count-for" not in html  # a name is not counted like a message


def test_next_outside_the_portal_is_ignored(client, alice, password):
    response = sign_in(client, alice.email, password, query="?next=https://evil.example/")
    assert response["Location"] == reverse("home")


def test_a_wrong_password_is_a_clear_error_and_keeps_the_user_out(client, alice):
    response = sign_in(client, alice.email, "not-the-password")
    assert response.status_code == 200
    html = response.content.decode()
    assert "The email address and/or password you specified are not correct." in html
    assert "_auth_user_id" not in client.session
    # Once, in the error summary at the top of the form.
    assert html.count("The email address and/or password you specified are not correct.") == 1
    assert html.index("There is a problem") < html.index('name="login"')


def test_the_sign_in_page_offers_reset_and_sign_up(client):
    html = client.get(LOGIN).content.decode()
    assert reverse("account_reset_password") in html
    assert reverse("account_signup") in html
    assert 'name="login"' in html and 'autocomplete="current-password"' in html


def test_sign_out_is_a_post_that_ends_the_session(alice_client):
    assert alice_client.get(reverse("account_logout")).status_code == 405
    response = alice_client.post(reverse("account_logout"), follow=True)
    assert response.status_code == 200
    assert "_auth_user_id" not in alice_client.session
    assert "You have signed out." in response.content.decode()
    assert alice_client.get(reverse("account"))["Location"].startswith(LOGIN)


def test_signed_in_navigation_links_to_my_account(alice_client):
    html = alice_client.get(reverse("home")).content.decode()
    assert f'href="{reverse("account")}"' in html


def test_five_failures_lock_the_login_and_address_out_with_a_clear_page(client, alice, password):
    for _ in range(5):
        assert sign_in(client, alice.email, "wrong-password").status_code == 200
    # Even the right password is refused now, with the same page.
    refused = sign_in(client, alice.email, password)
    assert refused.status_code == 429
    html = refused.content.decode()
    assert "Signing in is blocked for now" in html
    assert "signing in is blocked for 15 minutes" in html
    assert reverse("account_reset_password") in html
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_per_login_and_address(client, alice, bob, password):
    for _ in range(5):
        sign_in(client, alice.email, "wrong-password", ip="192.0.2.10")
    assert sign_in(client, alice.email, password, ip="192.0.2.10").status_code == 429
    # Another network, or another login from the same network, is not blocked.
    assert sign_in(client, bob.email, password, ip="192.0.2.10").status_code == 302
    client.post(reverse("account_logout"))
    assert sign_in(client, alice.email, password, ip="198.51.100.7").status_code == 302


def test_the_lockout_ends_after_the_cool_off(client, alice, password):
    for _ in range(5):
        sign_in(client, alice.email, "wrong-password")
    assert sign_in(client, alice.email, password).status_code == 429
    with ratelimit_clock(14 * 60):
        assert sign_in(client, alice.email, password).status_code == 429
    with ratelimit_clock(15 * 60 + 1):
        assert sign_in(client, alice.email, password).status_code == 302


def test_a_successful_sign_in_forgets_the_failures(client, alice, password):
    for _ in range(4):
        sign_in(client, alice.email, "wrong-password")
    assert sign_in(client, alice.email, password).status_code == 302
    client.post(reverse("account_logout"))
    for _ in range(4):
        assert sign_in(client, alice.email, "wrong-password").status_code == 200
    assert sign_in(client, alice.email, password).status_code == 302


def test_ten_failures_a_minute_from_one_address_are_refused_whatever_the_name(client, alice, password):
    for n in range(10):
        sign_in(client, f"nobody{n}@example.com", "wrong-password", ip="203.0.113.9")
    assert sign_in(client, alice.email, password, ip="203.0.113.9").status_code == 429
    assert sign_in(client, alice.email, password, ip="203.0.113.10").status_code == 302
