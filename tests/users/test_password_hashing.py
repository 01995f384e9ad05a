"""Passwords are hashed with Argon2id, OWASP's parameters (m=19 MiB, t=2, p=1: users/hashers.py); a hash of an
older hasher, or of Argon2 with Django's heavier defaults, still signs in and is rewritten at that sign-in."""

import pytest
from django.contrib.auth.hashers import Argon2PasswordHasher, get_hasher, make_password

from tests.signin import sign_in

pytestmark = pytest.mark.django_db
PASSWORD = "an-old-and-long-password-1"


@pytest.fixture
def real_hashers(settings):
    from tpp_portal import settings as project

    settings.PASSWORD_HASHERS = project.PASSWORD_HASHERS  # the autouse MD5 of the other tests undone


OWASP = "argon2$argon2id$v=19$m=19456,t=2,p=1$"  # the start of a hash with the portal's parameters


def test_argon2id_is_the_hasher_of_new_passwords(real_hashers, django_user_model):
    user = django_user_model.objects.create_user("new@example.com", "new@example.com", PASSWORD)
    assert user.password.startswith(OWASP)
    assert user.check_password(PASSWORD) and not user.check_password(PASSWORD + "x")


def test_an_old_pbkdf2_hash_is_upgraded_at_sign_in(real_hashers, client, django_user_model):
    user = django_user_model.objects.create_user("old@example.com", "old@example.com")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user.save(update_fields=["password"])
    assert user.password.startswith("pbkdf2_sha256$")

    assert sign_in(client, "old@example.com", PASSWORD).status_code == 302
    user.refresh_from_db()
    assert user.password.startswith(OWASP)
    assert user.check_password(PASSWORD)


def test_an_argon2_hash_with_djangos_defaults_is_rewritten_with_the_portals_parameters_at_sign_in(
    real_hashers, client, django_user_model
):
    # The hashes made before users/hashers.py: Django's own Argon2 hasher (100 MiB, 8 lanes), the same algorithm.
    heavy = Argon2PasswordHasher().encode(PASSWORD, Argon2PasswordHasher().salt())
    assert heavy.startswith("argon2$argon2id$v=19$m=102400,t=2,p=8$")
    assert get_hasher("argon2").verify(PASSWORD, heavy)  # the portal's hasher reads it
    user = django_user_model.objects.create_user("heavy@example.com", "heavy@example.com")
    user.password = heavy
    user.save(update_fields=["password"])

    assert sign_in(client, "heavy@example.com", "a-wrong-password-1").status_code == 200
    user.refresh_from_db()
    assert user.password == heavy  # a wrong password rewrites nothing

    assert sign_in(client, "heavy@example.com", PASSWORD).status_code == 302
    user.refresh_from_db()
    assert user.password.startswith(OWASP)
    assert user.check_password(PASSWORD)
