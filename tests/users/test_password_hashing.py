"""Passwords are hashed with Argon2id; a hash of an older hasher still signs in and is rewritten as Argon2id."""

import pytest
from django.contrib.auth.hashers import make_password

from tests.users.helpers import sign_in

pytestmark = pytest.mark.django_db
PASSWORD = "an-old-and-long-password-1"


@pytest.fixture
def real_hashers(settings):
    from tpp_portal import settings as project

    settings.PASSWORD_HASHERS = project.PASSWORD_HASHERS  # the autouse MD5 of the other tests undone


def test_argon2id_is_the_hasher_of_new_passwords(real_hashers, django_user_model):
    user = django_user_model.objects.create_user("new@example.com", "new@example.com", PASSWORD)
    assert user.password.startswith("argon2$argon2id$")


def test_an_old_pbkdf2_hash_is_upgraded_at_sign_in(real_hashers, client, django_user_model):
    user = django_user_model.objects.create_user("old@example.com", "old@example.com")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user.save(update_fields=["password"])
    assert user.password.startswith("pbkdf2_sha256$")

    assert sign_in(client, "old@example.com", PASSWORD).status_code == 302
    user.refresh_from_db()
    assert user.password.startswith("argon2$argon2id$")
    assert user.check_password(PASSWORD)
