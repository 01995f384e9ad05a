"""Production smoke test: docker/compose.yaml's process set, started without Docker, walked through over https.

The services are read from docker/compose.yaml and started from their own commands with their own environment
(the image's ``ENV`` from docker/Dockerfile under it, compose's variables expanded from a throwaway ``.env``):
the one-offs ``migrate`` and ``bank-migrate``, then ``bank`` (gunicorn over TLS, signing its responses),
``web`` (gunicorn, ``DJANGO_ENV=production``), ``worker``, ``beat`` and ``metrics``, each ready when its own
compose health check passes; in front of them Debian's nginx runs docker/proxy/default.conf.template. The
static files are collected as the image's build does. PostgreSQL and Redis are this machine's
(``DATABASE_URL``, ``REDIS_URL``): each database is made for the run and dropped after it, and Redis is a
database number of its own, emptied before and after.

Only what a container would have differently is swapped, each swap checked to still match the compose file:
loopback ports for the compose network's names and ports (``https://bank:8001``, ``0.0.0.0:8000`` ...),
temporary folders for the mounts (``/run/pki``, ``/var/lib/tpp``, ``/var/lib/tpp-metrics``,
``/app/staticfiles``), this machine's databases and Redis for ``db`` and ``redis``, and the proxy's loopback
https port in ``PORTAL_BASE_URL``. The certificates are made at set-up with the README's command
(``python -m devtools.pki <dir> --tls-host bank``) and the proxy's own from a CA of the test, never committed.

Then, all through the proxy over https: a customer with an authenticator app signs in with the second factor,
connects the bank (its SCA screens through the proxy's bank port), sees the accounts, pays, approves at the
bank, and sees the payment settled once the sandbox bank's batches have run. Every request of that browser
carries a forged ``X-Forwarded-For``; a separate check shows that the sign-in limit counts the real client's
address, whatever it forges. ``manage.py check --deploy`` is clean in the same environment.

Needs PostgreSQL (skipped otherwise, with the reason; under CI=true a skip fails), Redis, nginx and chromium.
``make smoke`` runs it alone.
"""

from __future__ import annotations

import contextlib
import dbm
import importlib.util
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import pytest
import requests
from cryptography.fernet import Fernet
from requests.adapters import HTTPAdapter

from devtools import pki
from devtools.livebank import free_port
from tests.deployment import (
    SERVICES,
    ProxyPorts,
    image_environment,
    interpolate,
    loopback_proxy_conf,
    nginx_prepare,
    running_nginx,
)
from tests.e2e.conftest import connect_bank, create_user, new_totp_secret, sign_in
from tests.e2e.payment_support import (
    PRIVATE_1,
    approve_at_bank,
    at_review,
    bank_batch_run,
    choose_debtor,
    fill,
    payment_pk,
    payment_row,
    review_the_payment,
    send_to_bank,
    shown_status,
)
from tests.product import PortalDatabase, Product, csrf_of, wait_until
from tests.signin import SIGN_IN_PATH, sign_in_form
from tests.workers import SMOKE_REDIS_DATABASE

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.production, pytest.mark.browser, pytest.mark.live_bank, pytest.mark.timeout(420)]

PORTAL_SERVICES = ("web", "worker", "beat", "metrics")
LONG_RUNNING = ("bank", *PORTAL_SERVICES)  # the proxy is nginx, started last; db and redis are the machine's
FORGED = "203.0.113.9"  # TEST-NET-3: what a client claims to be in X-Forwarded-For
PASSWORD = "a long production smoke-test password"
REDIS_DATABASE = SMOKE_REDIS_DATABASE  # its own database on the machine's Redis (its broker and cache)
HEALTH_TIMEOUT = 120.0
CHECK_INTERVAL = 15.5  # payments.views_status.CHECK_INTERVAL_SECONDS: one "Check the status now" per 15 s
TIMEOUT = 60_000  # ms: one browser step


