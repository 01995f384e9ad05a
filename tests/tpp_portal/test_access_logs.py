"""No state, TPP-Session-ID, PSU-ID or PSU-Corporate-ID in any log line of the servers of docker/compose.yaml.

The bank sends the customer back to
``/bank/callback?state=...&tpp-session-id=...&psu-id=...&psu-corporate-id=...``. The portal's gunicorn (compose's
``web`` command: tpp_portal/gunicorn.conf.py), the sandbox bank's gunicorn (compose's ``bank`` command, over TLS:
bank_simulator/gunicorn.conf.py) and Debian's nginx running docker/proxy/default.conf.template inside an
nginx.conf of the image's kind (its "main" access log format at the http level) run on loopback. Real callback
addresses go through the proxy and straight to gunicorn, with the TPP-Session-ID also as a header and the callback
address as the Referer of the next request, and a request line gunicorn refuses (its warning quotes it). Every
line of every log is then searched for the values, after checking that the request lines themselves were logged (so
the search can fail). A second nginx whose portal is down shows that its error log does not write the request line
either.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from devtools import pki
from devtools.livebank import free_port
from tests.deployment import SERVICES, ProxyPorts, loopback_proxy_conf, nginx_prepare, running_nginx

ROOT = Path(__file__).resolve().parents[2]
STATE = "St4teOfTheRedirectQx7Zk2"
SESSION = "SessionOfTheTppWq8Vn3Lp5"
PSU_ID = "5b7e0c1a-3d2f-4e6a-9b8c-7d6e5f4a3b2c"
CORPORATE_ID = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
SECRETS = (STATE, SESSION, PSU_ID, CORPORATE_ID)
CALLBACK = (
    f"/bank/callback?state={STATE}&tpp-session-id={SESSION}&psu-id={PSU_ID}"
    f"&psu-corporate-id={CORPORATE_ID}&context=CORPORATE"
)
SCA_PAGE = f"/sca/authorize?state={STATE}&tpp-session-id={SESSION}&psu-id={PSU_ID}"


def compose_command(service: str, swaps: dict[str, str]) -> list[str]:
    """The service's command from docker/compose.yaml, its gunicorn from this virtualenv, each swap used."""
    command = list(SERVICES[service]["command"])
    assert command[0] == "gunicorn", command
    for old in swaps:
        assert any(old in part for part in command), f"compose's {service} command no longer has {old!r}"
    command = [swaps.get(part, part) for part in command]
    return [str(Path(sys.executable).parent / "gunicorn"), *command[1:]]


def wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{log.name} did not start:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.2)


@contextlib.contextmanager
def server(command: list[str], env: dict[str, str], port: int, log: Path):
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process, log)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


