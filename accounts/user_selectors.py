"""Reads about portal users (people who sign in), kept apart from the bank-connection selectors."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q


def user_email_taken(*, email: str) -> bool:
    """True when a user already signs in with, or receives mail at, this address (any letter case)."""
    return get_user_model().objects.filter(Q(username__iexact=email) | Q(email__iexact=email)).exists()
