"""Settings of the sandbox bank, a service separate from the portal (own database, own process).

Read from the environment through the strict reader the portal uses too (``common.envconfig.Env``: secrets from
``<NAME>_FILE``, an empty value counts as unset, booleans read strictly). Every malformed or missing value is
collected in ``_problems`` and reported together at the end, one line each (``python -m bank_simulator`` prints
them without a traceback); ``BANK_SIM_ENV=production`` needs a real secret key, an https public address and the
host names, and passes ``check --deploy``.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from common.envconfig import Env

BASE_DIR = Path(__file__).resolve().parent.parent
env = Env()
_problems: list[str] = []  # every configuration error, raised together at the end of this file


def _problem(message: str, fallback=None):
    """Record a configuration error; the setting takes ``fallback`` so that the rest can still be read."""
    _problems.append(message)
    return fallback


def _read(name: str, default: str) -> str:
    """The text of ``name`` (or of the file ``<name>_FILE`` names), ``default`` when unset or empty."""
    try:
        return env.str(name, default=default)
    except ImproperlyConfigured as exc:  # an unreadable <name>_FILE: reported with the others
        return _problem(str(exc), default)


def _flag(name: str, default: bool) -> bool:
    try:
        return env.bool(name, default=default)
    except ImproperlyConfigured as exc:
        return _problem(str(exc), default)


def _decimal(name: str) -> Decimal | None:
    raw = _read(name, "").strip()
    if not raw:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return _problem(f"{name}: expected an amount such as 500 or 499.99, got {raw!r}")
    if not value.is_finite() or value < 0:
        return _problem(f"{name}: expected an amount of zero or more, got {raw!r}")
    return value


def _batch_times(name: str, default: str) -> tuple[dt.time, ...]:
    raw = _read(name, default)
    times = []
    for part in raw.split(","):
        try:
            hours, minutes = part.strip().split(":")
            if len(hours) != 2 or len(minutes) != 2:
                raise ValueError
            times.append(dt.time(int(hours), int(minutes)))
        except ValueError:
            return _problem(f"{name}: expected comma-separated HH:MM times (UTC), got {raw!r}", ())
    if len(set(times)) != len(times):
        return _problem(f"{name}: a time is given twice in {raw!r}", ())
    return tuple(sorted(times))


def _int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = _read(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        return _problem(f"{name}: expected a whole number, got {raw!r}", default)
    if value < minimum:
        return _problem(f"{name}: must be at least {minimum}, got {value}", default)
    return value


VAR_DIR = Path(_read("VAR_DIR", str(BASE_DIR / "var")))
PKI_DIR = VAR_DIR / "pki"

BANK_SIM_ENV = _read("BANK_SIM_ENV", "development")
PRODUCTION = BANK_SIM_ENV == "production"
SECRET_KEY = _read("BANK_SIM_SECRET_KEY", "bank-simulator-insecure-development-key-0123456789-abcdefghijkl")
if PRODUCTION and (
    SECRET_KEY.startswith("bank-simulator-insecure") or len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5
):
    _problem("BANK_SIM_SECRET_KEY: production needs a real secret key of at least 50 random characters")
# Production names its hosts and its https address itself (no loopback defaults).
for _name in ("BANK_SIM_ALLOWED_HOSTS", "BANK_SIM_PUBLIC_URL"):
    if PRODUCTION and not _read(_name, ""):
        _problem(f"{_name}: required when BANK_SIM_ENV=production")
DEBUG = False
ALLOWED_HOSTS = [
    h.strip() for h in _read("BANK_SIM_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")
]

BANK_SIM_PUBLIC_URL = _read("BANK_SIM_PUBLIC_URL", f"http://127.0.0.1:{_read('PORT', '8001')}").rstrip("/")
if _read("BANK_SIM_PUBLIC_URL", "") and not BANK_SIM_PUBLIC_URL.startswith(
    "https://" if PRODUCTION else ("http://", "https://")
):
    _problem(
        f"BANK_SIM_PUBLIC_URL: expected an absolute {'https' if PRODUCTION else 'http(s)'} address, "
        f"got {BANK_SIM_PUBLIC_URL!r}"
    )

_database_url = _read("BANK_SIM_DATABASE_URL", f"sqlite:///{VAR_DIR / 'bank.sqlite3'}")
try:
    DATABASES = {"default": env.db_url_config(_database_url)}
except Exception as exc:  # django-environ raises several types for malformed URLs
    DATABASES = _problem(f"BANK_SIM_DATABASE_URL: malformed database URL ({exc})", {"default": {"ENGINE": ""}})
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several gunicorn processes share the file, and every request writes (the signature it carries, for the
    # replay check): WAL lets readers go on while one writes, and synchronous=NORMAL commits without waiting for
    # the disk (the log is synced at checkpoints). A crash of the bank's processes loses nothing; a power loss
    # may lose the last commits, which a sandbox can afford. The rollback journal's syncs on every commit held
    # the bank to about 120 requests/s.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
# Keep database connections between requests (each gunicorn thread holds one): opening one per request
# costs more than the balance read itself.
DATABASES["default"]["CONN_MAX_AGE"] = _int("BANK_SIM_CONN_MAX_AGE", 300)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

BANK_SIM_TRUSTED_CAS = [
    Path(p.strip()) for p in _read("BANK_SIM_TRUSTED_CAS", str(PKI_DIR / "ca.pem")).split(",") if p.strip()
]
for _ca in BANK_SIM_TRUSTED_CAS:
    if not _ca.is_file():
        _problem(f"BANK_SIM_TRUSTED_CAS: no such file {str(_ca)!r} (run `make certs` for the development CA)")


# The sandbox mock-data endpoints (/v1/sandbox/...). Off: they answer 404, as in production.
BANK_SIM_SANDBOX = _flag("BANK_SIM_SANDBOX", True)
# Reproduce the production known issue of spec section 4: with bookingStatus both or pending, every pending
# transaction is returned, whatever dateFrom, dateTo and limit say (account transactions only, not cards).
BANK_SIM_KNOWN_ISSUE_PENDING_UNFILTERED = _flag("BANK_SIM_KNOWN_ISSUE_PENDING_UNFILTERED", False)
# Seed of the generated transaction history (sandbox_initialize); same seed and same day, same history.
BANK_SIM_SEED = _read("BANK_SIM_SEED", "sandkasse-2024")
# Allowed deviation of the Date request header from the bank's (real) clock, in seconds (spec section 8).
BANK_SIM_DATE_TOLERANCE = _int("BANK_SIM_DATE_TOLERANCE", 60)
# DELETE /v1/bank-offered-consents (the TPP ends its consent for a PSU; the spec is silent on it). Off: 405
# SERVICE_INVALID, as a bank that does not offer it (the PSU then revokes directly with the bank).
BANK_SIM_CONSENT_DELETE = _flag("BANK_SIM_CONSENT_DELETE", True)
# A payment initiation that repeats an X-Request-ID of the same TPP (the spec is silent): "same" answers the
# payment that X-Request-ID made (the same body; another body is 409 CONFLICT), "conflict" answers 409 CONFLICT,
# "new" treats it as a new request (a second payment, unless the logical-duplicate rule refuses it).
BANK_SIM_REQUEST_ID_REPLAY = _read("BANK_SIM_REQUEST_ID_REPLAY", "same")
if BANK_SIM_REQUEST_ID_REPLAY not in {"same", "conflict", "new"}:
    _problem(f"BANK_SIM_REQUEST_ID_REPLAY: expected same, conflict or new, got {BANK_SIM_REQUEST_ID_REPLAY!r}")
# Payments whose amount is below this many NOK (at the bank's rates) need no SCA: startAuthorisation answers
# scaStatus "exempted" without scaRedirect and the payment moves on as approved (spec 3 rule 2: "SCA exemptions
# may produce an instantly completed payment"). Only for agreements with one signer. Unset: no exemption.
BANK_SIM_SCA_EXEMPT_BELOW = _decimal("BANK_SIM_SCA_EXEMPT_BELOW")
# The initiation answer itself carries the scaRedirect (an authorisation started at once), instead of a
# startAuthorisation link the TPP must POST to first.
BANK_SIM_SCA_AT_INITIATION = _flag("BANK_SIM_SCA_AT_INITIATION", False)
# The largest transactions page (limit) served; a larger limit is 400 FORMAT_ERROR. The default page is 200
# (spec section 4 and 8), or this when it is smaller.
BANK_SIM_MAX_PAGE = _int("BANK_SIM_MAX_PAGE", 1000, minimum=1)
# Milliseconds added to every answer (the API and the SCA screens; not /healthz): a slower bank for tests.
BANK_SIM_LATENCY_MS = _int("BANK_SIM_LATENCY_MS", 0)
# The payment batches' times of day on the business clock, UTC, comma-separated HH:MM (spec 8: five a day).
BANK_SIM_BATCH_TIMES = _batch_times("BANK_SIM_BATCH_TIMES", "05:00,08:00,11:00,13:00,15:00")
# How long a started SCA redirect stays usable before it fails with SCA_EXPIRED, in seconds.
BANK_SIM_SCA_TTL = _int("BANK_SIM_SCA_TTL", 900, minimum=1)
# Response signing with the bank's seal (spec 5.2 "responses may be signed"). Both files or neither.
BANK_SIM_SIGN_RESPONSES = _flag("BANK_SIM_SIGN_RESPONSES", False)
BANK_SIM_SIGNING_CERT = Path(_read("BANK_SIM_SIGNING_CERT", str(PKI_DIR / "bank-signing.pem")))
BANK_SIM_SIGNING_KEY = Path(_read("BANK_SIM_SIGNING_KEY", str(PKI_DIR / "bank-signing.key")))
if BANK_SIM_SIGN_RESPONSES:
    for _name, _file in (
        ("BANK_SIM_SIGNING_CERT", BANK_SIM_SIGNING_CERT),
        ("BANK_SIM_SIGNING_KEY", BANK_SIM_SIGNING_KEY),
    ):
        if not _file.is_file():
            _problem(f"{_name}: no such file {str(_file)!r} (needed by BANK_SIM_SIGN_RESPONSES)")


# --- Which bank the sandbox plays (docs/sandbox-bank.md, "Bank profiles"); the defaults are the behaviour above.
def _choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _read(name, default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}: expected {', '.join(choices[:-1])} or {choices[-1]}, got {value!r}")
    return value


# The XS2A API (/v1/...) under a path prefix such as /psd2 (empty: at the root), and how _links are written:
# base-relative /v1/..., root-relative /psd2/v1/..., absolute https://host/psd2/v1/... (the request's address).
BANK_SIM_BASE_PATH = _read("BANK_SIM_BASE_PATH", "").strip().rstrip("/")
if BANK_SIM_BASE_PATH and not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", BANK_SIM_BASE_PATH):
    raise ImproperlyConfigured(f"BANK_SIM_BASE_PATH: expected a path such as /psd2, got {BANK_SIM_BASE_PATH!r}")
BANK_SIM_LINKS = _choice("BANK_SIM_LINKS", "base-relative", ("base-relative", "root-relative", "absolute"))
# The transactionStatus a payment shows before its SCA is done (the bank keeps it RCVD inside).
BANK_SIM_STATUS_BEFORE_SCA = _choice("BANK_SIM_STATUS_BEFORE_SCA", "RCVD", ("RCVD", "ACTC", "ACCP", "PDNG"))
# redirect: every payment SCA by scaRedirect; decoupled: in the bank's app (no scaRedirect; the sandbox approves
# or refuses for the PSU); tpp-preferred: decoupled when the TPP sends TPP-Redirect-Preferred: false.
BANK_SIM_SCA_APPROACH = _choice("BANK_SIM_SCA_APPROACH", "redirect", ("redirect", "decoupled", "tpp-preferred"))
# The final status of a settled payment: ACSC, or ACCC (the creditor's account credited).
BANK_SIM_CREDIT_FINAL = _choice("BANK_SIM_CREDIT_FINAL", "ACSC", ("ACSC", "ACCC"))
# A payment initiation answered 201 whose answer is lost (the payment is stored): none, reset (TCP RST), tls (a
# corrupt TLS record) or timeout (held _DELAY seconds); one answer in _EVERY. reset and tls need gunicorn.
BANK_SIM_DROP_PAYMENT_ANSWER = _choice("BANK_SIM_DROP_PAYMENT_ANSWER", "none", ("none", "reset", "tls", "timeout"))
BANK_SIM_DROP_PAYMENT_ANSWER_EVERY = _int("BANK_SIM_DROP_PAYMENT_ANSWER_EVERY", 1, minimum=1)
BANK_SIM_DROP_PAYMENT_ANSWER_DELAY = _int("BANK_SIM_DROP_PAYMENT_ANSWER_DELAY", 30, minimum=1)
# offset: dates as dates (as above); naive: dates as date-times at midnight and balances with a lastChangeDateTime,
# all without a UTC offset (the bank's local time, Europe/Oslo).
BANK_SIM_DATETIMES = _choice("BANK_SIM_DATETIMES", "offset", ("offset", "naive"))

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "bank_simulator",
    "bank_simulator.pis",
]
MIDDLEWARE = [
    "bank_simulator.middleware.LatencyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    # The SCA screens' forms (the API's views are csrf_exempt: bank_simulator.access).
    "django.middleware.csrf.CsrfViewMiddleware",
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
# The SCA screens in English or Norwegian bokmål (views.sca.screen_language); the API answers in English.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("nb", "Norsk bokmål")]
LOCALE_PATHS = [BASE_DIR / "bank_simulator" / "locale"]
USE_I18N = True
STATIC_URL = "static/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # UTC with the offset shown, whatever TIME_ZONE is (bank_simulator/logformat.py).
    "formatters": {
        "utc": {
            "()": "bank_simulator.logformat.UtcFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
        }
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "utc"}},
    "root": {"handlers": ["console"], "level": _read("LOG_LEVEL", "INFO")},
}
APPEND_SLASH = False  # the API has exact paths; a redirect would be an answer outside the OpenAPI document
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_FAILURE_VIEW = "bank_simulator.views.sca.csrf_failure"
# Production serves https only (gunicorn's own TLS, or the proxy over https): check --deploy is clean.
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_HSTS_PRELOAD = PRODUCTION
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_SECONDS = 31_536_000 if PRODUCTION else 0

if _problems:
    raise ImproperlyConfigured("\n".join(_problems))
