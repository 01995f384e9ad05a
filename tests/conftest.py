"""Fixtures of every portal test: alice (owner), bob (another customer), charlie (staff).

django-axes needs the request when a password is checked, so sign users in with ``client.force_login`` (or the
``*_client`` fixtures here), never ``client.login``.

The sandbox bank's tests run from this tree too, with their own settings and no ``django.contrib.auth``:
the user factories are therefore imported inside the fixtures, never at the top of this module.
"""

from __future__ import annotations

import pytest

# Staff roles (operator, support and their clients) and a scripted bank: tests/staff/fixtures.py;
# chromium for the browser tests and the end-to-end suite: tests/browser/fixtures.py.
pytest_plugins = ["tests.staff.fixtures", "tests.browser.fixtures"]


def _users():
    from tests import factories

    return factories


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Real hashing is deliberately slow; the tests check behaviour, not the hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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
    """Staff: uses the admin, and gets no special access to customers' pages."""
    return _users().UserFactory(email="charlie@example.com", is_staff=True)


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
