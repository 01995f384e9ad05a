"""The sandbox bank's production profile (BANK_SIM_ENV=production): every configuration error at once, one line
each and no traceback, from ``python -m bank_simulator`` and from gunicorn; ``check --deploy`` clean."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from devtools.livebank import free_port

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "BANK_SIM_ENV": "production",
    "BANK_SIM_SECRET_KEY": secrets.token_urlsafe(64),
    "BANK_SIM_ALLOWED_HOSTS": "bank,bank.example.com",
    "BANK_SIM_PUBLIC_URL": "https://bank.example.com:8443",
}


def environment(**variables: str) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith(("BANK_SIM_", "DJANGO_"))}
    return {**found, **{name: value for name, value in variables.items() if value is not None}}


def run_bank_command(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``python -m bank_simulator ARGS`` (a manage.py command of the sandbox bank) with these settings."""
    return subprocess.run(
        [sys.executable, "-m", "bank_simulator", *args],
        cwd=ROOT,
        env=environment(**variables),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_is_clean_in_production():
    result = run_bank_command("check", "--deploy", "--fail-level", "DEBUG", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stderr


def test_the_production_profile_is_https_only_with_secure_cookies_and_csrf():
    program = (
        "from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "'django.middleware.csrf.CsrfViewMiddleware' in s.MIDDLEWARE)"
    )
    production = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=environment(**PRODUCTION, DJANGO_SETTINGS_MODULE="bank_simulator.settings"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert production.stdout.split() == ["True", "31536000", "True", "True", "True"], production.stderr


def test_every_configuration_error_is_one_line_all_at_once_without_a_traceback():
    result = run_bank_command(
        "check",
        BANK_SIM_ENV="production",
        BANK_SIM_SECRET_KEY="bank-simulator-insecure-development-key-0123456789-abcdefghijkl",
        BANK_SIM_PUBLIC_URL="http://bank.example.com",
        BANK_SIM_MAX_PAGE="many",
        BANK_SIM_SANDBOX="maybe",
        BANK_SIM_REQUEST_ID_REPLAY="again",
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        "configuration error: BANK_SIM_SECRET_KEY: production needs a real secret key of at least 50 random "
        "characters",
        "configuration error: BANK_SIM_ALLOWED_HOSTS: required when BANK_SIM_ENV=production",
        "configuration error: BANK_SIM_PUBLIC_URL: expected an absolute https address, got "
        "'http://bank.example.com'",
        "configuration error: BANK_SIM_SANDBOX: expected true or false, got 'maybe'",
        "configuration error: BANK_SIM_REQUEST_ID_REPLAY: expected same, conflict or new, got 'again'",
        "configuration error: BANK_SIM_MAX_PAGE: expected a whole number, got 'many'",
    ]


def test_a_missing_secret_in_production_is_named_without_a_traceback():
    result = run_bank_command("migrate", "--noinput", **{**PRODUCTION, "BANK_SIM_SECRET_KEY": None})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "configuration error: BANK_SIM_SECRET_KEY: production needs a real secret key of at least 50 random "
        "characters"
    ]


def test_gunicorn_stops_with_the_errors_and_no_traceback():
    """compose's bank command with the shipped configuration: the worker writes the errors and gunicorn stops
    ("App failed to load") instead of restarting workers that fail the same way."""
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "bank_simulator.wsgi",
            "--config",
            "bank_simulator/gunicorn.conf.py",
        ],
        cwd=ROOT,
        env=environment(BANK_SIM_ENV="production", BANK_SIM_BIND=f"127.0.0.1:{free_port()}", BANK_SIM_WORKERS="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert "configuration error: BANK_SIM_ALLOWED_HOSTS: required when BANK_SIM_ENV=production" in output
    assert "configuration error: BANK_SIM_PUBLIC_URL: required when BANK_SIM_ENV=production" in output
    assert "App failed to load." in output


def test_the_settings_read_secrets_from_files_through_the_portal_s_strict_reader(tmp_path):
    """common.envconfig, shared with the portal: ``<NAME>_FILE`` holds the value, an unreadable one is reported
    with the other errors."""
    secret = tmp_path / "secret"
    secret.write_text(PRODUCTION["BANK_SIM_SECRET_KEY"] + "\n")
    from_file = {**PRODUCTION, "BANK_SIM_SECRET_KEY": None, "BANK_SIM_SECRET_KEY_FILE": str(secret)}
    result = run_bank_command("check", "--deploy", "--fail-level", "DEBUG", **from_file)
    assert result.returncode == 0, result.stdout + result.stderr

    missing = tmp_path / "missing"
    result = run_bank_command(
        "check", **{**from_file, "BANK_SIM_SECRET_KEY_FILE": str(missing), "BANK_SIM_SANDBOX": "maybe"}
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"configuration error: BANK_SIM_SECRET_KEY_FILE: cannot read {str(missing)!r}: No such file or directory",
        "configuration error: BANK_SIM_SECRET_KEY: production needs a real secret key of at least 50 random "
        "characters",
        "configuration error: BANK_SIM_SANDBOX: expected true or false, got 'maybe'",
    ]
