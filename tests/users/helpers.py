"""Helpers of the sign-up tests: posting the pages as a browser would, and reading the mails (signing in:
tests/signin.py)."""

from __future__ import annotations

import re
from unittest import mock

from django.core import mail
from django.urls import reverse

GOOD_PASSWORD = "fjord-glacier-lantern-42"


def sign_up(client, email="New.Person@Example.com", password1=GOOD_PASSWORD, password2=None, query="", **extra):
    return client.post(
        reverse("account_signup") + query,
        {"email": email, "password1": password1, "password2": password2 or password1, **extra},
    )


def mails_to(address: str) -> list:
    return [message for message in mail.outbox if address.lower() in [to.lower() for to in message.to]]


def code_in(message) -> str:
    """The confirmation code of a mail (the line that is the code alone)."""
    match = re.search(r"^\s*([A-Z0-9]{4}-[A-Z0-9]{4})\s*$", message.body, re.M)
    assert match, message.body
    return match.group(1)


def confirm(client, code: str, ip="192.0.2.10"):
    return client.post(reverse("account_email_verification_sent"), {"code": code}, REMOTE_ADDR=ip)


def ratelimit_clock(offset_seconds: float):
    """allauth's rate limits read time.time(): move them ``offset_seconds`` ahead."""
    import time

    real = time.time
    return mock.patch("allauth.core.internal.ratelimit.time.time", lambda: real() + offset_seconds)
