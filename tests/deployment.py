"""docker/ read the way Docker reads it, for tests that run its pieces without a Docker engine.

* :func:`interpolate`: compose's ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``${NAME:?error}``
  and ``${NAME?error}``, and ``$$`` for a literal ``$``, as ``docker compose`` expands them.
* :data:`COMPOSE` / :data:`SERVICES`: docker/compose.yaml (its anchors resolved by PyYAML).
* :func:`image_environment`: the ``ENV`` of the image that runs (the Dockerfile's last stage).
* nginx: :func:`nginx_binary` (Debian's), :func:`render` (what the nginx image's entrypoint makes of
  docker/proxy/default.conf.template), :func:`loopback_proxy_conf` (that rendered file with only its addresses
  swapped for loopback ones), :func:`nginx_prepare` (the image's nginx.conf around it, and ``nginx -t``) and
  :func:`running_nginx` (nginx running it in the foreground).

Development and tests only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())
SERVICES = COMPOSE["services"]
PROXY_TEMPLATE = (ROOT / "docker/proxy/default.conf.template").read_text()
DOCKERFILE = (ROOT / "docker/Dockerfile").read_text()


def interpolate(value, environment: dict[str, str]) -> str:
    """Compose's variable syntax, as `docker compose` expands it. With a colon an empty value counts as unset
    (``:-``, ``:?``); without, only an unset one (``-``, ``?``)."""

    def one(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group(1), match.group(2), match.group(3) or ""
        value = environment.get(name)
        missing = not value if operator and operator.startswith(":") else value is None
        if not missing:
            return value
        if operator in {":?", "?"}:
            raise AssertionError(f"{name} must be set: {argument}")
        return argument if operator in {":-", "-"} else ""

    return re.sub(r"\$\$|\$\{(\w+)(?:(:-|:\?|-|\?)([^}]*))?\}", one, str(value))


def command(service: str) -> str:
    """The service's command as one line ("" for an image's own, the proxy's)."""
    value = SERVICES[service].get("command", "")
    return " ".join(value) if isinstance(value, list) else value


def image_environment() -> dict[str, str]:
    """The variables the image sets (``ENV`` of the Dockerfile's last stage), as every container starts with."""
    final = DOCKERFILE[DOCKERFILE.rindex("\nFROM ") :]
    found: dict[str, str] = {}
    for match in re.finditer(r"^ENV ((?:.*\\\n)*.*)$", final, flags=re.MULTILINE):
        for item in shlex.split(match.group(1).replace("\\\n", " ")):
            name, _, value = item.partition("=")
            found[name] = value
    return found


# --- nginx -------------------------------------------------------------------------------------------------------


def nginx_binary() -> str:
    found = shutil.which("nginx", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    if not found:
        pytest.fail("nginx is not installed: these tests check docker/proxy with it (apt-get install nginx)")
    return found


def render(template: str, environment: dict[str, str]) -> str:
    """What the nginx image's 20-envsubst-on-templates.sh writes: ${NAME} and $NAME replaced when NAME is set."""
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)",
        lambda m: environment.get(m.group(1) or m.group(2), m.group(0)),
        template,
    )


@dataclass(frozen=True)
class ProxyPorts:
    """The loopback ports that stand in for the proxy's 80, 443, BANK_PUBLIC_PORT and its health check."""

    http: int
    https: int
    bank: int
    health: int


def loopback_proxy_conf(
    *,
    ports: ProxyPorts,
    public_host: str,
    tls_dir: Path,
    ca_file: Path,
    portal: str,
    bank: str,
    access_log: Path | None = None,
) -> str:
    """The template rendered with the proxy service's variables (PUBLIC_HOST, BANK_PUBLIC_PORT), then only its
    addresses swapped: the listening ports for loopback ones, the certificate folders for ``tls_dir`` and
    ``ca_file``, web and the bank for ``portal`` (http://host:port) and ``bank`` (https://host:port), the image's
    access log (/var/log/nginx/access.log, its standard output) for ``access_log`` (default: access.log beside
    ``tls_dir``). Every directive is the template's own; each swapped text must still be in it."""
    conf = render(PROXY_TEMPLATE, {"PUBLIC_HOST": public_host, "BANK_PUBLIC_PORT": str(ports.bank)})
    assert "${" not in conf, "a variable of the template is not set by docker/compose.yaml's proxy service"
    for old, new in (
        ("listen 80 ", f"listen 127.0.0.1:{ports.http} "),
        ("listen 443 ", f"listen 127.0.0.1:{ports.https} "),
        (f"listen {ports.bank} ", f"listen 127.0.0.1:{ports.bank} "),
        ("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{ports.health};"),
        ("/etc/nginx/tls/", f"{tls_dir}/"),
        ("/run/pki/ca.pem", str(ca_file)),
        ("http://web:8000", portal),
        ("https://bank:8001", bank),
        ("/var/log/nginx/access.log", str(access_log or tls_dir.parent / "access.log")),
    ):
        assert old in conf, f"the template no longer has {old!r}"
        conf = conf.replace(old, new)
    return conf


@dataclass(frozen=True)
class Nginx:
    check: subprocess.CompletedProcess  # what ``nginx -t`` said
    run: list[str]  # the command that runs it in the foreground
    log: Path  # its standard output and error: the error log
    health_port: int
    image_access_log: Path  # where the image's own http-level access_log ("main" format) writes


def nginx_prepare(directory: Path, conf: str, *, health_port: int) -> Nginx:
    """``conf`` as the nginx image's conf.d/default.conf inside a short nginx.conf of the image's kind (its
    temporary folders in ``directory``; its error log level, and its "main" access log format and http-level
    access_log, into ``image_access_log``), checked with ``nginx -t``."""
    binary = nginx_binary()
    (directory / "conf.d").mkdir(parents=True, exist_ok=True)
    (directory / "conf.d/default.conf").write_text(conf)
    (directory / "nginx.conf").write_text(
        f"""
        worker_processes 1;
        pid {directory}/nginx.pid;
        error_log stderr notice;
        events {{ worker_connections 256; }}
        http {{
            log_format main '$remote_addr - $remote_user [$time_local] "$request" '
                            '$status $body_bytes_sent "$http_referer" '
                            '"$http_user_agent" "$http_x_forwarded_for"';
            access_log {directory}/image-access.log main;
            client_body_temp_path {directory}/client_body;
            proxy_temp_path {directory}/proxy;
            fastcgi_temp_path {directory}/fastcgi;
            uwsgi_temp_path {directory}/uwsgi;
            scgi_temp_path {directory}/scgi;
            include {directory}/conf.d/*.conf;
        }}
        """
    )
    command = [binary, "-p", str(directory), "-c", str(directory / "nginx.conf"), "-e", "stderr"]
    # As root, the workers stay root here: they use this test's temporary folders.
    user = "user root; " if os.geteuid() == 0 else ""
    check = subprocess.run(
        [*command, *(["-g", user] if user else []), "-t"], capture_output=True, text=True, timeout=60, check=False
    )
    return Nginx(
        check=check,
        run=[*command, "-g", f"{user}daemon off;"],
        log=directory / "nginx.log",
        health_port=health_port,
        image_access_log=directory / "image-access.log",
    )


@contextlib.contextmanager
def running_nginx(nginx: Nginx) -> Iterator[subprocess.Popen]:
    """nginx running in the foreground until its health check's port takes connections; stopped on exit."""
    with nginx.log.open("w") as log:
        server = subprocess.Popen(nginx.run, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", nginx.health_port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"nginx did not start: {nginx.log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield server
    finally:
        server.terminate()
        server.wait(timeout=15)
