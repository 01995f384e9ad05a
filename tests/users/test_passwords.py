"""Changing the password (signed in) and resetting it by a mailed link (allauth)."""

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core import mail
from django.urls import reverse

from tests.signin import sign_in

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "granite-harbour-kettle-77"
CHANGE = reverse("account_change_password")


def _change(client, old_password, new=NEW_PASSWORD):
    return client.post(CHANGE, {"oldpassword": old_password, "password1": new, "password2": new})


def test_change_needs_the_old_password_and_keeps_this_session(alice_client, alice, password):
    assert alice_client.get(CHANGE).status_code == 200

    wrong = _change(alice_client, "not-it")
    assert wrong.status_code == 200
    assert "oldpassword" in wrong.context["form"].errors
    assert 'id="id_oldpassword_error"' in wrong.content.decode()

    response = _change(alice_client, password)
    assert response["Location"] == reverse("account")
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
    assert alice_client.get(reverse("account")).status_code == 200  # still signed in here
    [notice] = mail.outbox
    assert notice.to == [alice.email]
    assert notice.subject == "Your Fjordpay password was changed"


def test_change_applies_the_password_validators(alice_client, alice, password):
    response = _change(alice_client, password, new="short")
    assert "This password is too short." in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password(password)
    assert mail.outbox == []


def test_change_needs_sign_in(client):
    response = client.get(CHANGE)
    assert response["Location"] == f"{reverse('account_login')}?next={CHANGE}"


def _reset_link(message) -> str:
    match = re.search(r"https?://[^/\s]+(/auth/password/reset/key/\S+/)", message.body)
    assert match, message.body
    return match.group(1)


def test_reset_mails_a_link_that_sets_a_new_password_once(client, alice, password, settings):
    settings.PORTAL_BASE_URL = "https://portal.example.com"
    response = client.post(reverse("account_reset_password"), {"email": "ALICE@example.com"})
    assert response["Location"] == reverse("account_reset_password_done")
    [message] = mail.outbox
    assert message.to == [alice.email]
    assert message.subject == "Set a new Fjordpay password"
    assert "https://portal.example.com/auth/password/reset/key/" in message.body
    link = _reset_link(message)

    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    assert "token_fail" not in form_page.context or not form_page.context["token_fail"]
    set_password_url = form_page.redirect_chain[-1][0]
    done = client.post(set_password_url, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert done["Location"] == reverse("account_reset_password_from_key_done")
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
    assert mail.outbox[-1].subject == "Your Fjordpay password was changed"

    # The link cannot be used twice.
    again = client.get(link, follow=True)
    assert again.context["token_fail"] is True
    assert "This link is not valid" in again.content.decode()

    # And the new password signs in.
    assert sign_in(client, alice.email, NEW_PASSWORD).status_code == 302


def test_reset_for_an_unknown_address_says_the_same_and_changes_nothing(client, alice):
    response = client.post(reverse("account_reset_password"), {"email": "nobody@example.com"})
    assert response["Location"] == reverse("account_reset_password_done")
    [notice] = mail.outbox  # the owner of the address is told there is no account with it
    assert notice.to == ["nobody@example.com"]
    assert "/auth/password/reset/key/" not in notice.body


def test_reset_ignores_the_host_header_in_the_link(client, alice, settings):
    settings.PORTAL_BASE_URL = "https://portal.example.com"
    settings.ALLOWED_HOSTS = ["evil.example", "testserver"]
    client.post(reverse("account_reset_password"), {"email": alice.email}, HTTP_HOST="evil.example")
    [message] = mail.outbox
    assert "evil.example" not in message.body


# --- the old password is a counted password check ----------------------------------------------------------------
def test_guessing_the_old_password_is_locked_out(alice_client, alice, password):
    statuses = [_change(alice_client, f"guess-{n}").status_code for n in range(5)]
    assert statuses == [200] * 5
    # Locked out: even the right old password no longer changes anything.
    assert _change(alice_client, password).status_code == 429
    alice.refresh_from_db()
    assert alice.check_password(password)
    assert mail.outbox == []


def test_the_right_old_password_forgets_earlier_failures(alice_client, alice, password):
    for n in range(4):
        assert _change(alice_client, f"typo-{n}").status_code == 200
    assert _change(alice_client, password)["Location"] == reverse("account")
    for n in range(4):
        assert _change(alice_client, f"typo-again-{n}", new="granite-harbour-kettle-78").status_code == 200
    assert _change(alice_client, NEW_PASSWORD, new="granite-harbour-kettle-79")["Location"] == reverse("account")


def test_reset_links_live_for_one_hour(client, alice, settings):
    """PASSWORD_RESET_TIMEOUT is one hour: a link is honoured at 59 minutes and refused after 61."""
    assert settings.PASSWORD_RESET_TIMEOUT == 3600
    client.post(reverse("account_reset_password"), {"email": alice.email})
    link = _reset_link(mail.outbox[-1])
    issued = PasswordResetTokenGenerator()._now()  # Django's own clock for tokens (naive local time)
    with mock.patch.object(PasswordResetTokenGenerator, "_now", return_value=issued + timedelta(minutes=59)):
        assert client.get(link)["Location"].endswith("-set-password/")
    with mock.patch.object(PasswordResetTokenGenerator, "_now", return_value=issued + timedelta(minutes=61)):
        late = client.get(link, follow=True)
    assert late.context["token_fail"] is True


def test_the_reset_page_states_the_one_hour_lifetime(client):
    page = client.get(reverse("account_reset_password_done"))
    assert "expires after one hour" in page.content.decode()
