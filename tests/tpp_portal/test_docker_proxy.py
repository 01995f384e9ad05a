"""The reverse proxy of docker/compose.yaml (docker/proxy/default.conf.template), checked with Debian's nginx.

No Docker engine runs here, so the template is rendered as the nginx image's entrypoint renders it (only the
variables set in the environment are replaced), checked with ``nginx -t``, then run by nginx on loopback in
front of two small echo servers standing in for web and the bank: what reaches them is what the portal and the
bank would receive. Only the addresses are swapped (ports for loopback ports, the certificate folders for
temporary ones); every directive is the template's own.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from devtools import pki
from devtools.livebank import free_port
from tests.deployment import PROXY_TEMPLATE as TEMPLATE
from tests.deployment import ProxyPorts, loopback_proxy_conf, nginx_prepare, running_nginx

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ADDRESS = "127.0.0.2"  # the test's browser: another loopback address than the proxy's own (127.0.0.1)


class Echo(http.server.ThreadingHTTPServer):
    """Answers every request with the request itself (path and headers) as JSON, and keeps them."""

    def __init__(self, context: ssl.SSLContext | None = None):
        self.seen: list[dict] = []
        echo = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                request = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
                echo.seen.append(request)
                body = json.dumps(request).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        if context:
            self.socket = context.wrap_socket(self.socket, server_side=True)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The template rendered for loopback (upstreams: a portal echo over http, a bank echo over https for the
    name "bank"), with its certificates, and what ``nginx -t`` said about it."""
    tmp = tmp_path_factory.mktemp("proxy")
    ca = pki.issue_ca()
    tls = tmp / "tls"
    tls.mkdir()
    front = pki.issue_tls_server(ca, hosts=("localhost", "127.0.0.1"))
    write(tls / "fullchain.pem", front.cert_pem())
    write(tls / "privkey.pem", front.key_pem())
    ca_file = write(tmp / "ca.pem", ca.cert_pem())
    bank_tls = pki.issue_tls_server(ca, hosts=("bank",))  # the name the proxy checks, as in the compose network
    bank_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    bank_context.load_cert_chain(
        write(tmp / "bank-tls.pem", bank_tls.cert_pem()), write(tmp / "bank-tls.key", bank_tls.key_pem())
    )
    portal, bank = Echo(), Echo(bank_context)
    ports = ProxyPorts(http=free_port(), https=free_port(), bank=free_port(), health=free_port())
    conf = loopback_proxy_conf(
        ports=ports,
        public_host="localhost",
        tls_dir=tls,
        ca_file=ca_file,
        portal=f"http://127.0.0.1:{portal.port}",
        bank=f"https://127.0.0.1:{bank.port}",
    )
    nginx = nginx_prepare(tmp, conf, health_port=ports.health)
    yield {
        "nginx": nginx,
        "check": nginx.check,
        "ports": {"http": ports.http, "https": ports.https, "bank": ports.bank, "health": ports.health},
        "portal": portal,
        "bank": bank,
        "context": ssl.create_default_context(cafile=str(ca_file)),
    }
    portal.shutdown()
    bank.shutdown()


@pytest.fixture(scope="module")
def proxy(rendered):
    """nginx running the rendered template on loopback."""
    with running_nginx(rendered["nginx"]):
        yield rendered


def ask(proxy, port: str, path: str, headers: dict[str, str] | None = None, *, tls: bool = True):
    """One request from CLIENT_ADDRESS; (status, headers, parsed echo or None)."""
    if tls:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", proxy["ports"][port], context=proxy["context"], source_address=(CLIENT_ADDRESS, 0)
        )
    else:
        connection = http.client.HTTPConnection(
            "127.0.0.1", proxy["ports"][port], source_address=(CLIENT_ADDRESS, 0)
        )
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        body = response.read()
        echoed = json.loads(body) if response.getheader("Content-Type") == "application/json" else None
        return response.status, dict(response.getheaders()), echoed
    finally:
        connection.close()


def test_nginx_t_accepts_the_rendered_configuration(rendered):
    check = rendered["check"]
    assert check.returncode == 0, check.stderr
    assert "test is successful" in check.stderr


