"""Settings of the TPP portal, read from the environment.

The environment is read here and nowhere else, through django-environ (``common.envconfig.Env``: secrets from
``<NAME>_FILE``, a malformed value stops start-up with a message naming it, and what is read is recorded so the
README table and docker/compose.yaml can be checked against this file). Modules read ``settings.X``.
Embedded defaults need no server: SQLite under ``var/``, a filesystem Celery broker under ``var/``, and the
local sandbox bank. ``DJANGO_ENV=production`` turns on the production profile, which refuses to start without a
real secret key and passes ``manage.py check --deploy`` without warnings.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import time as dt_time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from common.envconfig import Env, at_least, existing_file, http_url, positive
from tpp_portal.logging_config import logging_config
from tpp_portal.schedule import BEAT_SCHEDULE

BASE_DIR = Path(__file__).resolve().parent.parent
env = Env()


DJANGO_ENV = env.str("DJANGO_ENV", "development")
if DJANGO_ENV not in {"development", "test", "production"}:
    raise ImproperlyConfigured(f"DJANGO_ENV: expected development, test or production, got {DJANGO_ENV!r}")
PRODUCTION = DJANGO_ENV == "production"
# What production takes from the environment (or <NAME>_FILE) and has no default for: every one that is missing,
# in one message (a line each), before any other check.
_PRODUCTION_REQUIRED = (
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "PORTAL_BASE_URL",
    "BANK_BASE_URL",
    "EMAIL_URL",
    "FIELD_ENCRYPTION_KEYS",
    "FIELD_HASH_KEY",
)
_missing = [name for name in _PRODUCTION_REQUIRED if PRODUCTION and not env.ENVIRON.get(name)]
if _missing:
    raise ImproperlyConfigured(
        "\n".join(f"{name}: required in production and not set (nor {name}_FILE)" for name in _missing)
    )

# Relative to the project (the Makefile passes VAR_DIR=var), made absolute: Django wants absolute cache and file
# paths (caches.W003), whatever the working directory of the process.
VAR_DIR = (BASE_DIR / env.str("VAR_DIR", "var")).resolve()
PKI_DIR = VAR_DIR / "pki"

# --- core ------------------------------------------------------------------------------------------------
_DEV_SECRET = "django-insecure-development-only-key-never-use-in-production-0123456789"  # noqa: S105 - refused in production below
SECRET_KEY = env.str("SECRET_KEY", None if PRODUCTION else _DEV_SECRET)
if PRODUCTION and (
    not SECRET_KEY or SECRET_KEY.startswith("django-insecure") or len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5
):
    raise ImproperlyConfigured(
        "SECRET_KEY: production needs a real secret key of at least 50 random characters "
        "(set SECRET_KEY or SECRET_KEY_FILE)"
    )
# Off unless asked for (DEBUG=true), also under `make run`: people trying the portal see its own error pages
# (templates/404.html ...), not Django's technical ones listing every URL. Static files are served either way
# (WhiteNoise, below).
DEBUG = env.bool("DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG: must be false when DJANGO_ENV=production")

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS", default=[] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS: production needs the portal's host names")

# The public address of the portal; the bank redirects PSUs back to it after SCA. Required in production.
PORTAL_BASE_URL = http_url(
    "PORTAL_BASE_URL", env.str("PORTAL_BASE_URL", None if PRODUCTION else "http://127.0.0.1:8000")
)
if PORTAL_BASE_URL is None:
    raise ImproperlyConfigured("PORTAL_BASE_URL: this environment variable is required and is not set")
if PRODUCTION and not PORTAL_BASE_URL.startswith("https://"):
    raise ImproperlyConfigured("PORTAL_BASE_URL: production serves the portal over https only")
CSRF_TRUSTED_ORIGINS = [PORTAL_BASE_URL]

INSTALLED_APPS = [
    # First: a management command of an app listed earlier wins, and core's runserver (its banner in UTC) must win
    # over whitenoise's, which it extends.
    "core",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "csp",
    # Sign-up, e-mail confirmation, password reset, re-authentication and sign-in limits (allauth.account);
    # the second factor of staff (allauth.mfa: TOTP, WebAuthn keys, recovery codes). users/ configures them.
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "users",
    "connections",
    "accounts",
    "payments",
    "staff",
    "sandbox_admin",
]

MIDDLEWARE = [
    "core.middleware.HealthCheckMiddleware",
    "core.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "users.security.SessionActivityMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # Staff without a second factor are sent to enrol; staff pages need a session signed in with one.
    "users.security.StaffSecondFactorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "tpp_portal.urls"
WSGI_APPLICATION = "tpp_portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
                "core.context_processors.portal",
                "users.context_processors.idle_sign_out",
            ],
        },
    },
]

# --- database --------------------------------------------------------------------------------------------
DATABASES = {"default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'portal.sqlite3'}")}
if DATABASES["default"]["ENGINE"] not in {"django.db.backends.sqlite3", "django.db.backends.postgresql"}:
    raise ImproperlyConfigured("DATABASE_URL: unsupported database scheme (use sqlite:///path or postgres://...)")
if not DATABASES["default"].get("NAME"):
    raise ImproperlyConfigured("DATABASE_URL: the database URL names no database")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    # Several processes (web, worker, beat) share one file: wait for locks instead of failing at once. WAL:
    # readers never block the writer, and a commit is one sync of the log (synchronous=FULL keeps every
    # committed transaction across a power loss) instead of the rollback journal's several.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- cache, broker ---------------------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", None)  # the Celery broker and the cache; unset: embedded (files under VAR_DIR)
if REDIS_URL:
    try:
        urlsplit(REDIS_URL).port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ImproperlyConfigured("REDIS_URL: malformed port") from None
    if urlsplit(REDIS_URL).scheme not in {"redis", "rediss"} or not urlsplit(REDIS_URL).hostname:
        raise ImproperlyConfigured("REDIS_URL: expected redis://host:port/db, got a malformed address")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    # Sessions in Redis too, not in the database: a sign-in then writes one row (the user's last_login) instead
    # of three (the new session, last_login, the session again with the sign-in's marks), and a page that marks
    # the session (activity, re-authentication) writes none. On SQLite every write waits for the one write lock,
    # behind the worker's refresh: 20 sign-ins at once waited seconds for it (bench.load). Sessions expire
    # in Redis on their own (no clearsessions); losing Redis's data signs everyone out (compose keeps it on disk).
    SESSION_ENGINE = "django.contrib.sessions.backends.cache"
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {"visibility_timeout": 3600}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }
    _queue = VAR_DIR / "broker"
    for _folder in ("out", "processed", "control"):
        (_queue / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://localhost//"  # the host is a placeholder (kombu warns without one)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue / "out"),
        "data_folder_out": str(_queue / "out"),
        "processed_folder": str(_queue / "processed"),
        "control_folder": str(_queue / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", False)  # tests only
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Keep the portal's LOGGING (JSON, request id, redaction) in worker and beat instead of Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- exchange rates and regulatory reporting (payments/rates.py, payments/selectors.py) -------------------
# Norges Bank's SDMX data API, EXR dataflow (the daily exchange rates).
NORGES_BANK_RATES_URL = http_url(
    "NORGES_BANK_RATES_URL", env.str("NORGES_BANK_RATES_URL", "https://data.norges-bank.no/api/data/EXR")
)
NORGES_BANK_TIMEOUT = positive("NORGES_BANK_TIMEOUT", env.float("NORGES_BANK_TIMEOUT", 20.0))
# The bank's rule (spec 2.1 and 8): regulatory code and information are required from 100 000 NOK.
REGULATORY_THRESHOLD_NOK = Decimal("100000")
# Safety margin for amounts in other currencies (payments.selectors.regulatory_margin_for): the bank converts at
# its own rate and time, which differ from the published middle rate we use by its spread and by the movement since
# the rate's date. A NOK amount needs no conversion: the threshold is exact for it. The margin is
#   REGULATORY_MARGIN (spread and the day's movement, for a rate of today)
#   + REGULATORY_MARGIN_PER_DAY for each calendar day the rate is older than the payment's date
#   + REGULATORY_MARGIN_SEED when the rate is one of the seed's estimates (shipped with the portal, not published)
#   at most REGULATORY_MARGIN_MAX,
# and from the threshold less that margin we ask for the reporting fields, so that the bank does not refuse a
# payment for lacking them. A rate of today: from 95 000 NOK; of 8 days ago: 9 %, from 91 000 NOK; the seed
# 8 days old: 14 %, from 86 000 NOK; 20 days or more: 15 %, from 85 000 NOK. Only an amount that could really
# reach 100 000 NOK is asked for reporting: 10 EUR never is, while there is a rate at all.
REGULATORY_MARGIN = Decimal("0.05")
REGULATORY_MARGIN_PER_DAY = Decimal("0.005")
REGULATORY_MARGIN_SEED = Decimal("0.05")
REGULATORY_MARGIN_MAX = Decimal("0.15")
# A rate older than this (on the date of the payment) is not trusted at all: reporting is then required, whatever
# the amount. 30 days: Norges Bank publishes every business day, so a month-old newest rate means the fetch is
# broken, and a month's movement can exceed any margin for some currencies.
EXCHANGE_RATE_MAX_AGE_DAYS = 30

# --- the audit log of bank calls (core.models.BankCall, pruned by core.tasks.prune_bank_calls) ----
BANK_CALL_RETENTION_DAYS = at_least("BANK_CALL_RETENTION_DAYS", env.int("BANK_CALL_RETENTION_DAYS", 180), 1)
BANK_CALL_PRUNE_BATCH = 5000  # rows deleted per statement: short transactions, no long lock on the table

# The one beat schedule of the product (tpp_portal/schedule.py; run exactly one beat process).
CELERY_BEAT_SCHEDULE = BEAT_SCHEDULE
# --- payment status polling (payments/services/polling.py) --------------------------------------------------
# The bank's batches move a payment on (the sandbox bank: five a day); their times are the bank's configuration,
# not the portal's guess. Known: the status is read shortly after each batch, overnight at least every
# PAYMENT_POLL_BATCH_MAX_WAIT. Unknown (empty): the longer a status has not changed, the longer the wait, up to
# PAYMENT_POLL_MAX_INTERVAL.
_batch_times = env.list("BANK_BATCH_TIMES", default=[])
try:
    BANK_BATCH_TIMES = tuple(sorted(dt_time.fromisoformat(value) for value in _batch_times))
except ValueError:
    raise ImproperlyConfigured(
        f"BANK_BATCH_TIMES: expected HH:MM times, comma-separated, got {_batch_times!r}"
    ) from None
PAYMENT_POLL_LEASE = timedelta(minutes=2)  # one poller per payment; longer than one status call with its retries
PAYMENT_POLL_MIN_INTERVAL = timedelta(seconds=30)
PAYMENT_POLL_MAX_INTERVAL = timedelta(hours=2)
PAYMENT_POLL_BATCH_GRACE = timedelta(minutes=2)  # after a batch's slot, before its result is read
PAYMENT_POLL_BATCH_MAX_WAIT = timedelta(hours=6)  # with batch times: the longest wait (overnight) between reads
# RCVD/PATC (waiting for the PSU's approval or further signers) is read on a backoff from the start of the SCA
# for this long: the bank's SCA session lasts an hour (spec 3); after it, once every PAYMENT_POLL_MAX_INTERVAL.
PAYMENT_POLL_SIGNERS_WINDOW = timedelta(hours=2)
# --- payment mails (payments/services/notifications.py) -------------------------------------------------------
# A payment that needs another signer, is rejected, cancelled or settled is mailed to its owner, at most this many
# mails per user in any hour; what happens beyond that waits and goes in one mail when the hour allows.
PAYMENT_MAILS_PER_HOUR = 4
# No payment is polled for ever: one not final this long after it was sent (an unknown status, an approval never
# given) goes to the staff queue instead (Django admin, payments "for staff").
PAYMENT_POLL_HORIZON = timedelta(
    days=at_least("PAYMENT_POLL_HORIZON_DAYS", env.int("PAYMENT_POLL_HORIZON_DAYS", 7), 1)
)
# A payment whose initiation answer was lost is sent again (the same request, the same X-Request-ID, never
# allowing a logical duplicate) only this long after the first send, and on the same business day (Oslo): later,
# only its account's transactions and staff settle it (docs/bank-interface.md, "Exactly once").
PAYMENT_REPLAY_WINDOW = timedelta(
    seconds=at_least("PAYMENT_REPLAY_WINDOW_SECONDS", env.int("PAYMENT_REPLAY_WINDOW_SECONDS", 600), 0)
)
# How long a submission's caller holds the payment before reconciliation takes over (None: longer than any
# initiation call can last, from BANK_TIMEOUT; only the fault tests' faster clock sets it).
PAYMENT_CALL_LEASE: timedelta | None = None

# --- the bank --------------------------------------------------------------------------------------------
_LOCAL_SANDBOX_BANK = "http://127.0.0.1:8001"  # `make bank`: the sandbox bank of this repository
BANK_BASE_URL = http_url("BANK_BASE_URL", env.str("BANK_BASE_URL", _LOCAL_SANDBOX_BANK))  # with its path prefix
# The address of the bank's SCA pages (where its scaRedirect sends the PSU's browser) when they are not under
# BANK_BASE_URL, as behind docker/compose.yaml's proxy: the portal's forms lead there through a redirect, which the
# Content-Security-Policy's form-action must allow (a browser refuses a form's redirect to an address it omits).
BANK_SCA_URL = http_url("BANK_SCA_URL", env.str("BANK_SCA_URL", None))
# Only the embedded default bank is known to be a sandbox; any other bank, and production, must say so.
BANK_IS_SANDBOX = env.bool("BANK_IS_SANDBOX", not PRODUCTION and BANK_BASE_URL == _LOCAL_SANDBOX_BANK)
_certs_hint = " (run `make certs` to create the development certificates)"
try:
    BANK_SIGNING_CERT = existing_file(
        "BANK_SIGNING_CERT", env.str("BANK_SIGNING_CERT", str(PKI_DIR / "tpp-qseal.pem"))
    )
    BANK_SIGNING_KEY = existing_file(
        "BANK_SIGNING_KEY", env.str("BANK_SIGNING_KEY", str(PKI_DIR / "tpp-qseal.key"))
    )
except ImproperlyConfigured as exc:
    raise ImproperlyConfigured(str(exc) + ("" if PRODUCTION else _certs_hint)) from None
BANK_SIGNING_KEY_PASSPHRASE = env.str("BANK_SIGNING_KEY_PASSPHRASE", None)
# Trusted for the bank's TLS certificate.
BANK_CA_BUNDLE = existing_file("BANK_CA_BUNDLE", env.str("BANK_CA_BUNDLE", None))
BANK_TLS_CLIENT_CERT = existing_file("BANK_TLS_CLIENT_CERT", env.str("BANK_TLS_CLIENT_CERT", None))  # the QWAC
BANK_TLS_CLIENT_KEY = existing_file("BANK_TLS_CLIENT_KEY", env.str("BANK_TLS_CLIENT_KEY", None))
if bool(BANK_TLS_CLIENT_CERT) != bool(BANK_TLS_CLIENT_KEY):
    raise ImproperlyConfigured("BANK_TLS_CLIENT_KEY: BANK_TLS_CLIENT_CERT and BANK_TLS_CLIENT_KEY go together")
BANK_RESPONSE_CERT = existing_file("BANK_RESPONSE_CERT", env.str("BANK_RESPONSE_CERT", None))  # the bank's seal
# With the bank's seal, an answer is believed only when signed for its request (X-Request-ID), within this many
# seconds of the portal's clock (Date), with Date, X-Request-ID and (with a body) Digest signed
# (docs/bank-interface.md).
BANK_RESPONSE_MAX_AGE = positive("BANK_RESPONSE_MAX_AGE", env.float("BANK_RESPONSE_MAX_AGE", 300.0))
# Production verifies the bank's answers: it refuses to start without the seal unless this is off, on purpose
# (a bank that does not sign; every start then logs a warning: core.apps).
BANK_RESPONSE_SIGNATURES = env.bool("BANK_RESPONSE_SIGNATURES", True)
if not BANK_RESPONSE_SIGNATURES and BANK_RESPONSE_CERT:
    raise ImproperlyConfigured(
        "BANK_RESPONSE_SIGNATURES: off, but BANK_RESPONSE_CERT is set: unset one of them (with the seal, the "
        "bank's answers are verified)"
    )
if PRODUCTION and BANK_RESPONSE_SIGNATURES and not BANK_RESPONSE_CERT:
    raise ImproperlyConfigured(
        "BANK_RESPONSE_CERT: production verifies the bank's signed answers and needs the bank's seal; set "
        "BANK_RESPONSE_SIGNATURES=off to run without verifying them (a bank that does not sign)"
    )
BANK_TIMEOUT = positive("BANK_TIMEOUT", env.float("BANK_TIMEOUT", 20.0))  # connect and read
BANK_MAX_RESPONSE_BYTES = at_least(
    "BANK_MAX_RESPONSE_BYTES", env.int("BANK_MAX_RESPONSE_BYTES", 10 * 1024 * 1024), 1
)
BANK_ACCEPT_FIX = env.list(  # the x-accept-fix values sent to the bank
    "BANK_ACCEPT_FIX",
    default=[
        "amount-as-string",
        "cardaccount-switch-originalamount-and-transactionamount",
        "longer-names",
        "cash-account-type-iso",
    ],
)
if PRODUCTION and not BANK_BASE_URL.startswith("https://"):
    raise ImproperlyConfigured("BANK_BASE_URL: production talks to the bank over https only")

# --- operations: metrics, traces, error reports, certificates (docs/operations.md) --------------------------
# Metrics (core/metrics.py): every process of web and worker counts its events (bank calls, 429s, task
# failures) into files of its own under METRICS_DIR (prometheus-client's multiprocess mode); the metrics process
# (`manage.py serve_metrics`) sums them and adds the state read from the database at each scrape.
METRICS_DIR = (
    BASE_DIR / env.str("METRICS_DIR", str(VAR_DIR / "metrics"))  # shared by every process; emptied before a start
).resolve()
METRICS_BIND = env.str("METRICS_BIND", "127.0.0.1:9100")  # `manage.py serve_metrics`; never a public address
_metrics_host, _colon, _metrics_port = METRICS_BIND.rpartition(":")
if not _metrics_host or not _metrics_port.isdigit() or int(_metrics_port) > 65535:
    raise ImproperlyConfigured(f"METRICS_BIND: expected host:port, got {METRICS_BIND!r}")
# Traces (OpenTelemetry: Django, requests, Celery, psycopg) only when an OTLP endpoint is set; error reports
# (Sentry) only with a DSN. Both are scrubbed of PSU identifiers and personal data (core/observability.py).
# The OTLP collector's address: set, traces are exported there.
OTEL_EXPORTER_OTLP_ENDPOINT = http_url("OTEL_EXPORTER_OTLP_ENDPOINT", env.str("OTEL_EXPORTER_OTLP_ENDPOINT", None))
OTEL_EXPORTER_OTLP_PROTOCOL = env.str("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
if OTEL_EXPORTER_OTLP_PROTOCOL not in {"http/protobuf", "grpc"}:
    raise ImproperlyConfigured(
        f"OTEL_EXPORTER_OTLP_PROTOCOL: expected http/protobuf or grpc, got {OTEL_EXPORTER_OTLP_PROTOCOL!r}"
    )
OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", "tpp-portal")
SENTRY_DSN = env.str("SENTRY_DSN", None)  # set: errors are reported there
SENTRY_ENVIRONMENT = env.str("SENTRY_ENVIRONMENT", DJANGO_ENV)
SENTRY_TRACES_SAMPLE_RATE = env.float("SENTRY_TRACES_SAMPLE_RATE", 0.0)
if not 0 <= SENTRY_TRACES_SAMPLE_RATE <= 1:
    raise ImproperlyConfigured(f"SENTRY_TRACES_SAMPLE_RATE: expected 0 to 1, got {SENTRY_TRACES_SAMPLE_RATE}")
# Certificates of the bank connection (core/certificates.py): staff are warned this many days before one
# expires (dashboard, metric, log); an expired QSealC or bank seal stops bank calls.
CERTIFICATE_WARNING_DAYS = (30, 14, 7)

# --- auth, sessions --------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    # The portal's subclass: Django's message has no bokmål translation (users/validators.py).
    {"NAME": "users.validators.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Argon2id (argon2-cffi) hashes every new password, with OWASP's parameters (m=19 MiB, t=2, p=1: users/hashers.py)
# instead of Django's 100 MiB and 8 lanes; a stored hash of an older hasher, or of Argon2 with other parameters,
# still verifies and is rewritten at the next successful sign-in (Django's hasher upgrade).
PASSWORD_HASHERS = [
    "users.hashers.Argon2idPasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True

# --- sign-in, sign-up and their limits: django-allauth (users/adapter.py, users/security.py) ----------------
AUTHENTICATION_BACKENDS = ["users.backends.AuthenticationBackend"]  # allauth's, one hash per attempt
ACCOUNT_ADAPTER = "users.adapter.AccountAdapter"
ACCOUNT_FORMS = {
    "login": "users.forms.SignInForm",
    "signup": "users.forms.SignUpForm",
    "confirm_email_verification_code": "users.forms.ConfirmEmailCodeForm",
    "reauthenticate": "users.forms.ReauthenticateForm",
    "change_password": "users.forms.ChangePasswordForm",
}
MFA_FORMS = {"add_webauthn": "users.forms.AddSecurityKeyForm"}
# Customers sign in with their e-mail address; accounts made by staff may also use their username.
ACCOUNT_LOGIN_METHODS = {"email", "username"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# Nobody signs in before confirming the address, by a code mailed to it and typed in the same browser that
# signed up (a link could be opened by the owner for a sign-up a stranger made: account pre-hijacking).
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_EMAIL_VERIFICATION_BY_CODE_ENABLED = True
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_EMAIL_VERIFICATION_SUPPORTS_RESEND = True  # "Send a new code" on that page, twice per sign-up
# The same answer whether or not an address has an account (sign-up, password reset).
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = True
ACCOUNT_EMAIL_NOTIFICATIONS = True  # "your password was changed", "a second factor was added" ...
ACCOUNT_EMAIL_SUBJECT_PREFIX = ""
# Those mails are rendered by the page and sent by the Celery worker (users.tasks), so that a page answers as fast
# whether it mailed someone or not; False sends them from the page itself (the in-process tests).
ACCOUNT_MAIL_QUEUED = True
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_SESSION_REMEMBER = True  # the normal session lifetime, as before (no "remember me" box)
ACCOUNT_USER_MODEL_USERNAME_FIELD = "username"
PASSWORD_RESET_TIMEOUT = 3600  # a reset link works for one hour
# Every limit is counted in the cache (CACHES; shared by every web process). Failed passwords (sign-in,
# re-authentication, a password change's old password): 5 per e-mail address (or username) and client address in
# 15 minutes, then even the right one is refused until the oldest failure is 15 minutes old (the right one
# forgets the failures); 10 a minute from one client address whatever the name. Mails: at most 1 sign-up or
# confirmation code a minute and 3 an hour to one address from one client address (users.adapter; a stranger's
# sign-ups elsewhere never use up the owner's), 10 a minute and 50 an hour from one client address to any; 3
# reset mails an hour to one address.
SIGN_IN_FAILURES = 5
SIGN_IN_COOL_OFF = timedelta(minutes=15)
ACCOUNT_RATE_LIMITS = {
    "login": "60/m/ip",
    "login_failed": f"10/m/ip,{SIGN_IN_FAILURES}/{int(SIGN_IN_COOL_OFF.total_seconds())}s/key",
    "signup": "10/m/ip,50/h/ip",
    "confirm_email": "10/m/ip,50/h/ip",
    "confirm_email_to_address": "1/m/key,3/h/key",  # key: the address and the client address (users.adapter)
    "reset_password": "10/m/ip,3/h/key",
    "reset_password_from_key": "20/m/ip",
    # Every POST of these two pages, right or wrong (a wrong password also counts under login_failed).
    "reauthenticate": "30/m/user",
    "change_password": "10/m/user",
    "manage_email": "10/m/user",
}
# Staff sign in with a second factor (users.security.StaffSecondFactorMiddleware): an authenticator app (TOTP)
# or a security key (WebAuthn), with recovery codes.
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_TOTP_ISSUER = "Fjordpay"
MFA_PASSKEY_LOGIN_ENABLED = False
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = not PRODUCTION  # http://127.0.0.1 in development
# A password alone never enrols a staff user's first factor: a superuser mails them a single-use link
# (`manage.py staff_invite`, the admin's action; users.services) that works this long, and opening it lets that
# browser session enrol one for STAFF_ENROLMENT_WINDOW.
STAFF_INVITATION_MAX_AGE = timedelta(hours=24)
STAFF_ENROLMENT_WINDOW = timedelta(minutes=30)
# The client's address (the sign-in limits' key, and PSU-IP-Address: core.clientip). Behind N trusted
# reverse proxies it is the address they forwarded in X-Forwarded-For; with none, REMOTE_ADDR, and a client's
# own X-Forwarded-For is ignored (it could otherwise pick the address it is limited under).
TRUSTED_PROXY_COUNT = at_least("TRUSTED_PROXY_COUNT", env.int("TRUSTED_PROXY_COUNT", 0), 0)
ALLAUTH_TRUSTED_PROXY_COUNT = TRUSTED_PROXY_COUNT  # users.adapter asks core.clientip all the same
# Pages marked users.security.sensitive_page (account data, payments) sign the user out after this many
# seconds without any request; other pages keep the normal session lifetime.
SENSITIVE_IDLE_TIMEOUT = 300
# require_recent_authentication: a payment is submitted only within this many seconds of the password, of
# signing in or of an SCA completed at the bank (the SCA callback); submitting a payment asks again for the next
# one, unless its SCA is completed.
REAUTH_MAX_AGE = 300
ACCOUNT_REAUTHENTICATION_TIMEOUT = REAUTH_MAX_AGE

# --- encryption at rest of bank identifiers (accounts/crypto.py) ------------------------------------------
# PSU-ID and PSU-Corporate-ID are stored encrypted (MultiFernet): FIELD_ENCRYPTION_KEYS holds comma-separated
# Fernet keys (make one with `python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key()
# .decode())"`); the first encrypts, all decrypt. Rotate: put a new key first, run
# `manage.py rotate_field_encryption`, then remove the old key. FIELD_HASH_KEY keys the HMAC-SHA256 lookup hashes
# stored beside encrypted values (changing it orphans those hashes). Production requires both; elsewhere they
# are DERIVED FROM SECRET_KEY, which is for development and tests only.
FIELD_ENCRYPTION_KEYS = [
    key.strip() for key in (env.str("FIELD_ENCRYPTION_KEYS", None) or "").split(",") if key.strip()
]
FIELD_HASH_KEY = env.str("FIELD_HASH_KEY", None)
for _name, _value in (("FIELD_ENCRYPTION_KEYS", FIELD_ENCRYPTION_KEYS), ("FIELD_HASH_KEY", FIELD_HASH_KEY)):
    if PRODUCTION and not _value:
        raise ImproperlyConfigured(f"{_name}: required in production (or {_name}_FILE)")
if not FIELD_ENCRYPTION_KEYS:  # development and tests only (refused in production above)
    FIELD_ENCRYPTION_KEYS = [
        base64.urlsafe_b64encode(hashlib.sha256(b"dev field encryption|" + SECRET_KEY.encode()).digest()).decode()
    ]
if not FIELD_HASH_KEY:  # development and tests only (refused in production above)
    FIELD_HASH_KEY = hashlib.sha256(b"dev field hash|" + SECRET_KEY.encode()).hexdigest()
for _key in FIELD_ENCRYPTION_KEYS:
    try:
        Fernet(_key)
    except ValueError:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEYS: every key must be a Fernet key (32 url-safe base64-encoded bytes)"
        ) from None
if len(FIELD_HASH_KEY) < 32:
    raise ImproperlyConfigured("FIELD_HASH_KEY: must be at least 32 characters")

# E-mail (password resets, consent reminders). The console backend writes whole messages, reset links
# included, to standard output: development only. Production needs a real server.
_email = env.email_url("EMAIL_URL", default="consolemail://")  # e.g. smtp+tls://user:password@host:587
if PRODUCTION and not _email["EMAIL_BACKEND"].endswith("smtp.EmailBackend"):
    raise ImproperlyConfigured("EMAIL_URL: production needs an SMTP server (smtp:// or smtp+tls://)")
# EMAIL_BACKEND, EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS, ...
globals().update(_email)
EMAIL_TIMEOUT = 20
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", "no-reply@fjordpay.invalid")

# --- i18n, time ------------------------------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("nb", _("Norwegian Bokmål"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["tpp_portal.formats"]  # one date format per language (tpp_portal/formats/)
USE_I18N = True
USE_TZ = True
TIME_ZONE = "Europe/Oslo"  # shown to users; storage is UTC (USE_TZ)

# --- static files ----------------------------------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise expects it; production runs collectstatic
# Outside production WhiteNoise serves the files where they are (static/ and the apps'), read again when they
# change, so that DEBUG off needs no collectstatic; production serves the collected, hashed copies.
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = not PRODUCTION
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# --- security headers ------------------------------------------------------------------------------------
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'", BANK_BASE_URL, *([BANK_SCA_URL] if BANK_SCA_URL else [])],
        "base-uri": ["'none'"],
        "object-src": ["'none'"],
    }
}
if PRODUCTION:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", True)
    if TRUSTED_PROXY_COUNT:  # only a trusted proxy may say the request came over https
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = 31_536_000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- logging ---------------------------------------------------------------------------------------------
LOG_LEVEL = env.str("LOG_LEVEL", "INFO")
LOG_JSON = env.bool("LOG_JSON", PRODUCTION)
LOGGING = logging_config(level=LOG_LEVEL, json=LOG_JSON)
