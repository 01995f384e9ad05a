"""Settings fail loudly, naming the variable; production refuses weak secrets and passes check --deploy."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_ENV": "production",
    "SECRET_KEY": secrets.token_urlsafe(64),
    "ALLOWED_HOSTS": "portal.example.com",
    "BANK_BASE_URL": "https://bank.example.com/psd2",
    "PORTAL_BASE_URL": "https://portal.example.com",
    "EMAIL_URL": "smtp+tls://mailer:mail-password@smtp.example.com:587",
    "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
    "FIELD_HASH_KEY": secrets.token_hex(32),
    "BANK_RESPONSE_CERT": str(ROOT / "var/pki/bank-signing.pem"),  # the bank's seal (`make certs`)
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "SECRET_KEY"))}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("DATABASE_URL", "mysql://u@h/db", "DATABASE_URL: unsupported database scheme"),
        ("DATABASE_URL", "postgres://u@h:5432/", "DATABASE_URL: the database URL names no database"),
        ("REDIS_URL", "redis://127.0.0.1:port/0", "REDIS_URL: malformed port"),
        ("REDIS_URL", "http://127.0.0.1:6379", "REDIS_URL: expected redis://"),
        ("BANK_BASE_URL", "bank.example.com", "BANK_BASE_URL: expected an absolute http or https address"),
        ("BANK_BASE_URL", "https://bank.example.com/?x=1", "BANK_BASE_URL: must not carry a query"),
        ("BANK_SCA_URL", "sca.bank.example.com", "BANK_SCA_URL: expected an absolute http or https address"),
        ("PORTAL_BASE_URL", "https://:8000", "PORTAL_BASE_URL: expected an absolute"),
        ("BANK_SIGNING_KEY", "/nonexistent/key.pem", "BANK_SIGNING_KEY: no such file"),
        ("BANK_SIGNING_CERT", "/nonexistent/cert.pem", "BANK_SIGNING_CERT: no such file"),
        ("BANK_CA_BUNDLE", "/nonexistent/ca.pem", "BANK_CA_BUNDLE: no such file"),
        ("BANK_TIMEOUT", "soon", "BANK_TIMEOUT: expected a number"),
        ("BANK_TIMEOUT", "nan", "BANK_TIMEOUT: expected a finite number above 0"),
        ("BANK_TIMEOUT", "-5", "BANK_TIMEOUT: expected a finite number above 0"),
        ("BANK_RESPONSE_MAX_AGE", "0", "BANK_RESPONSE_MAX_AGE: expected a finite number above 0"),
        ("BANK_RESPONSE_SIGNATURES", "maybe", "BANK_RESPONSE_SIGNATURES: expected true or false"),
        ("BANK_RESPONSE_CERT", "/nonexistent/seal.pem", "BANK_RESPONSE_CERT: no such file"),
        ("EMAIL_URL", "smtp://user@host:notaport", "EMAIL_URL: malformed e-mail URL"),
        ("DEBUG", "maybe", "DEBUG: expected true or false"),
        ("DJANGO_ENV", "staging", "DJANGO_ENV: expected development, test or production"),
    ],
)
def test_a_settings_mistake_stops_start_up_naming_the_variable(variable, value, expected):
    result = manage("check", **{variable: value})
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"configuration error: {expected}" in result.stderr


def test_secret_file_variant_is_read(tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text(PRODUCTION["SECRET_KEY"] + "\n")
    env = {**PRODUCTION, "SECRET_KEY_FILE": str(secret_file)}
    del env["SECRET_KEY"]
    result = manage("check", "--deploy", "--fail-level", "WARNING", **env)
    assert result.returncode == 0, result.stderr


def test_client_certificate_needs_its_key():
    result = manage("check", BANK_TLS_CLIENT_CERT=str(ROOT / "var/pki/tpp-qseal.pem"))
    assert result.returncode == 2
    assert "BANK_TLS_CLIENT_KEY" in result.stderr


@pytest.mark.parametrize(
    "secret_key",
    ["", "django-insecure-" + "x" * 60, "short-but-real", "a" * 80],
)
def test_production_refuses_to_start_without_a_real_secret_key(secret_key):
    result = manage("check", **{**PRODUCTION, "SECRET_KEY": secret_key})
    assert result.returncode == 2
    assert "SECRET_KEY" in result.stderr


def test_production_refuses_debug_and_plain_http_bank():
    assert "DEBUG: must be false" in manage("check", **PRODUCTION, DEBUG="true").stderr
    assert (
        "BANK_BASE_URL: production talks to the bank over https only"
        in manage("check", **{**PRODUCTION, "BANK_BASE_URL": "http://bank.example.com"}).stderr
    )


def test_production_refuses_to_start_without_the_banks_seal_unless_told_on_purpose():
    without = {name: value for name, value in PRODUCTION.items() if name != "BANK_RESPONSE_CERT"}
    refused = manage("check", **without)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "configuration error: BANK_RESPONSE_CERT: production verifies the bank's signed answers" in (
        refused.stderr
    )
    assert "BANK_RESPONSE_SIGNATURES=off" in refused.stderr

    off = manage("check", "--deploy", "--fail-level", "WARNING", **without, BANK_RESPONSE_SIGNATURES="off")
    assert off.returncode == 0, off.stdout + off.stderr
    warnings = [line for line in off.stderr.splitlines() if "BANK_RESPONSE_SIGNATURES=off" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], off.stderr
    assert "the bank's answers are not verified" in warnings[0]

    seal = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert seal.returncode == 0 and "BANK_RESPONSE_SIGNATURES" not in seal.stderr, seal.stderr


def test_signatures_off_and_a_seal_contradict_each_other():
    seal = str(ROOT / "var/pki/bank-signing.pem")
    result = manage("check", BANK_RESPONSE_SIGNATURES="off", BANK_RESPONSE_CERT=seal)
    assert result.returncode == 2
    assert "configuration error: BANK_RESPONSE_SIGNATURES: off, but BANK_RESPONSE_CERT is set" in result.stderr


def test_production_needs_a_mail_server_and_an_https_portal_address():
    console = manage("check", **{**PRODUCTION, "EMAIL_URL": "consolemail://"})
    assert "EMAIL_URL: production needs an SMTP server" in console.stderr
    unset = {**PRODUCTION}
    del unset["PORTAL_BASE_URL"]
    assert "PORTAL_BASE_URL: required in production and not set" in manage("check", **unset).stderr
    plain = manage("check", **{**PRODUCTION, "PORTAL_BASE_URL": "http://portal.example.com"})
    assert "PORTAL_BASE_URL: production serves the portal over https only" in plain.stderr


def test_every_missing_production_variable_is_named_at_once_one_line_each():
    required = {**PRODUCTION}
    for name in ("SECRET_KEY", "ALLOWED_HOSTS", "EMAIL_URL", "FIELD_HASH_KEY"):
        del required[name]
    result = manage("check", **required, EMAIL_URL="")  # empty counts as unset
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"configuration error: {name}: required in production and not set (nor {name}_FILE)"
        for name in ("SECRET_KEY", "ALLOWED_HOSTS", "EMAIL_URL", "FIELD_HASH_KEY")
    ]


def test_gunicorn_stops_with_the_missing_variables_and_no_traceback():
    """compose's web command with the shipped configuration: the worker names what is missing and gunicorn stops
    ("App failed to load") instead of restarting workers that fail the same way."""
    from devtools.livebank import free_port

    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "SECRET_KEY"))}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "tpp_portal.wsgi",
            "--config",
            "tpp_portal/gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{free_port()}",
        ],
        cwd=ROOT,
        env={**environment, **PRODUCTION, "FIELD_HASH_KEY": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output, output
    assert "configuration error: FIELD_HASH_KEY: required in production and not set" in output
    assert "App failed to load." in output


def test_the_mail_server_comes_from_email_url():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings as s; "
            "print(s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS, s.EMAIL_HOST_USER)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tpp_portal.settings", **PRODUCTION},
    )
    assert result.stdout.split() == [
        "django.core.mail.backends.smtp.EmailBackend",
        "smtp.example.com",
        "587",
        "True",
        "mailer",
    ], result.stderr


def test_production_settings_pass_check_deploy_without_warnings():
    result = manage("check", "--deploy", "--fail-level", "DEBUG", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stderr


@pytest.mark.parametrize(
    ("sca_url", "expected"),
    [
        ("", ["'self'", "https://bank.example.com/psd2"]),
        (
            "https://sca.bank.example.com:8443",
            ["'self'", "https://bank.example.com/psd2", "https://sca.bank.example.com:8443"],
        ),
    ],
)
def test_the_banks_sca_pages_are_a_form_target(sca_url, expected):
    """The portal's forms lead to the bank's SCA pages through a redirect (connect, pay): the policy's form-action
    names the bank's address and, when they are elsewhere, the SCA pages' own."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from django.conf import settings as s; "
            "print(json.dumps(s.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action']))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tpp_portal.settings",
            "BANK_BASE_URL": "https://bank.example.com/psd2",
            "BANK_SCA_URL": sca_url,
        },
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected


