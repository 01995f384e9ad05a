"""Creates the demo logins of `make run` once, and prints where to sign in.

Passwords are generated on first use and kept in ``var/demo-credentials.json`` (mode 0600, never committed);
later runs reuse them, so running `make run` again changes nothing.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.urls import reverse

DEMO_USERS = (
    {"username": "demo", "email": "demo@example.invalid", "is_staff": False},
    {"username": "staff", "email": "staff@example.invalid", "is_staff": True},
)


class Command(BaseCommand):
    help = "Create the demo portal users (once) and print the addresses and credentials."

    def add_arguments(self, parser):
        parser.add_argument("--portal-url", default=settings.PORTAL_BASE_URL)
        parser.add_argument("--bank-url", default=settings.BANK_BASE_URL)
        parser.add_argument("--credentials-file", default=str(settings.VAR_DIR / "demo-credentials.json"))

    def handle(self, *args, portal_url: str, bank_url: str, credentials_file: str, **options):
        path = Path(credentials_file)
        stored: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        User = get_user_model()
        with transaction.atomic():
            for spec in DEMO_USERS:
                password = stored.get(spec["username"]) or secrets.token_urlsafe(12)
                user, created = User.objects.get_or_create(
                    username=spec["username"],
                    defaults={
                        "email": spec["email"],
                        "is_staff": spec["is_staff"],
                        "is_superuser": spec["is_staff"],
                    },
                )
                if created or spec["username"] not in stored:
                    user.set_password(password)
                    user.save(update_fields=["password"])
                # Made here, not signed up: the address counts as confirmed (no code to type at sign-in).
                EmailAddress.objects.update_or_create(
                    user=user, email=spec["email"], defaults={"verified": True, "primary": True}
                )
                stored[spec["username"]] = password
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(stored, handle)

        out = self.stdout.write
        out("")
        out(self.style.SUCCESS("TPP portal:    ") + f"{portal_url}/")
        out(self.style.SUCCESS("Staff admin:   ") + f"{portal_url}/admin/")
        out(self.style.SUCCESS("Sandbox bank:  ") + f"{bank_url}/")
        for spec in DEMO_USERS:
            role = "staff" if spec["is_staff"] else "customer"
            out(f"Sign in ({role}): user {spec['username']!r}, password {stored[spec['username']]!r}")
        out(
            "Staff need a second factor: the first sign-in as 'staff' opens "
            f"{portal_url}{reverse('mfa_index')}; choose the authenticator app, scan its QR code with an "
            "authenticator app (or type the secret key shown), enter the 6-digit code, and keep the recovery "
            "codes. Every later sign-in asks for a code."
        )
        out("At the bank's SCA screen use a sandbox identity number, e.g. 13039319955 (Private Customer 1).")
        out("Press Ctrl-C to stop every process.")
        out("")
