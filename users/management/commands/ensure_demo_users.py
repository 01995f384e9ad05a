"""Creates the demo logins of `make run` once, and prints where to sign in.

Passwords are generated on first use and kept in ``var/demo-credentials.json`` (mode 0600, never committed);
later runs reuse them, so running `make run` again changes nothing. The demo staff user has a second factor
enrolled already (a password alone never enrols one: users.services): an authenticator app whose otpauth URI is
printed with the logins and kept in the same file, ``{"staff": {"password": ..., "otpauth_uri": ...}}``.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from allauth.account.models import EmailAddress
from allauth.mfa.adapter import get_adapter as get_mfa_adapter
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

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
        stored = _read(path)
        User = get_user_model()
        with transaction.atomic():
            for spec in DEMO_USERS:
                entry = stored.setdefault(spec["username"], {})
                password = entry.get("password") or secrets.token_urlsafe(12)
                user, created = User.objects.get_or_create(
                    username=spec["username"],
                    defaults={
                        "email": spec["email"],
                        "is_staff": spec["is_staff"],
                        "is_superuser": spec["is_staff"],
                    },
                )
                if created or "password" not in entry:
                    user.set_password(password)
                    user.save(update_fields=["password"])
                # Made here, not signed up: the address counts as confirmed (no code to type at sign-in).
                EmailAddress.objects.update_or_create(
                    user=user, email=spec["email"], defaults={"verified": True, "primary": True}
                )
                entry["password"] = password
                if spec["is_staff"]:
                    _second_factor(user, entry)
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
            entry = stored[spec["username"]]
            out(f"Sign in ({role}): user {spec['username']!r}, password {entry['password']!r}")
            if entry.get("otpauth_uri"):
                out(
                    f"  second factor: add {entry['otpauth_uri']} to an authenticator app (or type its secret "
                    f"{_secret_of(entry['otpauth_uri'])}) and give its 6-digit code after the password"
                )
            elif spec["is_staff"]:
                out("  second factor: the authenticator app or security key enrolled earlier for this user")
        out("At the bank's SCA screen use a sandbox identity number, e.g. 13039319955 (Private Customer 1).")
        out("Press Ctrl-C to stop every process.")
        out("")


def _read(path: Path) -> dict[str, dict[str, str]]:
    """The stored logins; an older file held ``{"demo": "<password>", ...}``."""
    stored = json.loads(path.read_text()) if path.exists() else {}
    return {name: value if isinstance(value, dict) else {"password": value} for name, value in stored.items()}


def _secret_of(uri: str) -> str:
    return parse_qs(urlsplit(uri).query).get("secret", [""])[0]


def _second_factor(user, entry: dict[str, str]) -> None:
    """The demo staff user's authenticator app: the one of the file's URI, enrolled when the user has none (a
    fresh database); a factor enrolled otherwise (through the pages) is kept, and the file says nothing of it."""
    secret = _secret_of(entry.get("otpauth_uri", ""))
    totp = Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).first()
    webauthn = Authenticator.objects.filter(user=user, type=Authenticator.Type.WEBAUTHN).exists()
    if totp is None and not webauthn:
        secret = secret or generate_totp_secret()
        TOTP.activate(user, secret)
        if not Authenticator.objects.filter(user=user, type=Authenticator.Type.RECOVERY_CODES).exists():
            RecoveryCodes.activate(user)
        entry["otpauth_uri"] = get_mfa_adapter().build_totp_url(user, secret)
    elif totp is None or not secret or get_mfa_adapter().decrypt(totp.data["secret"]) != secret:
        entry.pop("otpauth_uri", None)
