"""Sign-up: an e-mail address and a password that passes the validators; the new user is signed in."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()
GOOD_PASSWORD = "fjord-glacier-lantern-42"


def sign_up(client, email="New.Person@Example.com", password1=GOOD_PASSWORD, password2=GOOD_PASSWORD, **extra):
    return client.post(
        reverse("signup") + extra.pop("query", ""),
        {"email": email, "password1": password1, "password2": password2, **extra},
    )


def test_the_page_offers_the_form(client):
    response = client.get(reverse("signup"))
    assert response.status_code == 200
    html = response.content.decode()
    for name in ("email", "password1", "password2"):
        assert f'name="{name}"' in html


def test_happy_path_creates_the_user_signs_in_and_opens_the_account_page(client):
    response = sign_up(client)
    assert response.status_code == 302
    assert response["Location"] == reverse("account")

    user = User.objects.get()
    assert user.username == user.email == "new.person@example.com"
    assert user.check_password(GOOD_PASSWORD)
    assert not user.is_staff
    assert client.session["_auth_user_id"] == str(user.pk)

    page = client.get(reverse("account"))
    assert page.status_code == 200
    assert "new.person@example.com" in page.content.decode()


def test_next_is_followed_only_inside_the_portal(client):
    inside = sign_up(client, next="/account/?tab=1")
    assert inside["Location"] == "/account/?tab=1"
    client.logout()
    outside = sign_up(client, email="other@example.com", next="https://evil.example/")
    assert outside["Location"] == reverse("account")


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"email": "not-an-address"}, "email", "Enter a valid email address."),
        ({"email": ""}, "email", "This field is required."),
        ({"password2": "fjord-glacier-lantern-43"}, "password2", "The two password fields didn"),
        ({"password1": "short1", "password2": "short1"}, "password2", "This password is too short."),
        ({"password1": "password123", "password2": "password123"}, "password2", "This password is too common."),
        (
            {"password1": "4815162342", "password2": "4815162342"},
            "password2",
            "This password is entirely numeric.",
        ),
        (
            {"email": "fjordlantern@example.com", "password1": "fjordlantern", "password2": "fjordlantern"},
            "password2",
            "The password is too similar to the email address.",
        ),
    ],
)
def test_field_errors_are_shown_next_to_the_field_and_nothing_is_created(client, fields, field, message):
    response = sign_up(client, **fields)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert field in response.context["form"].errors
    assert f'id="id_{field}_error"' in response.content.decode()
    assert not User.objects.exists()
    assert "_auth_user_id" not in client.session


def test_typed_e_mail_is_kept_after_an_error(client):
    response = sign_up(client, email="keep@example.com", password2="different-password-99")
    assert 'value="keep@example.com"' in response.content.decode()


def test_an_address_in_use_is_refused_whatever_its_letter_case(client):
    UserFactory(email="taken@example.com")
    response = sign_up(client, email="TAKEN@example.com")
    assert response.status_code == 200
    assert "An account with this e-mail address already exists." in response.content.decode()
    assert User.objects.count() == 1


def test_a_signed_in_user_is_sent_away_from_sign_up(alice_client):
    response = alice_client.get(reverse("signup"))
    assert response.status_code == 302
