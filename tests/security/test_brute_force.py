"""Password guessing: every form of the portal and the admin that checks a password the user already has
(a field with autocomplete="current-password", found by walking the pages) is counted by the sign-in limit
(allauth's, users.adapter): after five wrong guesses from one address, even the right password is refused with
429, and nothing is signed in or changed. Found generically, so a later form that checks a password is covered or
the walk test fails."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache

from tests.security.conftest import body, signed_in
from tests.security.pages import pages

pytestmark = pytest.mark.django_db


class PasswordForms(HTMLParser):
    """POST forms holding an <input autocomplete="current-password">: (action, fields, password field)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str], str]] = []
        self._form: tuple[str, dict[str, str], list[str]] | None = None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "form" and (values.get("method") or "").lower() == "post":
            self._form = (values.get("action") or "", {}, [])
        elif self._form is not None and tag in {"input", "select", "textarea"} and values.get("name"):
            self._form[1][values["name"]] = values.get("value") or ""
            if values.get("autocomplete") == "current-password":
                self._form[2].append(values["name"])

    def handle_endtag(self, tag):
        if tag == "form" and self._form is not None:
            action, fields, passwords = self._form
            if passwords:
                self.found.append((action, fields, passwords[0]))
            self._form = None


def password_forms(world) -> dict[str, tuple[str, dict[str, str], str, bool]]:
    """url -> (action, fields, password field, needs sign-in) of every page with a current-password field."""
    found = {}
    for who in (None, world.owner, world.superuser):
        client = signed_in(who)
        for page in pages(world):
            response = client.get(page.url)
            if response.status_code != 200 or not response.get("Content-Type", "").startswith("text/html"):
                continue
            parser = PasswordForms()
            parser.feed(body(response))
            for action, fields, field in parser.found:
                found.setdefault(page.url, (action or page.url, fields, field, who is not None))
    return found


def test_every_password_check_is_locked_out_after_five_guesses(world, password):
    forms = password_forms(world)
    # The sign-in (the admin's sends there), re-authentication and the password change at least.
    assert {"/auth/sign-in/", "/auth/confirm-password/", "/auth/password/change/"} <= set(forms)
    limit = django_settings.SIGN_IN_FAILURES
    for url, (action, fields, field, needs_user) in forms.items():
        cache.clear()
        user = world.superuser if url.startswith("/admin/") else world.owner
        client = signed_in(user if needs_user else None)
        data = {**fields, "login": user.username} if "login" in fields else dict(fields)
        for name in ("password1", "password2"):
            if name in data:
                data[name] = "a-new-and-long-password-42"
        statuses = [client.post(action, {**data, field: f"guess-{n}"}).status_code for n in range(limit)]
        assert statuses == [200] * limit, (url, statuses)
        right = client.post(action, {**data, field: password if user == world.owner else "x" * 20})
        assert right.status_code == 429, (url, right.status_code)
        user.refresh_from_db()
        assert user.check_password(password if user == world.owner else "x" * 20), url
        if not needs_user:
            assert "_auth_user_id" not in client.session, url


def test_the_admins_uncounted_password_form_is_not_reachable(world):
    # Django's admin checks the old password with check_password(), unseen by the limit: the portal sends
    # staff to its own counted form instead.
    response = signed_in(world.superuser).get("/admin/password_change/")
    assert response.status_code == 302 and response["Location"] == "/auth/password/change/"
