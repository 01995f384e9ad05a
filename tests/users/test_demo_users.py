"""`manage.py ensure_demo_users` (run by `make run`): the demo staff user has an authenticator app enrolled
already, whose otpauth URI is printed with the logins and kept in the credentials file; its code signs in."""

from __future__ import annotations

import io
import json
import stat
from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.mfa.models import Authenticator
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.second_factor import totp_code
from tests.signin import sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.real_second_factor]


def run(path) -> str:
    out = io.StringIO()
    call_command("ensure_demo_users", credentials_file=str(path), stdout=out)
    return out.getvalue()


def test_the_demo_staff_signs_in_with_the_code_of_the_printed_uri(tmp_path):
    path = tmp_path / "demo-credentials.json"
    output = run(path)
    stored = json.loads(path.read_text())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    uri = stored["staff"]["otpauth_uri"]
    assert uri.startswith("otpauth://totp/") and uri in output
    assert f"user 'staff', password '{stored['staff']['password']}'" in output
    assert "otpauth_uri" not in stored["demo"]  # the customer has none

    browser = Client()
    asked = sign_in(browser, "staff", stored["staff"]["password"], query="?next=/admin/")
    assert asked["Location"] == reverse("mfa_authenticate")
    secret = parse_qs(urlsplit(uri).query)["secret"][0]
    done = browser.post(reverse("mfa_authenticate"), {"code": totp_code(secret)})
    assert done["Location"] == "/admin/"
    assert browser.get("/admin/").status_code == 200


def test_running_it_again_changes_nothing(tmp_path):
    path = tmp_path / "demo-credentials.json"
    run(path)
    first = json.loads(path.read_text())
    run(path)
    assert json.loads(path.read_text()) == first
    assert Authenticator.objects.filter(user__username="staff", type=Authenticator.Type.TOTP).count() == 1


def test_an_older_file_of_passwords_alone_keeps_them(tmp_path):
    path = tmp_path / "demo-credentials.json"
    path.write_text(json.dumps({"demo": "older-demo-pass", "staff": "older-staff-pass"}))
    run(path)
    stored = json.loads(path.read_text())
    assert stored["demo"]["password"] == "older-demo-pass"
    assert stored["staff"]["password"] == "older-staff-pass"
    assert stored["staff"]["otpauth_uri"].startswith("otpauth://totp/")
