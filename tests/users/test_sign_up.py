"""Sign-up (allauth): an e-mail address and a password that passes the validators, then the code mailed to the
address, typed in the same browser.

The answer is the same whether or not the address has an account: a new address gets a code that confirms the
account and signs in; an address in use gets a mail saying so, with a reset link.
"""

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse

from tests.factories import UserFactory
from tests.signin import sign_in
from tests.users.helpers import GOOD_PASSWORD, code_in, confirm, mails_to, ratelimit_clock, sign_up

pytestmark = pytest.mark.django_db
User = get_user_model()
CONFIRM = reverse("account_email_verification_sent")


@pytest.fixture(autouse=True)
def _portal_address(settings):
    settings.PORTAL_BASE_URL = "https://portal.example.com"


def test_the_page_offers_the_form(client):
    response = client.get(reverse("account_signup"))
    assert response.status_code == 200
    html = response.content.decode()
    for name in ("email", "password1", "password2"):
        assert f'name="{name}"' in html
    assert "E-mail address" in html


def test_happy_path_mails_a_code_that_confirms_the_account_and_signs_in(client):
    response = sign_up(client)
    assert response["Location"] == CONFIRM
    page = client.get(CONFIRM).content.decode()
    assert "Check your e-mail" in page and "new.person@example.com" in page
    assert "_auth_user_id" not in client.session

    user = User.objects.get()
    assert user.username == user.email == "new.person@example.com"
    assert user.check_password(GOOD_PASSWORD)
    assert not user.is_staff
    assert not EmailAddress.objects.get(user=user).verified

    [message] = mail.outbox
    assert message.to == ["new.person@example.com"]
    assert message.subject == "Confirm your e-mail address for Fjordpay"
    done = confirm(client, code_in(message))
    assert done.status_code == 302
    assert EmailAddress.objects.get(user=user).verified
    assert client.session["_auth_user_id"] == str(user.pk)
    assert "new.person@example.com" in client.get(reverse("account")).content.decode()


def test_the_code_works_only_in_the_browser_that_signed_up(client):
    from django.test import Client

    sign_up(client)
    other = Client()
    response = other.post(CONFIRM, {"code": code_in(mail.outbox[-1])})
    assert response.status_code == 302 and response["Location"] == reverse("account_login")
    assert not EmailAddress.objects.get().verified


def test_three_wrong_codes_end_the_attempt(client):
    sign_up(client)
    code = code_in(mail.outbox[-1])
    for _ in range(3):
        confirm(client, "AAAAAA" if code != "AAAAAA" else "BBBBBB")
    assert confirm(client, code)["Location"] == reverse("account_login")
    assert not EmailAddress.objects.get().verified


def test_signing_in_before_confirming_asks_for_a_code(client):
    sign_up(client)
    mail.outbox.clear()
    client.cookies.clear()
    with ratelimit_clock(61):  # at most one code a minute to one address
        response = sign_in(client, "new.person@example.com", GOOD_PASSWORD)
    assert response["Location"] == CONFIRM
    assert "_auth_user_id" not in client.session
    assert confirm(client, code_in(mails_to("new.person@example.com")[-1])).status_code == 302
    assert "_auth_user_id" in client.session


def test_next_is_followed_only_inside_the_portal(client):
    sign_up(client, query="?next=/account/%3Ftab%3D1")
    assert confirm(client, code_in(mail.outbox[-1]))["Location"] == "/account/?tab=1"
    client.post(reverse("account_logout"))
    sign_up(client, email="other@example.com", query="?next=https://evil.example/")
    assert not confirm(client, code_in(mail.outbox[-1]))["Location"].startswith("https://evil.example")


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"email": "not-an-address"}, "email", "Enter a valid email address."),
        ({"email": ""}, "email", "Enter your e-mail address."),
        ({"password2": "fjord-glacier-lantern-43"}, "password2", "You must type the same password each time."),
        ({"password1": "short1", "password2": "short1"}, "password1", "This password is too short."),
        ({"password1": "password123", "password2": "password123"}, "password1", "This password is too common."),
        ({"password1": "4815162342", "password2": "4815162342"}, "password1", "This password is entirely numer"),
        (
            {"email": "fjordlantern@example.com", "password1": "fjordlantern", "password2": "fjordlantern"},
            "password1",
            "The password is too similar to the",
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
    client.cookies.clear()
    taken = sign_up(client, email="TAKEN@example.com")
    # The page cannot tell them apart ...
    assert taken.status_code == fresh.status_code == 302
    assert taken["Location"] == fresh["Location"] == CONFIRM
    assert "taken@example.com" in client.get(CONFIRM).content.decode()
    assert "_auth_user_id" not in client.session
    # ... the account in use is untouched ...
    assert User.objects.filter(email__iexact="taken@example.com").count() == 1
    owner.refresh_from_db()
    assert owner.check_password(password) and owner.is_active
    # ... and its owner is told, with a way back in.
    [notice] = mails_to("taken@example.com")
    assert notice.subject == "Someone tried to sign up to Fjordpay with your address"
    assert "https://portal.example.com/auth/password/reset/" in notice.body


def test_a_signed_in_user_is_sent_away_from_sign_up(alice_client):
    response = alice_client.get(reverse("account_signup"))
    assert response.status_code == 302


def test_accounts_made_by_staff_have_a_confirmed_address(django_user_model):
    user = django_user_model.objects.create_user("made@example.com", "made@example.com", "a-long-password-1")
    assert EmailAddress.objects.get(user=user).verified
