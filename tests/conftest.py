"""Fixtures of every portal test: alice (owner), bob (another customer), charlie (staff).

Sign users in with ``client.force_login`` (or the ``*_client`` fixtures here): allauth's sign-in limits need the
request when a password is checked, which ``client.login`` does not give. A staff user signed in that way gets
an authenticator app and a session that counts as signed in with it (``staff_second_factor``), as the real
sign-in gives after the code; tests of the second factor itself mark themselves ``real_second_factor``.

The sandbox bank's tests run from this tree too, with their own settings and no ``django.contrib.auth``:
the user factories are therefore imported inside the fixtures, never at the top of this module.
"""

from __future__ import annotations

import pytest

# Staff roles (operator, support and their clients) and the bank client with a TPP seal of the test's own:
# tests/staff/fixtures.py; chromium for the browser tests and the end-to-end suite: tests/browser/fixtures.py.
pytest_plugins = ["tests.staff.fixtures", "tests.browser.fixtures"]


def _users():
    from tests import factories

    return factories


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashing is deliberately slow; the tests check behaviour, not the hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the site's default language: a request the test client made in bokmål leaves bokmål
    active in the thread (the locale middleware activates, nothing deactivates), which the next test would read."""
    from django.utils import translation

    with translation.override(None):
        translation.activate("en")
        yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _own_cache_and_inline_mails(settings, request):
    """Each test its own empty cache (allauth counts sign-in failures and mails there: one test's failures must
    not lock out the next), and the account mails sent by the page itself instead of the worker, so that
    ``mail.outbox`` holds them."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": request.node.nodeid}
    }
    settings.ACCOUNT_MAIL_QUEUED = False
    yield
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def staff_second_factor(request):
    """Staff signed in by force_login have a second factor and used it (see the module's doc)."""
    if request.node.get_closest_marker("real_second_factor"):
        yield
        return
    from django.contrib.auth.signals import user_logged_in

    def receiver(sender, request, user, **kwargs):
        from allauth.mfa.models import Authenticator

        from users.security import needs_second_factor, session_mark_second_factor

        if request is None or not needs_second_factor(user):
            return
        if not Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).exists():
            Authenticator.objects.create(user=user, type=Authenticator.Type.TOTP, data={"secret": "test"})
        session_mark_second_factor(request)

    user_logged_in.connect(receiver, dispatch_uid="tests.staff_second_factor")
    yield
    user_logged_in.disconnect(dispatch_uid="tests.staff_second_factor")


@pytest.fixture
def override_bank():
    """``override_bank(adapter)``: every bank client the portal builds during the test sends through
    ``adapter`` (a requests transport adapter, in the portal's tests ``tests.bankfake.FakeBank``) instead of the
    network (``core.bank.use_test_bank``); ends with the test. Returns the adapter."""
    from core import bank as portal_bank

    def install(adapter):
        portal_bank.use_test_bank(adapter, sleep=getattr(adapter, "sleep", None))
        return adapter

    yield install
    portal_bank.use_test_bank(None)


@pytest.fixture
def fake_bank(override_bank, settings):
    """The bank of the test: a ``tests.bankfake.FakeBank`` behind every client the portal builds, signing its
    answers with the development bank seal (believed when the test sets BANK_RESPONSE_CERT to it)."""
    from urllib.parse import urlsplit

    from tests.bankfake import FakeBank, development_seal

    seal = development_seal(settings.PKI_DIR)
    return override_bank(FakeBank(seal=seal, prefix=urlsplit(settings.BANK_BASE_URL).path.rstrip("/")))


@pytest.fixture
def password() -> str:
    """The password of alice, bob and charlie."""
    return _users().DEFAULT_PASSWORD


@pytest.fixture
def alice(db):
    """The owner of the objects under test."""
    return _users().UserFactory(email="alice@example.com")


@pytest.fixture
def bob(db):
    """Another customer, who must never see alice's objects."""
    return _users().UserFactory(email="bob@example.com")


@pytest.fixture
def charlie(db):
    """Staff: uses the admin and the sandbox area (both its permissions), and gets no special access to
    customers' pages."""
    from django.contrib.auth.models import Permission

    user = _users().UserFactory(email="charlie@example.com", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="sandbox_admin"))
    return user


def _client_for(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(client, alice):
    return _client_for(client, alice)


@pytest.fixture
def bob_client(bob):
    """bob's own browser: a test may use it beside alice's (``client``) without either signing the other out."""
    from django.test import Client

    return _client_for(Client(), bob)


@pytest.fixture
def charlie_client(charlie):
    from django.test import Client

    return _client_for(Client(), charlie)
