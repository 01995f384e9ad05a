"""The warning before the idle sign-out: every page of a signed-in user carries it (with the seconds it counts
down, allowing for the activity stamp's interval) and "Stay signed in" keeps the session; a session already
idle-expired is not brought back."""

import re

import pytest
from django.urls import reverse

from users import security

pytestmark = pytest.mark.django_db
KEEP = reverse("session-keep-alive")
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def signed_in(client, alice, clock):
    client.force_login(alice)
    return client


def test_a_signed_in_users_page_carries_the_warning_and_its_script(signed_in, settings):
    settings.SENSITIVE_IDLE_TIMEOUT = 300
    page = signed_in.get(reverse("account")).content.decode()
    assert re.search(r'<section id="idle-warning" [^>]*data-idle-seconds="290" hidden>', page)
    assert "Stay signed in" in page and 'role="status" aria-live="polite"' in page
    assert "js/idle_warning.js" in page


def test_no_warning_for_anonymous_visitors(client, db):
    page = client.get(reverse("login")).content.decode()
    assert "idle-warning" not in page and "idle_warning.js" not in page


def test_stay_signed_in_keeps_the_session_past_the_timeout(signed_in, clock):
    assert signed_in.get(reverse("account")).status_code == 200
    clock.advance(minutes=4, seconds=55)  # the warning showed a minute ago; the stamp is 4 min 55 s old
    kept = signed_in.post(KEEP, **JSON)
    assert kept.status_code == 200 and kept.json() == {"signedIn": True, "idleSeconds": 290}
    clock.advance(minutes=3)  # 7 min 55 s after the last page, 3 min after "Stay signed in"
    assert signed_in.get(reverse("account")).status_code == 200


def test_without_it_the_session_ends(signed_in, clock):
    assert signed_in.get(reverse("account")).status_code == 200
    clock.advance(minutes=5, seconds=5)
    assert signed_in.get(reverse("account"))["Location"].startswith(reverse("login"))


def test_too_late_the_session_is_not_brought_back(signed_in, clock):
    signed_in.get(reverse("account"))
    clock.advance(minutes=5, seconds=5)
    late = signed_in.post(KEEP, **JSON)
    assert late.status_code == 401 and late.json() == {"signedIn": False}
    assert "_auth_user_id" not in signed_in.session


def test_the_plain_form_returns_to_the_page_and_keeps_next_inside_the_portal(signed_in, clock):
    back = signed_in.post(KEEP, {"next": "/payments/?page=2"})
    assert back.status_code == 302 and back["Location"] == "/payments/?page=2"
    outside = signed_in.post(KEEP, {"next": "https://evil.example/"})
    assert outside["Location"] == reverse("home")


def test_it_needs_post_and_a_session(client, db):
    assert client.get(KEEP).status_code == 405
    anonymous = client.post(KEEP, **JSON)
    assert anonymous.status_code == 401
    assert security.LAST_ACTIVITY_KEY not in client.session
