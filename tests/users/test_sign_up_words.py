"""The sign-up and sign-in pages' own words in both languages: every message of the password validators in
bokmål, each empty field named, and allauth's confirmation notice without its catalogue's typo."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import translation

from tests.signin import SIGN_IN_PATH
from tests.users.helpers import sign_up

pytestmark = pytest.mark.django_db

SHORT = {"password1": "short1", "password2": "short1"}


def _in(language: str, client):
    client.cookies["django_language"] = language
    return client


def test_the_short_password_message_is_in_bokmal(client):
    response = sign_up(_in("nb", client), **SHORT)
    html = response.content.decode()
    assert "Dette passordet er for kort. Det må ha minst 10 tegn." in html
    assert "too short" not in html


def test_the_short_password_message_in_english(client):
    response = sign_up(_in("en", client), **SHORT)
    assert "This password is too short. It must have at least 10 characters." in response.content.decode()


@pytest.mark.parametrize(
    ("fields", "language", "messages"),
    [
        (
            {"email": "", "password1": "", "password2": ""},
            "en",
            {
                "email": "Enter your e-mail address.",
                "password1": "Enter a password.",
                "password2": "Enter the password again.",
            },
        ),
        (
            {"email": "", "password1": "", "password2": ""},
            "nb",
            {
                "email": "Skriv inn e-postadressen din.",
                "password1": "Skriv inn et passord.",
                "password2": "Skriv inn passordet en gang til.",
            },
        ),
    ],
)
def test_each_empty_sign_up_field_is_named(client, fields, language, messages):
    response = sign_up(_in(language, client), **fields)
    errors = response.context["form"].errors
    html = response.content.decode()
    for field, text in messages.items():
        assert errors[field] == [text]
        assert html.count(text) == 2  # the summary at the top and the field's own error
    assert "This field is required." not in html
    assert "Feltet er påkrevet." not in html


def test_each_empty_sign_in_field_is_named_in_bokmal(client):
    response = _in("nb", client).post(SIGN_IN_PATH, {"login": "", "password": ""}, REMOTE_ADDR="192.0.2.10")
    errors = response.context["form"].errors
    assert errors["login"] == ["Skriv inn e-postadressen eller brukernavnet ditt."]
    assert errors["password"] == ["Skriv inn passordet ditt."]


def test_the_confirmation_notice_is_spelt_right_in_bokmal(client):
    response = sign_up(_in("nb", client), email="ny@example.com")
    assert response.status_code == 302
    notices = [str(m) for m in get_messages(response.wsgi_request)]
    assert notices == ["Vi har sendt en e-post til ny@example.com for å bekrefte adressen."]
    with translation.override("nb"):
        page = client.get(reverse("account_email_verification_sent")).content.decode()
    assert "Bekreftelsese-post" not in page