def _postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        pytest.skip(
            "the production smoke test runs on PostgreSQL, as docker/compose.yaml does: set DATABASE_URL to a "
            "PostgreSQL server (postgres://...) and REDIS_URL to a Redis server (CI's second pass; `make smoke`)"
        )
    return url


def _redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url.startswith("redis://"):
        pytest.fail(
            "the production smoke test needs Redis, as docker/compose.yaml does: set REDIS_URL=redis://..."
        )
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{REDIS_DATABASE}", "", ""))


def _redis_flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))


@dataclass
class Deployment:
    """The running process set: ``product`` (tests.product.Product) runs manage.py and Django code in web's
    environment, and holds the processes and their logs."""

    product: Product
    ports: ProxyPorts
    portal_url: str  # https://localhost:<port>: the proxy's 443
    bank_public_url: str  # https://localhost:<port>: the proxy's BANK_PUBLIC_PORT, where the SCA pages are
    proxy_ca: Path  # the CA of the proxy's certificate, as a browser that trusts it has it
    environments: dict[str, dict[str, str]] = field(default_factory=dict)
    proxy_logs: tuple[Path, ...] = ()  # nginx's access log, its error log, and the image's own access log

    def logs(self) -> str:
        return self.product.logs()

    def every_log(self) -> str:
        """Every process's log and the proxy's logs, as they are now."""
        return "\n".join([self.logs(), *(path.read_text() for path in self.proxy_logs if path.exists())])


class _Swaps:
    """Text replaced in every value taken from the compose file (commands, environments, health checks), and a
    record of which were used: each must still occur somewhere, or the compose file has moved on without us."""

    def __init__(self, swaps: dict[str, str]) -> None:
        self.swaps = swaps
        self.used: set[str] = set()
        self._pattern = re.compile("|".join(re.escape(old) for old in sorted(swaps, key=len, reverse=True)))

    def __call__(self, text: str, **extra: str) -> str:
        table = {**self.swaps, **extra}
        pattern = (
            re.compile("|".join(re.escape(old) for old in sorted(table, key=len, reverse=True)))
            if extra
            else self._pattern
        )

        def one(match: re.Match) -> str:
            self.used.add(match.group(0))
            return table[match.group(0)]

        return pattern.sub(one, text)


def _argv(value, interpolated: dict[str, str], swap, **extra) -> list[str]:
    """A compose command or health check test as the argument list Docker runs (CMD-SHELL and a string through
    ``sh -c``)."""
    if isinstance(value, str):
        return ["sh", "-c", swap(interpolate(value, interpolated), **extra)]
    kind, *rest = value if value[0] in {"CMD", "CMD-SHELL"} else ["CMD", *value]
    rest = [swap(interpolate(item, interpolated), **extra) for item in rest]
    return ["sh", "-c", rest[0]] if kind == "CMD-SHELL" else rest


def _schedule_written_by_this_python(check: list[str]) -> bool:
    """beat's compose check is ``test -f <schedule>``: the one file the image's Python writes with dbm.gnu. A
    Python built without it (pyenv's, here) writes the same schedule with dbm.dumb, as <schedule>.dat and .dir;
    that counts too, and only then."""
    match = re.fullmatch(r"test -f (\S+)", check[-1])
    if match is None or importlib.util.find_spec("_gdbm") is not None:
        return False
    return dbm.whichdb(match.group(1)) == "dbm.dumb"


