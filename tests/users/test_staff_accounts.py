"""Accounts staff make in the admin can always sign in: the admin's "Add user" form asks for an e-mail address
(made with only a username and a password, the account had nothing to confirm, and the browser went between the
sign-in and the confirmation page until chromium gave up), and an account made without one elsewhere is refused
at sign-in with a sentence, not sent round in a loop."""

from __future__ import annotations

import re

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.signin import sign_in
from tests.users.helpers import GOOD_PASSWORD
from users.security import SECOND_FACTOR_KEY

pytestmark = [pytest.mark.django_db, pytest.mark.real_second_factor]
ADD = reverse("admin:auth_user_add")


@pytest.fixture
def admin_client_(client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", "boss@example.com", GOOD_PASSWORD)
    Authenticator.objects.create(user=boss, type=Authenticator.Type.TOTP, data={"secret": "JBSWY3DPEHPK3PXP"})
    client.force_login(boss)
    session = client.session
    session[SECOND_FACTOR_KEY] = timezone.now().isoformat()  # signed in with it
    session.save()
    return client


def add_form_fields(client) -> list[str]:
    page = client.get(ADD)
    assert page.status_code == 200
    form = re.search(r'<form[^>]*id="user_form".*?</form>', page.content.decode(), re.S).group(0)
    return re.findall(r'<input[^>]*name="([^"]+)"', form)


def post_add_form(client, **values):
    data = {"username": "", "email": "", "usable_password": "true", "password1": "", "password2": ""}
    data.update(values)
    return client.post(ADD, data)


def test_the_add_form_asks_for_an_e_mail_address(admin_client_, django_user_model):
    assert {"username", "email", "password1", "password2"} <= set(add_form_fields(admin_client_))
    refused = post_add_form(admin_client_, username="nomail", password1=GOOD_PASSWORD, password2=GOOD_PASSWORD)
    assert refused.status_code == 200
    assert "This field is required." in refused.content.decode()
    assert not django_user_model.objects.filter(username="nomail").exists()


def test_a_staff_user_made_in_the_add_form_signs_in_without_a_loop(admin_client_, django_user_model):
    made = post_add_form(
        admin_client_,
        username="newstaff",
        email="New.Staff@example.com",
        password1=GOOD_PASSWORD,
        password2=GOOD_PASSWORD,
    )
    assert made.status_code == 302, made.content.decode()[:3000]
    user = django_user_model.objects.get(username="newstaff")
    assert user.email == "new.staff@example.com"
    assert EmailAddress.objects.get(user=user).verified
    user.is_staff = True  # the change form's "Staff status" box
    user.save(update_fields=["is_staff"])

    for login in ("newstaff", "new.staff@example.com"):
        browser = Client()
        answer = sign_in(browser, login, GOOD_PASSWORD, follow=True)
        visited = [url for url, _status in answer.redirect_chain]
        assert answer.status_code == 200, visited
        assert reverse("account_email_verification_sent") not in visited
        assert visited[-1] == reverse("second_factor_needed")  # signed in; the second factor comes by invitation
        assert browser.session["_auth_user_id"] == str(user.pk)


def test_the_add_form_refuses_an_address_another_account_has(admin_client_, alice):
    refused = post_add_form(
        admin_client_,
        username="copycat",
        email="ALICE@example.com",
        password1=GOOD_PASSWORD,
        password2=GOOD_PASSWORD,
    )
    assert refused.status_code == 200
    assert "Another account has this e-mail address." in refused.content.decode()


def test_an_account_without_an_address_is_refused_at_sign_in_with_a_reason(django_user_model):
    django_user_model.objects.create_user("legacy", "", GOOD_PASSWORD, is_staff=True)  # createsuperuser allows it
    browser = Client()
    answer = sign_in(browser, "legacy", GOOD_PASSWORD)
    assert answer.status_code == 200
    assert "This account has no e-mail address, so it cannot sign in." in answer.content.decode()
    assert "_auth_user_id" not in browser.session
