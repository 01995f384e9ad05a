"""Sign-up: an e-mail address and a password that passes the validators, then the link mailed to the address.

The answer is the same whether or not the address has an account ("check your e-mail"): a new address gets a
link that activates the account and signs in; an address in use gets a mail saying so, with a reset link.
"""

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core import mail
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


def _link(message) -> str:
    match = re.search(r"https://portal\.example\.com(/\S+)", message.body)
    assert match, message.body
    return match.group(1)


@pytest.fixture(autouse=True)
def _portal_address(settings):
    settings.PORTAL_BASE_URL = "https://portal.example.com"


def test_happy_path_mails_a_link_that_activates_the_account_and_signs_in(client):
    response = sign_up(client)
    assert response["Location"] == reverse("signup_sent")
    assert "Check your e-mail" in client.get(response["Location"]).content.decode()
    assert "_auth_user_id" not in client.session

    user = User.objects.get()
    assert user.username == user.email == "new.person@example.com"
    assert user.check_password(GOOD_PASSWORD)
    assert not user.is_active and not user.is_staff
    # Not usable before the address is confirmed.
    assert client.post(reverse("login"), {"username": user.email, "password": GOOD_PASSWORD}).status_code == 200

    [message] = mail.outbox
    assert message.to == ["new.person@example.com"]
    assert message.subject == "Confirm your e-mail address for Fjordpay"
    link = _link(message)
    page = client.get(link)  # a mail scanner's GET changes nothing
    assert page.status_code == 200 and "Activate my account" in page.content.decode()
    user.refresh_from_db()
    assert not user.is_active

    done = client.post(link)
    assert done["Location"] == reverse("account")
    user.refresh_from_db()
    assert user.is_active
    assert client.session["_auth_user_id"] == str(user.pk)
    assert "new.person@example.com" in client.get(reverse("account")).content.decode()

    # The link works once.
    client.logout()
    assert client.post(link).status_code == 400
    assert "This link is not valid" in client.get(link).content.decode()


def test_the_link_expires_with_password_reset_links(client, settings):
    sign_up(client)
    link = _link(mail.outbox[-1])
    later = PasswordResetTokenGenerator()._now() + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 60)
    with mock.patch.object(PasswordResetTokenGenerator, "_now", return_value=later):
        assert client.post(link).status_code == 400
    assert not User.objects.get().is_active


def test_a_forged_link_activates_nothing(client):
    sign_up(client)
    user = User.objects.get()
    uidb64 = _link(mail.outbox[-1]).rstrip("/").split("/")[-2]
    for link in (
        reverse("signup_confirm", kwargs={"uidb64": uidb64, "token": "cmrjqk-0123456789abcdef"}),
        reverse("signup_confirm", kwargs={"uidb64": "!!", "token": "abc-def"}),
        reverse("signup_confirm", kwargs={"uidb64": "OTk5OTk", "token": "abc-def"}),
    ):
        assert client.post(link).status_code == 400
    user.refresh_from_db()
    assert not user.is_active


def test_next_is_followed_only_inside_the_portal(client):
    sign_up(client, next="/account/?tab=1")
    assert client.post(_link(mail.outbox[-1]))["Location"] == "/account/?tab=1"
    client.logout()
    sign_up(client, email="other@example.com", next="https://evil.example/")
    assert client.post(_link(mail.outbox[-1]))["Location"] == reverse("account")


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


def test_an_address_in_use_gets_the_same_answer_and_its_owner_a_mail(client, password):
    owner = UserFactory(email="taken@example.com")
    fresh = sign_up(client, email="fresh@example.com")
    taken = sign_up(client, email="TAKEN@example.com")
    # The page cannot tell them apart ...
    assert taken.status_code == fresh.status_code == 302
    assert taken["Location"] == fresh["Location"] == reverse("signup_sent")
    assert "_auth_user_id" not in client.session
    # ... the account in use is untouched ...
    assert User.objects.filter(email__iexact="taken@example.com").count() == 1
    owner.refresh_from_db()
    assert owner.check_password(password) and owner.is_active
    # ... and its owner is told, with a way back in.
    notice = mail.outbox[-1]
    assert notice.to == ["taken@example.com"]
    assert notice.subject == "Someone tried to sign up to Fjordpay with your address"
    assert _link(notice) == reverse("password_reset")
    assert "signup_confirm" not in notice.body and "/auth/sign-up/confirm/" not in notice.body


def test_signing_up_again_before_confirming_sends_a_new_link_and_keeps_the_first_password(client):
    sign_up(client)
    sign_up(
        client, email="new.person@example.com", password1="another-password-88", password2="another-password-88"
    )
    user = User.objects.get()
    assert user.check_password(GOOD_PASSWORD)  # a stranger cannot set the password of a pending account
    assert len(mail.outbox) == 2
    assert mail.outbox[-1].subject == "Confirm your e-mail address for Fjordpay"
    client.post(_link(mail.outbox[-1]))
    user.refresh_from_db()
    assert user.is_active


def test_a_signed_in_user_is_sent_away_from_sign_up(alice_client):
    response = alice_client.get(reverse("signup"))
    assert response.status_code == 302