@contextlib.contextmanager
def production(directory: Path) -> Iterator[Deployment]:
    database_url = _postgres_url()
    redis_url = _redis_url()
    pki_dir, tls_dir, static_dir, metrics_dir = (directory / name for name in ("pki", "tls", "static", "metrics"))
    for folder in (tls_dir, static_dir, metrics_dir):
        folder.mkdir()
    # The bank connection's certificates, with the README's command (the bank's TLS certificate also holds the
    # name "bank", which the proxy checks); the proxy's own certificate for PUBLIC_HOST from a CA of the test.
    subprocess.run(
        [sys.executable, "-m", "devtools.pki", str(pki_dir), "--tls-host", "bank"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    proxy_ca = pki.issue_ca()
    front = pki.issue_tls_server(proxy_ca, hosts=("localhost",))
    (tls_dir / "fullchain.pem").write_bytes(front.cert_pem())
    (tls_dir / "privkey.pem").write_bytes(front.key_pem())
    (directory / "proxy-ca.pem").write_bytes(proxy_ca.cert_pem())

    ports = ProxyPorts(http=free_port(), https=free_port(), bank=free_port(), health=free_port())
    web_port, bank_port, metrics_port = free_port(), free_port(), free_port()
    portal_url = f"https://localhost:{ports.https}"
    bank_public_url = f"https://localhost:{ports.bank}"
    # docker/.env: the secrets and the public names the README asks for. No SMTP server listens on the mail port:
    # nothing in this journey mails.
    dotenv = {
        "SECRET_KEY": secrets.token_urlsafe(64),
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "FIELD_HASH_KEY": secrets.token_hex(32),
        "EMAIL_URL": f"smtp://127.0.0.1:{free_port()}",
        "BANK_SIM_SECRET_KEY": secrets.token_urlsafe(64),
        "POSTGRES_PASSWORD": secrets.token_urlsafe(16),
        "PUBLIC_HOST": "localhost",
        "BANK_PUBLIC_PORT": str(ports.bank),
    }
    swap = _Swaps(
        {
            "/run/pki": str(pki_dir),
            "/var/lib/tpp-metrics": str(metrics_dir),
            "/app/staticfiles": str(static_dir),
            "https://bank:8001": f"https://127.0.0.1:{bank_port}",
            "0.0.0.0:8000": f"127.0.0.1:{web_port}",
            "127.0.0.1:8000": f"127.0.0.1:{web_port}",
            "0.0.0.0:8001": f"127.0.0.1:{bank_port}",
            "127.0.0.1:8001": f"127.0.0.1:{bank_port}",
            "0.0.0.0:9100": f"127.0.0.1:{metrics_port}",
            "127.0.0.1:9100": f"127.0.0.1:{metrics_port}",
        }
    )
    image = image_environment()
    assert image.get("DJANGO_ENV") == "production", image
    base = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": str(directory),
        "LANG": "C.UTF-8",
        "HOSTNAME": socket.gethostname(),
    }

    with contextlib.ExitStack() as stack:
        portal_db = stack.enter_context(PortalDatabase.create(directory, database_url))
        bank_base = os.environ.get("BANK_SIM_DATABASE_URL") or _with_database(database_url, "tpp_bank")
        bank_db = stack.enter_context(PortalDatabase.create(directory, bank_base))
        _redis_flush(redis_url)
        stack.callback(_redis_flush, redis_url)

        def environment(service: str) -> dict[str, str]:
            """The container's environment: the image's, then the service's (expanded and swapped)."""
            var_dir = directory / "var" / service  # each container has its own /var/lib/tpp
            var_dir.mkdir(parents=True, exist_ok=True)
            found = {**base}
            for name, value in image.items():
                if name != "PATH":  # the image's venv is this machine's (base["PATH"])
                    found[name] = swap(value, **{"/var/lib/tpp": str(var_dir)})
            for name, value in SERVICES[service].get("environment", {}).items():
                found[name] = swap(interpolate(value, dotenv), **{"/var/lib/tpp": str(var_dir)})
            for name, ours in (
                ("DATABASE_URL", portal_db.url),
                ("BANK_SIM_DATABASE_URL", bank_db.url),
                ("REDIS_URL", redis_url),
            ):
                if name in found:
                    kind = "redis://" if name == "REDIS_URL" else "postgres://"
                    assert found[name].startswith(kind), f"{service}: {name}={found[name]}"
                    found[name] = ours
            if "PORTAL_BASE_URL" in found:
                assert found["PORTAL_BASE_URL"] == "https://localhost", found["PORTAL_BASE_URL"]
                found["PORTAL_BASE_URL"] = portal_url  # the proxy's https port is not 443 here
            if "PORT" in found:
                assert found["PORT"] == "8001", found["PORT"]
                found["PORT"] = str(bank_port)
            return found

        def var_of(service: str) -> dict[str, str]:
            return {"/var/lib/tpp": str(directory / "var" / service)}

        environments = {name: environment(name) for name in ("migrate", "bank-migrate", *LONG_RUNNING)}
        assert environments["web"]["DJANGO_ENV"] == "production"
        assert environments["bank"]["BANK_SIM_PUBLIC_URL"] == bank_public_url
        product = Product(
            directory=directory,
            # Django code of the test (users it makes, the bank's sandbox control) in web's environment; manage.py,
            # gunicorn and celery name the settings module themselves.
            env={**environments["web"], "DJANGO_SETTINGS_MODULE": "tpp_portal.settings"},
            bank_url=bank_public_url,  # where the browser meets the bank: its SCA pages through the proxy
            bank_port=bank_port,
            bank_env=environments["bank"],
            proxy=None,  # type: ignore[arg-type]  # no fault proxy: the portal calls the bank directly
            portal_url=portal_url,
            db=portal_db,
            redis=None,
        )
        stack.callback(lambda: [product.stop(name) for name in list(product.processes)])
        stack.callback(lambda: product.stop("worker", sig=9))  # spares the prefork worker's warm shutdown

        # The one-offs (compose runs them before anything that uses the databases) and the image build's
        # collectstatic, at the same time.
        one_offs = {
            name: product._spawn(name, _argv(SERVICES[name]["command"], dotenv, swap), env=environments[name])
            for name in ("migrate", "bank-migrate")
        }
        one_offs["collectstatic"] = product._spawn(
            "collectstatic", ["python", "manage.py", "collectstatic", "--noinput"], env=environments["web"]
        )
        for name, process in one_offs.items():
            assert process.wait(timeout=300) == 0, f"{name} failed:\n{product.log(name)}"

        for name in LONG_RUNNING:
            product._spawn(
                name, _argv(SERVICES[name]["command"], dotenv, swap, **var_of(name)), env=environments[name]
            )
        for name in LONG_RUNNING:
            check = _argv(SERVICES[name]["healthcheck"]["test"], dotenv, swap, **var_of(name))

            def healthy(name=name, check=check) -> bool:
                process = product.processes[name]
                assert process.poll() is None, f"{name} ended with {process.returncode}:\n{product.log(name)}"
                done = subprocess.run(
                    check, cwd=ROOT, env=environments[name], capture_output=True, timeout=60, check=False
                )
                return done.returncode == 0 or _schedule_written_by_this_python(check)

            wait_until(
                healthy, timeout=HEALTH_TIMEOUT, interval=1.0, message=f"{name} healthy\n{product.log(name)}"
            )

        conf = loopback_proxy_conf(
            ports=ports,
            public_host=interpolate(SERVICES["proxy"]["environment"]["PUBLIC_HOST"], dotenv),
            tls_dir=tls_dir,
            ca_file=pki_dir / "ca.pem",
            portal=f"http://127.0.0.1:{web_port}",
            bank=f"https://127.0.0.1:{bank_port}",
        )
        nginx = nginx_prepare(directory / "proxy", conf, health_port=ports.health)
        assert nginx.check.returncode == 0, nginx.check.stderr
        stack.enter_context(running_nginx(nginx))

        unused = set(swap.swaps) - swap.used - {"/var/lib/tpp"}
        assert not unused, f"docker/compose.yaml no longer has {sorted(unused)}: update the swaps"
        yield Deployment(
            product=product,
            ports=ports,
            portal_url=portal_url,
            bank_public_url=bank_public_url,
            proxy_ca=directory / "proxy-ca.pem",
            environments=environments,
            proxy_logs=(directory / "access.log", nginx.log, nginx.image_access_log),
        )


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Iterator[Deployment]:
    with production(tmp_path_factory.mktemp("production")) as running:
        yield running


# --- the checks ---------------------------------------------------------------------------------------------


def test_check_deploy_is_clean_in_the_production_environment(deployment):
    done = subprocess.run(
        ["python", "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=deployment.environments["web"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout, done.stdout + done.stderr


def test_a_customer_signs_in_connects_and_pays_to_settlement_over_https_through_the_proxy(deployment, browser):
    product = deployment.product
    email = "smoke@customer.example"
    secret = new_totp_secret()
    create_user(product, email=email, password=PASSWORD, totp_secret=secret)
    context = browser.new_context(
        locale="en-GB",
        # The proxy's certificate is issued by the test's own CA, which this chromium cannot be given; the TLS
        # of the same proxy is verified against that CA in the forged-address test below.
        ignore_https_errors=True,
        extra_http_headers={"X-Forwarded-For": FORGED},  # on every request, to the portal and to the bank
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    visited: list[str] = []
    page.on("framenavigated", lambda frame: visited.append(frame.url) if frame == page.main_frame else None)
    requested: list[str] = []  # every request, redirects included (the bank's redirect back is one)
    page.on("request", lambda request: requested.append(request.url))
    try:
        # Sign-in: the password, then the authenticator app's code.
        sign_in(page, product, email, PASSWORD, totp_secret=secret)
        assert any("/auth/2fa/authenticate/" in url for url in visited), visited
        answer = page.goto(f"{deployment.portal_url}/")
        assert answer.status == 200
        assert answer.headers.get("strict-transport-security", "").startswith("max-age="), answer.headers

        # Connect: the portal's form, the bank's SCA screens through the proxy's bank port, back to the portal.
        connect_bank(page, product, identity=PRIVATE_1, accounts=["Brukskonto", "Høyrentekonto"])
        assert any(url.startswith(f"{deployment.bank_public_url}/sca/authorize") for url in visited), visited
        # Back on the new connection's accounts, with the balances the bank gave.
        page.wait_for_url(re.compile(r"/bank/accounts/\?connection=\d+$"))
        assert page.get_by_text("Your bank is connected.").is_visible()
        rows = page.locator("tr.account-row")
        assert rows.count() == 2
        overview = page.locator("table.accounts-overview").inner_text()
        assert "Brukskonto" in overview and "Høyrentekonto" in overview
        assert re.search(r"\d[\d,  ]*\.\d\d NOK", overview), overview

        # A payment: the form, the password again, the review, SCA at the bank, back on its page.
        page.goto(f"{deployment.portal_url}/payments/new/")
        choose_debtor(page, "Høyrentekonto")
        fill(
            page,
            {
                "amount": "1 250",
                "currency": "NOK",
                "creditor_name": "Svensson Design AB",
                "creditor_account": "SE45 5000 0000 0583 9825 7466",
                "creditor_agent": "ESSESESS",
                "creditor_country": "SE",
                "creditor_city": "Göteborg",
                "remittance_information": "Smoke test",
            },
        )
        review_the_payment(page)
        at_review(page, PASSWORD)
        send_to_bank(page)
        assert page.url.startswith(f"{deployment.bank_public_url}/sca/authorize"), page.url
        approve_at_bank(page, identity=PRIVATE_1, agreement="PRIVATE - ")
        assert page.url.startswith(deployment.portal_url), page.url
        pk = payment_pk(page)

        # Settlement: the sandbox bank's batches run (its sandbox control), then the customer asks the portal
        # to check; the page shows what the bank now says.
        shown = [shown_status(page)]
        for _ in range(4):
            if shown[-1] == "ACSC":
                break
            for _batch in range(2):
                bank_batch_run(product)
            started = time.monotonic()
            page.locator("#payment-check-form button").click()
            page.wait_for_load_state()
            page.wait_for_selector("#payment-status-label")
            shown.append(shown_status(page))
            if shown[-1] != "ACSC":
                time.sleep(max(0.0, CHECK_INTERVAL - (time.monotonic() - started)))
        assert shown[-1] == "ACSC", f"not settled: the page showed {shown}\n{deployment.logs()}"
        assert page.locator("#payment-status-label").inner_text() == "Completed"
        assert payment_row(product, pk)["transaction_status"] == "ACSC"
        assert all(url.startswith(("https://localhost:", "about:")) for url in visited), visited

        # The bank's redirects back carried the state, the TPP-Session-ID and the PSU-ID: no log line holds them.
        callbacks = [urlsplit(url).query for url in requested if "/bank/callback?" in url]
        values = {
            value
            for query in callbacks
            for name, value in parse_qsl(query)
            if name in {"state", "tpp-session-id", "psu-id", "psu-corporate-id"}
        }
        assert any(name == "psu-id" for query in callbacks for name, _value in parse_qsl(query)), requested
        logs = deployment.every_log()
        assert '"GET /bank/callback HTTP/1.1" 302' in logs, logs[-3000:]  # the lines are there to search
        assert not [value for value in values if value in logs], [v for v in values if v in logs]
    except Exception:
        print(deployment.logs())
        raise
    finally:
        context.close()


class _From(HTTPAdapter):
    """Requests made from ``address`` (another loopback address than the proxy's own 127.0.0.1)."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.address, 0)
        return super().init_poolmanager(*args, **kwargs)


def _client(deployment: Deployment, address: str) -> requests.Session:
    session = requests.Session()
    session.mount("https://", _From(address))
    return session


def _sign_in(deployment: Deployment, session: requests.Session, login: str, password: str, forged: str):
    url = deployment.portal_url + SIGN_IN_PATH
    verify = str(deployment.proxy_ca)  # the proxy's certificate, checked for "localhost" (per request: a
    # REQUESTS_CA_BUNDLE of the environment would win over the session's)
    page = session.get(url, headers={"X-Forwarded-For": forged}, timeout=30, verify=verify)
    assert page.status_code == 200, page.text[:500]
    return session.post(
        url,
        data={"csrfmiddlewaretoken": csrf_of(page.text), **sign_in_form(login, password)},
        headers={"X-Forwarded-For": forged, "Referer": url, "Origin": deployment.portal_url},
        timeout=30,
        allow_redirects=False,
        verify=verify,
    )


def test_a_forged_x_forwarded_for_changes_nothing(deployment):
    """Five wrong passwords from 127.0.0.1 through the proxy, each claiming another address in X-Forwarded-For:
    the sign-in limit still counts them under the one real address, so the right password is refused from it
    too; from another real address (127.0.0.2) the owner signs in, even when it claims to be 127.0.0.1."""
    product = deployment.product
    login = "smoke-limit@customer.example"
    create_user(product, email=login, password=PASSWORD)
    attacker = _client(deployment, "127.0.0.1")
    for number in range(5):
        wrong = _sign_in(deployment, attacker, login, f"wrong password {number}", f"203.0.113.{10 + number}")
        assert wrong.status_code == 200, (wrong.status_code, wrong.text[:500])
        assert "/auth/sign-in/" in wrong.url
    refused = _sign_in(deployment, attacker, login, PASSWORD, FORGED)
    assert refused.status_code == 429, (refused.status_code, refused.headers, refused.text[:800])
    assert "Signing in is blocked for now" in refused.text

    owner = _client(deployment, "127.0.0.2")
    signed_in = _sign_in(deployment, owner, login, PASSWORD, "127.0.0.1")
    assert signed_in.status_code == 302, (signed_in.status_code, signed_in.text[:800])
    assert "/auth/sign-in/" not in signed_in.headers["Location"]