def test_development_defaults_need_no_server():
    result = manage("check", "--database", "default", DATABASE_URL="", REDIS_URL="")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("count", "expected"), [("0", "0 0"), ("1", "1 1")])
def test_trusted_proxies_decide_where_the_client_address_comes_from(count, expected):
    printed = _settings_printed(
        "print(s.TRUSTED_PROXY_COUNT, s.ALLAUTH_TRUSTED_PROXY_COUNT)", TRUSTED_PROXY_COUNT=count
    )
    assert printed == expected


@pytest.mark.parametrize(
    ("redis_url", "expected"),
    [
        ("redis://127.0.0.1:6379/0", "django.contrib.sessions.backends.cache RedisCache"),
        ("", "django.contrib.sessions.backends.db FileBasedCache"),
    ],
)
def test_sessions_live_in_redis_when_there_is_one(redis_url, expected):
    # With Redis, a sign-in writes one row to the database instead of three (the session twice): the settings'
    # comment. Without, the database keeps them (the file cache culls entries at random when full).
    printed = _settings_printed(
        "print(s.SESSION_ENGINE, s.CACHES['default']['BACKEND'].rsplit('.', 1)[1])", REDIS_URL=redis_url
    )
    assert printed == expected


def _settings_printed(code: str, **env: str) -> str:
    """What ``code`` prints about the settings (``s``) in a new interpreter with ``env`` added: settings are read
    once per process."""
    result = subprocess.run(
        [sys.executable, "-c", f"from django.conf import settings as s; {code}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tpp_portal.settings", **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()