def ask(port: int, path: str, headers: dict[str, str], context: ssl.SSLContext | None = None) -> int:
    if context is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    else:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def malformed_request(port: int, context: ssl.SSLContext | None = None) -> None:
    """A request target gunicorn refuses (a letter outside ASCII): its warning ("Invalid request from ip=...:
    Invalid HTTP request line: '...'") quotes the target it read."""
    with contextlib.ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
        if context is not None:
            sock = stack.enter_context(context.wrap_socket(sock, server_hostname="bank"))
        sock.sendall(f"GET {CALLBACK}&name=Ærø HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        with contextlib.suppress(OSError):
            sock.recv(4096)


def leaks(text: str) -> list[str]:
    return [f"{secret} in: {line}" for line in text.splitlines() for secret in SECRETS if secret in line]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Both gunicorns behind nginx, the requests sent; the text of every log, once every server has stopped."""
    tmp = tmp_path_factory.mktemp("access-logs")
    subprocess.run(
        [sys.executable, "-m", "devtools.pki", str(tmp / "pki"), "--tls-host", "bank"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    proxy_ca = pki.issue_ca()
    front = pki.issue_tls_server(proxy_ca, hosts=("localhost", "127.0.0.1"))
    (tmp / "tls").mkdir()
    (tmp / "tls/fullchain.pem").write_bytes(front.cert_pem())
    (tmp / "tls/privkey.pem").write_bytes(front.key_pem())
    client_context = ssl.create_default_context(cadata=proxy_ca.cert_pem().decode())

    web_port, bank_port = free_port(), free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "DATABASE_", "REDIS_"))}
    portal_env = {
        **base,
        "VAR_DIR": str(tmp / "var"),
        "BANK_SIGNING_CERT": str(tmp / "pki/tpp-qseal.pem"),
        "BANK_SIGNING_KEY": str(tmp / "pki/tpp-qseal.key"),
        "TRUSTED_PROXY_COUNT": "1",
    }
    bank_env = {
        **base,
        "BANK_SIM_DATABASE_URL": f"sqlite:///{tmp / 'bank.sqlite3'}",
        "BANK_SIM_TRUSTED_CAS": str(tmp / "pki/ca.pem"),
        "BANK_SIM_BIND": f"127.0.0.1:{bank_port}",
        "BANK_SIM_WORKERS": "1",
        "BANK_SIM_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    subprocess.run(
        [sys.executable, "-m", "bank_simulator", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=bank_env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    web = compose_command("web", {"0.0.0.0:8000": f"127.0.0.1:{web_port}", "3": "1"})  # one worker is enough
    bank = compose_command(
        "bank",
        {
            "/run/pki/bank-tls.pem": str(tmp / "pki/bank-tls.pem"),
            "/run/pki/bank-tls.key": str(tmp / "pki/bank-tls.key"),
        },
    )
    ports = ProxyPorts(http=free_port(), https=free_port(), bank=free_port(), health=free_port())
    conf = loopback_proxy_conf(
        ports=ports,
        public_host="localhost",
        tls_dir=tmp / "tls",
        ca_file=tmp / "pki/ca.pem",
        portal=f"http://127.0.0.1:{web_port}",
        bank=f"https://127.0.0.1:{bank_port}",
        access_log=tmp / "proxy-access.log",
    )
    nginx = nginx_prepare(tmp / "proxy", conf, health_port=ports.health)
    assert nginx.check.returncode == 0, nginx.check.stderr

    statuses = {}
    with (
        server(web, portal_env, web_port, tmp / "web.log"),
        server(bank, bank_env, bank_port, tmp / "bank.log"),
        running_nginx(nginx),
    ):
        host = {"Host": "localhost", "TPP-Session-ID": SESSION}
        referer = {"Referer": f"https://localhost{CALLBACK}"}
        statuses["callback"] = ask(ports.https, CALLBACK, host, client_context)
        statuses["login"] = ask(
            ports.https, f"/auth/sign-in/?next={quote(CALLBACK, safe='')}", {**host, **referer}, client_context
        )
        statuses["plain http"] = ask(ports.http, CALLBACK, host)
        statuses["sca page"] = ask(
            ports.bank, SCA_PAGE, {"Host": f"localhost:{ports.bank}", "TPP-Session-ID": SESSION}, client_context
        )
        statuses["straight to web"] = ask(web_port, CALLBACK, {**host, **referer})
        malformed_request(web_port)
        malformed_request(bank_port, ssl.create_default_context(cafile=str(tmp / "pki/ca.pem")))

    # The same proxy with its portal down: nginx's error log would name the whole request line.
    dead = ProxyPorts(http=free_port(), https=free_port(), bank=free_port(), health=free_port())
    down = nginx_prepare(
        tmp / "proxy-down",
        loopback_proxy_conf(
            ports=dead,
            public_host="localhost",
            tls_dir=tmp / "tls",
            ca_file=tmp / "pki/ca.pem",
            portal=f"http://127.0.0.1:{free_port()}",
            bank=f"https://127.0.0.1:{free_port()}",
            access_log=tmp / "proxy-down-access.log",
        ),
        health_port=dead.health,
    )
    with running_nginx(down):
        statuses["portal down"] = ask(dead.https, CALLBACK, {"Host": "localhost"}, client_context)

    paths = {
        "web (gunicorn)": tmp / "web.log",
        "bank (gunicorn)": tmp / "bank.log",
        "proxy error log": nginx.log,
        "proxy access log": tmp / "proxy-access.log",
        "proxy access log, the image's main format": nginx.image_access_log,
        "proxy (portal down) error log": down.log,
        "proxy (portal down) access log": tmp / "proxy-down-access.log",
        "proxy (portal down) access log, the image's main format": down.image_access_log,
    }
    return statuses, {name: path.read_text() if path.exists() else "" for name, path in paths.items()}


def test_the_requests_reached_the_servers(logs):
    statuses, _texts = logs
    assert statuses == {
        "callback": 400,  # signed out: refused, as it should be
        "login": 200,
        "plain http": 301,
        "sca page": 404,  # the bank knows no such SCA
        "straight to web": 400,
        "portal down": 502,
    }, statuses


def test_the_request_lines_were_logged_without_their_query(logs):
    """The lines the search below looks in: without them it could not fail."""
    _statuses, texts = logs
    assert (
        texts["web (gunicorn)"].count('"GET /bank/callback HTTP/1.1" 400') == 2
    )  # through the proxy and straight
    assert '"GET /auth/sign-in/ HTTP/1.1" 200' in texts["web (gunicorn)"]
    assert "Invalid request from ip=127.0.0.1" in texts["web (gunicorn)"]
    assert "/bank/callback?[query removed]" in texts["web (gunicorn)"]
    assert '"GET /sca/authorize HTTP/1.1" 404' in texts["bank (gunicorn)"]
    assert "/bank/callback?[query removed]" in texts["bank (gunicorn)"]
    access = texts["proxy access log"]
    assert '"GET /bank/callback HTTP/1.1" 400' in access
    assert '"GET /bank/callback HTTP/1.1" 301' in access
    assert '"GET /auth/sign-in/ HTTP/1.1" 200' in access
    assert '"GET /sca/authorize HTTP/1.1" 404' in access
    down = texts["proxy (portal down) access log"]
    assert '"GET /bank/callback HTTP/1.1" 502' in down and "upstream_status=502" in down
    # The servers' own lines replace the image's http-level log: nothing is written twice.
    assert texts["proxy access log, the image's main format"] == ""


def test_no_log_line_holds_the_state_the_session_or_a_psu_identifier(logs):
    _statuses, texts = logs
    found = {name: leaks(text) for name, text in texts.items() if leaks(text)}
    assert not found, found


def test_every_gunicorn_command_shipped_uses_its_configuration():
    """compose's services, the image's CMD and both Procfiles (``make run``, ``make bank``): each gunicorn names
    the configuration file whose logs leave the query out, and sets no access log format of its own."""
    commands = [
        " ".join(service["command"]) for service in SERVICES.values() if "gunicorn" in str(service.get("command"))
    ]
    dockerfile = (ROOT / "docker/Dockerfile").read_text()
    commands.append(" ".join(json.loads(dockerfile[dockerfile.rindex("\nCMD ") + 5 :].strip())))
    for procfile in (ROOT / "Procfile", ROOT / "bank_simulator/Procfile"):
        commands += [
            line for line in procfile.read_text().splitlines() if "gunicorn" in line and not line.startswith("#")
        ]
    assert len(commands) == 5, commands
    for command in commands:
        module = "tpp_portal" if "tpp_portal.wsgi" in command else "bank_simulator"
        assert f"--config {module}/gunicorn.conf.py" in command, command
        assert "--access-logformat" not in command and "--access-logfile" not in command, command