def test_the_template_never_passes_on_what_the_client_sent_as_forwarding_headers():
    assert 'proxy_set_header X-Forwarded-For "$remote_addr, $server_addr";' in TEMPLATE
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in TEMPLATE
    for appending in ("$proxy_add_x_forwarded_for", "$http_x_forwarded_for", "$http_forwarded", "real_ip_header"):
        assert appending not in TEMPLATE
    # Headers set at the http level reach a location only when it sets none of its own.
    servers = TEMPLATE[TEMPLATE.index("server {") :]
    assert "proxy_set_header" not in servers


def test_the_portal_receives_the_client_address_and_the_scheme_from_the_proxy_only(proxy):
    spoofed = {
        "Host": "localhost",
        "X-Forwarded-For": "203.0.113.9",
        "X-Forwarded-Proto": "http",
        "X-Forwarded-Host": "evil.example",
        "Forwarded": "for=203.0.113.9;proto=http",
        "X-Real-IP": "203.0.113.9",
    }
    status, _headers, echoed = ask(proxy, "https", "/accounts/?page=2", spoofed)
    assert status == 200
    received = echoed["headers"]
    assert echoed["path"] == "/accounts/?page=2"
    assert received["x-forwarded-for"] == f"{CLIENT_ADDRESS}, 127.0.0.1"
    assert received["x-forwarded-proto"] == "https"
    assert received["host"] == "localhost"
    for dropped in ("forwarded", "x-forwarded-host", "x-real-ip"):
        assert dropped not in received
    assert "203.0.113.9" not in json.dumps(received)


def test_the_portal_reads_the_proxys_header_as_the_clients_address(proxy):
    """The header as web receives it, given to the portal's own client_ip with TRUSTED_PROXY_COUNT=1 (the
    compose file's value), in a process of its own so that the settings derive everything from that count."""
    _status, _headers, echoed = ask(proxy, "https", "/", {"Host": "localhost", "X-Forwarded-For": "203.0.113.9"})
    program = (
        "import django, sys; django.setup()\n"
        "from django.test import RequestFactory\n"
        "from core.clientip import client_ip\n"
        "request = RequestFactory().get('/', REMOTE_ADDR='172.18.0.5', HTTP_X_FORWARDED_FOR=sys.argv[1])\n"
        "print(client_ip(request))\n"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "tpp_portal.settings", "TRUSTED_PROXY_COUNT": "1"}
    result = subprocess.run(
        [sys.executable, "-c", program, echoed["headers"]["x-forwarded-for"]],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == CLIENT_ADDRESS


def test_the_banks_sca_pages_and_nothing_else_of_the_bank_are_public(proxy):
    bank_port = proxy["ports"]["bank"]
    host = f"localhost:{bank_port}"
    status, _headers, echoed = ask(proxy, "bank", "/sca/authorize?state=abc", {"Host": host})
    assert status == 200  # reached the bank over TLS, its certificate checked for the name "bank"
    assert echoed["path"] == "/sca/authorize?state=abc"
    assert echoed["headers"]["host"] == host  # with the port: the bank's CSRF check compares it with Origin
    assert echoed["headers"]["x-forwarded-proto"] == "https"
    seen = len(proxy["bank"].seen)
    for path in ("/v1/accounts", "/v1/sandbox/clock", "/openapi.json", "/healthz", "/sca/authorize/x"):
        status, _headers, _echoed = ask(proxy, "bank", path, {"Host": host})
        assert status == 404, path
    assert len(proxy["bank"].seen) == seen  # none of them reached the bank


def test_plain_http_is_only_redirected_to_the_portal(proxy):
    before = len(proxy["portal"].seen)
    status, headers, _echoed = ask(proxy, "http", "/payments/?x=1", {"Host": "localhost"}, tls=False)
    assert status == 301
    assert headers["Location"] == "https://localhost/payments/?x=1"
    assert len(proxy["portal"].seen) == before


def test_the_health_check_address_of_the_compose_file_answers(proxy):
    connection = http.client.HTTPConnection("127.0.0.1", proxy["ports"]["health"])
    connection.request("GET", "/healthz")
    assert connection.getresponse().status == 200
    connection.close()
