"""A stranger cannot keep the owner of an address from signing up. The mail limit counts per address *and client
address*: a stranger's sign-ups with someone's address cannot use up the mails of its owner, who signs up from
elsewhere and can ask for a fresh code on the page that asks for it; one client still mails one address at most
once a minute and three times an hour. A stranger's sign-up after the owner's does not undo it: the first to type
the mailed code keeps the address."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.users.helpers import GOOD_PASSWORD, code_in, confirm, mails_to, ratelimit_clock

pytestmark = pytest.mark.django_db
OWNER = "owner@example.com"
OWNER_IP = "192.0.2.10"
STRANGER_IP = "198.51.100.7"
CONFIRM = reverse("account_email_verification_sent")


def sign_up(client: Client, ip: str, email: str = OWNER, password: str = GOOD_PASSWORD):
    return client.post(
        reverse("account_signup"), {"email": email, "password1": password, "password2": password}, REMOTE_ADDR=ip
    )


def resend(client: Client, ip: str):
    return client.post(CONFIRM, {"action": "resend"}, REMOTE_ADDR=ip)


def test_a_strangers_sign_ups_do_not_use_up_the_owners_mails():
    for minutes in (0, 2, 4):  # the most one client may send to one address in an hour
        with ratelimit_clock(minutes * 60):
            assert sign_up(Client(), STRANGER_IP, password=f"strangers-own-pass-{minutes}")["Location"] == CONFIRM
    with ratelimit_clock(5 * 60):
        refused = sign_up(Client(), STRANGER_IP, password="strangers-own-pass-5")
        assert refused.status_code == 429  # the stranger's client is limited ...

        owner = Client()
        answer = sign_up(owner, OWNER_IP)  # ... the owner, from elsewhere, is not
        assert answer.status_code == 302 and answer["Location"] == CONFIRM
        assert len(mails_to(OWNER)) == 4
        assert confirm(owner, code_in(mails_to(OWNER)[-1]), ip=OWNER_IP).status_code == 302
    assert "_auth_user_id" in owner.session


def test_one_client_mails_one_address_once_a_minute():
    assert sign_up(Client(), STRANGER_IP)["Location"] == CONFIRM
    assert sign_up(Client(), STRANGER_IP).status_code == 429
    assert len(mails_to(OWNER)) == 1


def test_the_owner_asks_for_a_fresh_code_from_the_confirm_page():
    for minutes in (0, 2, 4):
        with ratelimit_clock(minutes * 60):
            sign_up(Client(), STRANGER_IP, password=f"strangers-own-pass-{minutes}")
    owner = Client()
    with ratelimit_clock(5 * 60):
        sign_up(owner, OWNER_IP)
        page = owner.get(CONFIRM, REMOTE_ADDR=OWNER_IP).content.decode()
        assert 'name="action" value="resend"' in page
        # At once: too soon, said on the page, and no mail.
        too_soon = resend(owner, OWNER_IP)
        assert too_soon["Location"] == CONFIRM
        assert "too many requests" in owner.get(CONFIRM, REMOTE_ADDR=OWNER_IP).content.decode()
    assert len(mails_to(OWNER)) == 4
    first_code = code_in(mails_to(OWNER)[-1])
    with ratelimit_clock(7 * 60):
        assert resend(owner, OWNER_IP)["Location"] == CONFIRM
        assert len(mails_to(OWNER)) == 5
        fresh_code = code_in(mails_to(OWNER)[-1])
        assert fresh_code != first_code
        assert confirm(owner, fresh_code, ip=OWNER_IP).status_code == 302
    assert "_auth_user_id" in owner.session


def test_a_strangers_later_sign_up_does_not_undo_the_owners():
    """The owner signs up, a stranger signs up with the same address before the owner types the code: the owner's
    code still confirms the owner's account, which takes the address as its username; the stranger's unconfirmed
    account is deleted with its password."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    owner = Client()
    sign_up(owner, OWNER_IP)
    code = code_in(mails_to(OWNER)[-1])
    assert sign_up(Client(), STRANGER_IP, password="strangers-own-pass-1")["Location"] == CONFIRM
    assert User.objects.filter(email__iexact=OWNER).count() == 2  # side by side until one confirms

    assert confirm(owner, code, ip=OWNER_IP)["Location"] == "/"
    (user,) = User.objects.filter(email__iexact=OWNER)
    assert owner.session["_auth_user_id"] == str(user.pk)
    assert user.username == OWNER and user.check_password(GOOD_PASSWORD)
    stranger = Client()
    stranger.post(reverse("account_login"), {"login": OWNER, "password": "strangers-own-pass-1"})
    assert "_auth_user_id" not in stranger.session
