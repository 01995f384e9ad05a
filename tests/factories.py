"""factory_boy factories shared by the portal tests."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

DEFAULT_PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    """A customer who signs in with their e-mail address (the username), as sign-up creates them."""

    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"customer{n}@example.com")
    username = factory.LazyAttribute(lambda user: user.email)
    password = factory.django.Password(DEFAULT_PASSWORD)
