"""Settings of the sandbox bank, a service separate from the portal (own database, own process).

Read from the environment with django-environ; a malformed value stops start-up naming the variable.
"""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()


def _read(name: str, default: str) -> str:
    return env.str(name, default=default) or default


VAR_DIR = Path(_read("VAR_DIR", str(BASE_DIR / "var")))
PKI_DIR = VAR_DIR / "pki"

BANK_SIM_ENV = _read("BANK_SIM_ENV", "development")
PRODUCTION = BANK_SIM_ENV == "production"
SECRET_KEY = _read("BANK_SIM_SECRET_KEY", "bank-simulator-insecure-development-key-0123456789-abcdefghijkl")
if PRODUCTION and SECRET_KEY.startswith("bank-simulator-insecure"):
    raise ImproperlyConfigured("BANK_SIM_SECRET_KEY: set a real secret key when BANK_SIM_ENV=production")
DEBUG = False
ALLOWED_HOSTS = [
    h.strip() for h in _read("BANK_SIM_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")
]

BANK_SIM_PUBLIC_URL = _read("BANK_SIM_PUBLIC_URL", f"http://127.0.0.1:{_read('PORT', '8001')}").rstrip("/")
if not BANK_SIM_PUBLIC_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"BANK_SIM_PUBLIC_URL: expected an absolute http(s) address, got {BANK_SIM_PUBLIC_URL!r}"
    )

_database_url = _read("BANK_SIM_DATABASE_URL", f"sqlite:///{VAR_DIR / 'bank.sqlite3'}")
try:
    DATABASES = {"default": env.db_url_config(_database_url)}
except Exception as exc:  # django-environ raises several types for malformed URLs
    raise ImproperlyConfigured(f"BANK_SIM_DATABASE_URL: malformed database URL ({exc})") from exc
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

BANK_SIM_TRUSTED_CAS = [
    Path(p.strip()) for p in _read("BANK_SIM_TRUSTED_CAS", str(PKI_DIR / "ca.pem")).split(",") if p.strip()
]
for _ca in BANK_SIM_TRUSTED_CAS:
    if not _ca.is_file():
        raise ImproperlyConfigured(
            f"BANK_SIM_TRUSTED_CAS: no such file {str(_ca)!r} (run `make certs` for the development CA)"
        )

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "bank_simulator",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "bank_simulator.urls"
WSGI_APPLICATION = "bank_simulator.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
USE_TZ = True
TIME_ZONE = "Europe/Oslo"
LANGUAGE_CODE = "en"
USE_I18N = False
STATIC_URL = "static/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": _read("LOG_LEVEL", "INFO")},
}
