"""What signing in means for the tests: the sign-in page's address and its form's fields, and the sign-in of
Django's test client.

Each way a test reaches the portal has at most one sign-in, built on these names:

* Django's test client: :func:`sign_in` here;
* a requests session against a running product: ``tests.product.sign_in``;
* a Playwright page against a running product: ``tests.e2e.conftest.sign_in`` (it fills the form as a person
  does, by label or by keyboard, and answers the second factor);
* a Playwright page against the test server, when the sign-in itself is not under test: :func:`force_login_page`
  (a session made by ``force_login`` and handed to the browser as its cookie, as the other tests sign in).

Two tests sign in their own way on purpose, with these names: the production smoke test's forged
X-Forwarded-For through the proxy, and the browser payment journey's way in from the home page's link.
"""

from __future__ import annotations

from django.conf import settings
from django.test import Client

#: The sign-in page (allauth's ``account_login``; tests/users/test_sign_in_out.py checks that they agree).
SIGN_IN_PATH = "/auth/sign-in/"
#: The sign-in form's fields: the e-mail address or user name, the password.
LOGIN_FIELD = "login"
PASSWORD_FIELD = "password"
#: The field of the second factor's page (the authenticator app's code).
CODE_FIELD = "code"


def sign_in_form(login: str, password: str) -> dict[str, str]:
    """The sign-in form, filled."""
    return {LOGIN_FIELD: login, PASSWORD_FIELD: password}


def sign_in(
    client: Client, login: str, password: str, ip: str = "192.0.2.10", query: str = "", follow: bool = False
):
    """Post the sign-in form with Django's test client, from ``ip`` (allauth's limits count per address);
    ``query`` is added to the address (``?next=...``), ``follow`` follows the redirects."""
    return client.post(SIGN_IN_PATH + query, sign_in_form(login, password), REMOTE_ADDR=ip, follow=follow)


def force_login_page(page, base_url: str, user) -> None:
    """Give a Playwright page the session of ``user`` without the sign-in page (``force_login``): for the browser
    tests of other pages; the sign-in page itself is tested through the page."""
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": base_url}])


def session_queries() -> int:
    """The queries a signed-in request spends reading its session: one from the database, none from the cache
    (the portal keeps sessions in Redis when it has REDIS_URL, as CI's second pass does)."""
    return 0 if settings.SESSION_ENGINE == "django.contrib.sessions.backends.cache" else 1
