"""Sensitive pages end the session after SENSITIVE_IDLE_TIMEOUT without activity; other pages do not."""

from datetime import datetime
from importlib import import_module

import pytest
from django.conf import settings
from django.test import RequestFactory
from django.urls import reverse

from users import security

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.users.urls")]
SENSITIVE = "/test/sensitive/"
PAY = "/test/pay/"


@pytest.fixture
def signed_in(client, alice, clock):
    client.force_login(alice)  # the clock is already frozen: the sign-in happens at clock.current
    return client


def test_sign_in_stamps_utc_times_in_the_session(signed_in, clock):
    stored = datetime.fromisoformat(signed_in.session[security.LAST_ACTIVITY_KEY])
    assert stored == clock.current
    assert stored.utcoffset().total_seconds() == 0


def test_activity_within_five_minutes_keeps_the_page(signed_in, clock):
    for _ in range(3):
        clock.advance(minutes=4, seconds=59)
        response = signed_in.get(SENSITIVE)
        assert response.status_code == 200
        assert response.content == b"account data"


def test_more_than_five_idle_minutes_sign_out_and_keep_next(signed_in, clock):
    assert signed_in.get(SENSITIVE).status_code == 200
    clock.advance(minutes=5, seconds=1)
    response = signed_in.get(SENSITIVE + "?page=2")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/test/sensitive/%3Fpage%3D2"
    assert "_auth_user_id" not in signed_in.session

    login_page = signed_in.get(response["Location"])
    assert "you were signed out after 5 minutes without activity" in login_page.content.decode()
    assert 'value="/test/sensitive/?page=2"' in login_page.content.decode()


def test_the_real_account_page_is_sensitive(signed_in, clock):
    assert signed_in.get(reverse("account")).status_code == 200
    clock.advance(minutes=6)
    assert signed_in.get(reverse("account"))["Location"].startswith(reverse("login"))


def test_non_sensitive_pages_keep_the_normal_session(signed_in, clock):
    clock.advance(hours=3)
    response = signed_in.get(reverse("home"))
    assert response.status_code == 200
    assert "Signed in as alice@example.com" in response.content.decode()


def test_activity_on_any_page_counts(signed_in, clock):
    clock.advance(minutes=4)
    signed_in.get(reverse("home"))
    clock.advance(minutes=4)
    assert signed_in.get(SENSITIVE).status_code == 200


def test_a_non_sensitive_page_does_not_refresh_an_idle_session(signed_in, clock):
    clock.advance(minutes=10)
    assert signed_in.get(reverse("home")).status_code == 200  # still signed in there ...
    clock.advance(seconds=5)
    assert signed_in.get(SENSITIVE).status_code == 302  # ... but the idle session cannot see account data


def test_signing_in_again_restores_access(signed_in, clock, alice, password):
    clock.advance(minutes=6)
    signed_in.get(SENSITIVE)
    response = signed_in.post(f"{reverse('login')}?next={SENSITIVE}", {"login": alice.email, "password": password})
    assert response["Location"] == SENSITIVE
    assert signed_in.get(SENSITIVE).status_code == 200


def test_sensitive_pages_send_anonymous_visitors_to_sign_in(client):
    assert client.get(SENSITIVE)["Location"] == f"{reverse('login')}?next={SENSITIVE}"


def test_sensitive_pages_are_never_cached(signed_in):
    response = signed_in.get(SENSITIVE)
    assert "no-store" in response["Cache-Control"]
    assert "private" in response["Cache-Control"]


def test_a_session_without_a_timestamp_counts_as_idle(signed_in):
    session = signed_in.session
    del session[security.LAST_ACTIVITY_KEY]
    session.save()
    assert signed_in.get(SENSITIVE).status_code == 302


def test_the_timeout_is_a_setting(signed_in, clock, settings):
    settings.SENSITIVE_IDLE_TIMEOUT = 60
    clock.advance(seconds=61)
    response = signed_in.get(SENSITIVE)
    assert response.status_code == 302
    assert "after 1 minute without activity" in signed_in.get(response["Location"]).content.decode()


def test_anonymous_visitors_get_no_session(client):
    client.get(reverse("home"))
    assert "sessionid" not in client.cookies


# --- clocks of several web hosts -------------------------------------------------------------------------------
def test_a_stamp_a_few_seconds_in_the_future_counts_as_now(signed_in, clock):
    """Another host whose clock runs 4 s ahead signed the user in: this host must not sign them out."""
    clock.advance(seconds=-4)
    assert signed_in.get(SENSITIVE).status_code == 200
    assert signed_in.get(PAY).content == b"payment GET"  # the password typed "in 4 s" is recent too


def test_a_stamp_far_in_the_future_is_not_trusted(signed_in, clock):
    clock.advance(seconds=-6)
    assert signed_in.get(SENSITIVE).status_code == 302


# --- the activity stamp is not rewritten by every request ------------------------------------------------------
def test_a_request_moments_after_the_last_leaves_the_session_unsaved(signed_in, clock, alice):
    """A concurrent request must not write back a re-authentication that another request has just cleared."""
    key = signed_in.session.session_key
    engine = import_module(settings.SESSION_ENGINE)
    racing = engine.SessionStore(key)  # a payment request that loaded the session ...
    assert security.REAUTHENTICATED_KEY in racing  # (loaded now)
    clearing = engine.SessionStore(key)  # ... while another submits the payment and clears it
    request = RequestFactory().get(SENSITIVE)
    request.user, request.session = alice, clearing
    security.session_forget_reauthentication(request)
    clearing.save()

    clock.advance(seconds=3)
    request = RequestFactory().get(SENSITIVE)
    request.user, request.session = alice, racing
    security.session_record_activity(request)
    assert racing.modified is False  # so SessionMiddleware does not save its stale copy
    assert security.REAUTHENTICATED_KEY not in engine.SessionStore(key).load()

    clock.advance(seconds=11)
    security.session_record_activity(request)
    assert racing.modified is True  # later requests still move the stamp
    assert datetime.fromisoformat(racing[security.LAST_ACTIVITY_KEY]) == clock.current


# --- the admin -------------------------------------------------------------------------------------------------
def test_the_admin_has_the_idle_timeout(client, charlie, clock):
    client.force_login(charlie)
    admin_page = reverse("admin:index")
    assert client.get(admin_page).status_code == 200
    clock.advance(minutes=4)
    assert client.get(admin_page).status_code == 200
    clock.advance(minutes=5, seconds=1)
    response = client.get(admin_page)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={admin_page}"
    assert "_auth_user_id" not in client.session
    assert "no-cache" in response["Cache-Control"]


def test_portal_pages_outside_the_admin_keep_the_normal_session(client, charlie, clock):
    client.force_login(charlie)
    clock.advance(hours=1)
    assert "Signed in as charlie@example.com" in client.get(reverse("home")).content.decode()
