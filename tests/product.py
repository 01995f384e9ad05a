"""The whole product as separate processes, for fault and load tests: sandbox bank, a fault-injecting proxy in
front of it, the portal (gunicorn), a Celery worker and a Celery beat.

``whole_product(directory, ...)`` is a context manager giving a :class:`Product`:

* the sandbox bank: ``devtools.livebank.running_bank`` (its own SQLite database in ``directory``);
  ``bank_stop()``/``bank_start()`` stop it and start it again on the same port with the same database;
* :class:`FaultProxy`: a loopback HTTP proxy the portal's ``BANK_BASE_URL`` points at. It forwards each request
  to the bank (one request per connection, ``Connection: close``) unless a :class:`Fault` says otherwise: wait
  (beyond the client's timeout), answer 500 or 429 itself, or drop the connection before or after the bank saw
  the request. Every request it handled is in ``proxy.seen``;
* the portal: gunicorn ``tpp_portal.wsgi`` on a free loopback port with its own ``VAR_DIR``; its database is a
  SQLite file there, or with ``DATABASE_URL`` set (PostgreSQL) a dedicated database created for it and dropped
  afterwards; its broker and cache are Redis (``REDIS_URL``, or a redis-server of its own with
  ``redis="own"``) or the filesystem broker in its ``VAR_DIR``;
* a Celery worker and a Celery beat; ``worker_kill()`` sends SIGKILL, ``worker_start()`` starts a new one;
* ``manage(...)`` runs a manage.py command in the portal's environment, ``django(code)`` runs Python in it
  (Django set up; the value of ``result`` comes back as JSON), ``sql(...)`` reads the portal's database
  directly.

Every process binds to 127.0.0.1 only; logs go to ``directory`` and their tails are in assertion messages.
Development and tests only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

from devtools.livebank import NotReady, free_port, running_bank, wait_for_ok
from tests.signin import SIGN_IN_PATH, sign_in_form

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 60.0
COMMAND_TIMEOUT = 180.0
_RESULT_MARK = "@@PRODUCT-RESULT@@"


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return "(no log)"


def wait_until(predicate, *, timeout: float, interval: float = 0.25, message: str = "") -> object:
    """Call ``predicate`` until it returns something truthy (returned); AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {message or predicate}")
        time.sleep(interval)


# --- the fault-injecting proxy ---------------------------------------------------------------------------------


@dataclass
class Fault:
    """What the proxy does with the requests it matches, instead of forwarding them.

    ``status``: answer with this HTTP status itself (500, 429 ...) and a tppMessages body (``code``, ``text``),
    ``retry_after`` as Retry-After. ``delay``: wait this many seconds first (then answer, forward, or drop).
    ``drop``: close the connection without any answer. ``forward``: pass the request on to the bank (after the
    delay; with ``drop`` the bank's answer is thrown away: the request reached the bank, its answer is lost).
    ``match``: a regex on "METHOD /path" (None: every request). ``times``: how many requests it applies to
    (None: until cleared).
    """

    status: int | None = None
    code: str = "INTERNAL_SERVER_ERROR"
    text: str = "The bank is having a problem (fault injected by the test)."
    retry_after: int | None = None
    delay: float = 0.0
    drop: bool = False
    forward: bool = False
    match: str | None = None
    times: int | None = None


@dataclass
class Seen:
    method: str
    path: str
    fault: bool
    status: int | None  # what the client got (None: no answer)
    forwarded: bool
    started: float = 0.0  # time.monotonic() when the request arrived, and when it was answered or dropped
    ended: float = 0.0


class _ProxyHandler(socketserver.BaseRequestHandler):
    server: _ProxyServer

    def handle(self) -> None:
        proxy = self.server.proxy
        sock: socket.socket = self.request
        sock.settimeout(120)
        try:
            head, body = _read_request(sock)
        except (OSError, ValueError):
            return
        if head is None:
            return
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, target = [*request_line.split(" "), "", ""][:2]
        path = urlsplit(target).path
        started = time.monotonic()
        proxy.arrive(f"{method} {path}")
        fault = proxy.take_fault(f"{method} {path}")
        if fault is None:
            status = self._forward(sock, head, body)
            proxy.record(Seen(method, path, False, status, True, started))
            return
        if fault.delay:
            time.sleep(fault.delay)
        if fault.forward:
            if fault.drop:
                _forward_and_read(proxy.upstream, head, body)
                proxy.record(Seen(method, path, True, None, True, started))
                return  # the bank did it; its answer is lost
            status = self._forward(sock, head, body)
            proxy.record(Seen(method, path, True, status, True, started))
            return
        if fault.drop or fault.status is None:
            proxy.record(Seen(method, path, True, None, False, started))
            return
        payload = json.dumps(
            {"tppMessages": [{"category": "ERROR", "code": fault.code, "text": fault.text}]}
        ).encode()
        reason = {429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}.get(
            fault.status, "Error"
        )
        headers = [
            f"HTTP/1.1 {fault.status} {reason}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
            f"X-Request-ID: {_header(head, b'x-request-id') or uuid.uuid4()}",
            "Connection: close",
        ]
        if fault.retry_after is not None:
            headers.append(f"Retry-After: {fault.retry_after}")
        with contextlib.suppress(OSError):
            sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode("latin-1") + payload)
        proxy.record(Seen(method, path, True, fault.status, False, started))

    def _forward(self, sock: socket.socket, head: bytes, body: bytes) -> int | None:
        answer = _forward_and_read(self.server.proxy.upstream, head, body)
        if answer is None:
            return None  # the bank is down: the client sees the connection closed without an answer
        with contextlib.suppress(OSError):
            sock.sendall(answer)
        self.server.proxy.last_answer = answer[:2000]
        match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
        return int(match.group(1)) if match else None


def _header(head: bytes, name: bytes) -> str | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().decode("latin-1")
    return None


def _read_request(sock: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
        if len(data) > 1_000_000:
            raise ValueError("request head too long")
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(_header(head, b"content-length") or 0)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head, body


def _forward_and_read(upstream: tuple[str, int], head: bytes, body: bytes) -> bytes | None:
    """Send the request to the bank with ``Connection: close`` and read its whole answer (None: no bank)."""
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    request = b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body
    try:
        with socket.create_connection(upstream, timeout=120) as bank:
            bank.sendall(request)
            chunks = []
            while chunk := bank.recv(65536):
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks) or None


class _ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: FaultProxy


class FaultProxy:
    """A loopback HTTP proxy in front of ``upstream`` (host, port) that injects :class:`Fault` s."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self.seen: list[Seen] = []  # handled requests
        self.last_answer = b""  # the start of the bank's last forwarded answer (for failure messages)
        self.arrived: list[str] = []  # "METHOD /path" of every request as it arrives (also those still open)
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.proxy = self
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def inject(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    @contextlib.contextmanager
    def faulty(self, fault: Fault) -> Iterator[Fault]:
        self.inject(fault)
        try:
            yield fault
        finally:
            with self._lock:
                if fault in self._faults:
                    self._faults.remove(fault)

    def take_fault(self, request: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.match is None or re.search(fault.match, request):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self._faults.remove(fault)
                    return fault
        return None

    def arrive(self, request: str) -> None:
        with self._lock:
            self.arrived.append(request)

    def record(self, seen: Seen) -> None:
        seen.ended = time.monotonic()
        with self._lock:
            self.seen.append(seen)

    def requests(self, pattern: str = "") -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if re.search(pattern, f"{s.method} {s.path}")]


# --- databases and Redis ---------------------------------------------------------------------------------------


@dataclass
class PortalDatabase:
    """The portal's database: a SQLite file, or a dedicated PostgreSQL database made for this product."""

    url: str
    sqlite_path: Path | None = None
    admin_url: str | None = None  # PostgreSQL: the server's maintenance database, to create/drop ``name``
    name: str | None = None

    @classmethod
    @contextlib.contextmanager
    def create(cls, var_dir: Path, base_url: str | None) -> Iterator[PortalDatabase]:
        if not base_url or not base_url.startswith(("postgres://", "postgresql://")):
            path = var_dir / "portal.sqlite3"
            yield cls(url=f"sqlite:///{path}", sqlite_path=path)
            return
        import psycopg

        parts = urlsplit(base_url)
        name = f"{parts.path.lstrip('/') or 'tpp'}_product_{uuid.uuid4().hex[:8]}"
        admin_url = urlunsplit((parts.scheme, parts.netloc, "/postgres", parts.query, ""))
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield cls(
                url=urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, "")),
                admin_url=admin_url,
                name=name,
            )
        finally:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    @property
    def vendor(self) -> str:
        return "sqlite" if self.sqlite_path else "postgresql"

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Rows of a read query (``%s`` placeholders on both backends)."""
        if self.sqlite_path is not None:
            with contextlib.closing(sqlite3.connect(self.sqlite_path, timeout=20)) as conn:
                return conn.execute(sql.replace("%s", "?"), params).fetchall()
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def scalar(self, sql: str, params: tuple = ()):
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    def terminate_connections(self) -> int:
        """PostgreSQL: end every other session on the portal's database (pg_terminate_backend)."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.name,),
            ).fetchall()
        return sum(1 for (ok,) in rows if ok)


class OwnRedis:
    """A redis-server of the test's own on a free loopback port (restartable; never the machine's shared one)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        if shutil.which("redis-server") is None:
            raise NotReady("redis-server is not installed (apt-get install redis-server): the test needs its own")
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise NotReady(f"redis-server did not start: {tail(self.directory / 'redis.log')}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


# --- the product -----------------------------------------------------------------------------------------------


@dataclass
class Product:
    directory: Path
    env: dict[str, str]
    bank_url: str  # the bank itself (SCA screens, sandbox operations)
    bank_port: int
    bank_env: dict[str, str]
    proxy: FaultProxy
    portal_url: str
    db: PortalDatabase
    redis: OwnRedis | None
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    _worker_count: int = 0
    _shell: subprocess.Popen | None = None
    _shell_lock: threading.Lock = field(default_factory=threading.Lock)

    # processes
    def _spawn(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = (self.directory / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command, cwd=ROOT, env=env or self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return tail(self.directory / f"{name}.log", 6000)

    def log_text(self, name: str) -> str:
        """The whole log of a process (``log`` gives only its tail)."""
        return (self.directory / f"{name}.log").read_text(errors="replace")

    def logs(self) -> str:
        return "\n".join(f"--- {name} ---\n{self.log(name)}" for name in self.processes)

    def stop(self, name: str, *, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        process = self.processes.get(name)
        if process is None or process.poll() is not None:
            return
        _signal(process, sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
            process.wait()

    # the worker
    def worker_start(self, name: str = "worker", *, concurrency: int = 1) -> subprocess.Popen:
        self._worker_count += 1
        process = self._spawn(
            name,
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tpp_portal",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                str(concurrency),
                "--loglevel",
                "INFO",
                "--hostname",
                f"{name}-{self._worker_count}-{uuid.uuid4().hex[:6]}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
        )
        wait_until(
            lambda: "ready" in self.log(name) or process.poll() is not None,
            timeout=START_TIMEOUT,
            message=f"worker ready\n{self.log(name)}",
        )
        assert process.poll() is None, self.log(name)
        return process

    def worker_kill(self, name: str = "worker") -> None:
        """SIGKILL the worker and every child it forked (the way a crashed machine or the OOM killer ends it)."""
        self.stop(name, sig=signal.SIGKILL)

    def beat_start(self, name: str = "beat") -> subprocess.Popen:
        return self._spawn(
            name,
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tpp_portal",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.directory / f"{name}-schedule"),
            ],
        )

    # the bank
    def bank_stop(self) -> None:
        """Stop the bank (SIGTERM, as a deploy or crash would); the proxy then gets no answer from it."""
        self.stop("bank")

    def bank_start(self) -> None:
        """Start the bank again on the same port with the same database."""
        process = self._spawn(
            "bank",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "bank_simulator.wsgi",
                "--config",
                "bank_simulator/gunicorn.conf.py",
                "--access-logfile",
                "/dev/null",
            ],
            env=self.bank_env,
        )
        wait_for_ok(f"{self.bank_url}/healthz", process=process, deadline=time.monotonic() + START_TIMEOUT)

    @contextlib.contextmanager
    def bank_settings(self, settings: dict[str, str]) -> Iterator[Product]:
        """The bank restarted with ``settings`` (BANK_SIM_* variables: a behaviour where the specification is
        silent) on the same port with the same database, as a redeploy would; restarted as it was afterwards.
        Cheaper than a product of its own for each behaviour."""
        before = dict(self.bank_env)
        self.bank_env = {**before, **settings}
        self.bank_stop()
        self.bank_start()
        try:
            yield self
        finally:
            self.bank_env = before
            self.bank_stop()
            self.bank_start()

    # the portal's environment
    def manage(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.returncode}\n{done.stdout}{done.stderr}"
        return done.stdout

    def django(
        self,
        code: str,
        *,
        timeout: float = COMMAND_TIMEOUT,
        env: dict[str, str] | None = None,
        fresh: bool = False,
        **params,
    ):
        """Run ``code`` with the portal's environment and Django set up; ``params`` are available as ``params``;
        the value ``code`` leaves in ``result`` is returned (through JSON). It runs in one long-lived interpreter
        of the product (a "shell": Django is set up once), or with ``env`` (extra variables) or ``fresh`` in a
        new interpreter of its own (for calls that must run at the same time as another)."""
        if env is None and not fresh:
            return self._shell_run(code, params, timeout)
        done = subprocess.run(
            [sys.executable, "-c", _program(code, params)],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = f"{done.stdout[-3000:]}{done.stderr[-5000:]}"
        assert done.returncode == 0, f"{code}\n--- exit {done.returncode} ---\n{output}"
        line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith(_RESULT_MARK))
        return json.loads(line[len(_RESULT_MARK) :])

    def django_start(self, code: str, **params) -> subprocess.Popen:
        """``code`` as :meth:`django` runs it in a new interpreter, started and not waited for: the test may
        kill it (``os.killpg(process.pid, signal.SIGKILL)``: it leads a process group of its own)."""
        with (self.directory / "django-started.log").open("ab") as log:  # the child keeps its own copy
            return subprocess.Popen(
                [sys.executable, "-c", _program(code, params)],
                cwd=ROOT,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )

    def bank_sql(self, query: str, params: tuple = ()) -> list[tuple]:
        """Read the bank's own (SQLite) database: what exists at the bank."""
        path = Path(self.bank_env["BANK_SIM_DATABASE_URL"].removeprefix("sqlite:///"))
        with contextlib.closing(sqlite3.connect(path, timeout=20)) as conn:
            return conn.execute(query, params).fetchall()

    def _shell_run(self, code: str, params: dict, timeout: float):
        with self._shell_lock:
            if self._shell is None or self._shell.poll() is not None:
                self._shell = subprocess.Popen(
                    [sys.executable, "-c", _SHELL],
                    cwd=ROOT,
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=(self.directory / "shell.log").open("ab"),
                    text=True,
                    start_new_session=True,
                )
                self.processes["shell"] = self._shell
            assert self._shell.stdin is not None and self._shell.stdout is not None
            self._shell.stdin.write(json.dumps({"code": textwrap.dedent(code), "params": params}) + "\n")
            self._shell.stdin.flush()
            answer = _read_marked(self._shell.stdout, timeout)
        if answer is None:
            raise AssertionError(f"the product's shell ended\n{self.log('shell')}")
        if "error" in answer:
            raise AssertionError(f"{code}\n--- in the product's shell ---\n{answer['error']}")
        return answer["result"]

    def sql(self, query: str, params: tuple = ()) -> list[tuple]:
        return self.db.query(query, params)

    def scalar(self, query: str, params: tuple = ()):
        return self.db.scalar(query, params)

    def identities_release(self) -> int:
        """Forget which portal user each bank identity belongs to (``connections.PsuBinding``).

        The sandbox bank has a handful of customers and one PSU-ID per customer for this TPP, and the portal lets
        one PSU-ID belong to one portal user only. A suite whose journeys each stand for a different person, but
        sign in at the bank as the same sandbox customer, releases the identities between journeys, as if the
        earlier person had given up the bank identity. Returns how many were released."""
        return self.django(
            "from connections.models import PsuBinding\nresult = PsuBinding.objects.all().delete()[0]"
        )

    def portal_session(self) -> requests.Session:
        """A client of the portal. When the portal trusts reverse proxies (``TRUSTED_PROXY_COUNT`` in its
        environment, as the load run sets it), every request carries the X-Forwarded-For they would set (the
        client, then each proxy: docker/proxy's form), all on loopback."""
        session = requests.Session()
        session.headers["User-Agent"] = "tests.product"
        proxies = int(self.env.get("TRUSTED_PROXY_COUNT") or 0)
        if proxies:
            session.headers["X-Forwarded-For"] = ", ".join(["127.0.0.1"] * (proxies + 1))
        return session


# One interpreter of the product running snippets read from stdin, one JSON line each; its answers are marked
# lines on stdout ({"result": ...} or {"error": traceback}). Database connections are closed after each
# snippet, so that a dropped connection does not outlive it.
_SHELL = f"""
import json, sys, traceback
import django
django.setup()
from django.db import connections
for line in sys.stdin:
    request = json.loads(line)
    scope = {{"params": request["params"], "result": None}}
    try:
        exec(request["code"], scope)
        answer = {{"result": scope["result"]}}
    except BaseException:
        answer = {{"error": traceback.format_exc()}}
    finally:
        connections.close_all()
    print({_RESULT_MARK!r} + json.dumps(answer, default=str), flush=True)
"""


def _program(code: str, params: dict) -> str:
    """A Python program that sets Django up, runs ``code`` with ``params`` and prints its ``result`` (marked)."""
    return (
        "import json, sys, django\n"
        "django.setup()\n"
        f"params = json.loads({json.dumps(json.dumps(params))})\n"
        "result = None\n"
        f"{textwrap.dedent(code)}\n"
        f"print({_RESULT_MARK!r} + json.dumps(result, default=str))\n"
    )


def _read_marked(stream, timeout: float) -> dict | None:
    """The next marked answer line of the shell (other output is skipped); None when the shell ended."""
    result: list = []

    def read() -> None:
        for line in stream:
            if line.startswith(_RESULT_MARK):
                result.append(json.loads(line[len(_RESULT_MARK) :]))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        raise AssertionError(f"the product's shell did not answer within {timeout:.0f} s")
    return result[0] if result else None


def _signal(process: subprocess.Popen, sig: int) -> None:
    """Signal the process and, when it leads a session of its own (started by Product), its children too."""
    with contextlib.suppress(ProcessLookupError):
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)


def _signing_paths() -> tuple[str, str]:
    pki = Path(os.environ.get("VAR_DIR") or ROOT / "var") / "pki"
    return (
        os.environ.get("BANK_SIGNING_CERT") or str(pki / "tpp-qseal.pem"),
        os.environ.get("BANK_SIGNING_KEY") or str(pki / "tpp-qseal.key"),
    )


def _portal_env(
    *,
    var_dir: Path,
    portal_port: int,
    bank_url: str,
    database_url: str,
    redis_url: str | None,
    bank_timeout: float,
    extra: dict[str, str],
) -> dict[str, str]:
    cert, key = _signing_paths()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_TASK_ALWAYS_EAGER", "BANK_SIM_DATABASE_URL"}
        and not k.startswith(("PYTEST_", "BANK_SIM_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="tpp_portal.settings",
        DJANGO_ENV="development",
        VAR_DIR=str(var_dir),
        PORTAL_BASE_URL=f"http://127.0.0.1:{portal_port}",
        BANK_BASE_URL=bank_url,
        BANK_IS_SANDBOX="true",
        BANK_TIMEOUT=str(bank_timeout),
        BANK_SIGNING_CERT=cert,
        BANK_SIGNING_KEY=key,
        DATABASE_URL=database_url,
        EMAIL_URL="consolemail://",
        PYTHONUNBUFFERED="1",
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(extra)
    return env


@contextlib.contextmanager
def whole_product(
    directory: Path,
    *,
    redis: str = "own",
    worker: bool = True,
    beat: bool = True,
    web_workers: int = 2,
    web_threads: int = 4,
    bank_workers: int = 2,
    bank_timeout: float = 3.0,
    worker_concurrency: int = 1,
    extra_env: dict[str, str] | None = None,
    bank_settings: dict[str, str] | None = None,
) -> Iterator[Product]:
    """Start the whole product in ``directory`` (see the module's doc). ``redis``: "own" (a redis-server of its
    own: isolated, restartable), "env" (REDIS_URL as this process has it, shared with it; else the filesystem
    broker) or "none" (the filesystem broker in its VAR_DIR).
    ``bank_timeout``: the portal's BANK_TIMEOUT (short, so that a slow bank is slow beyond it quickly).
    ``bank_settings``: BANK_SIM_* variables of the sandbox bank (a behaviour where the specification is silent)."""
    directory = Path(directory)
    var_dir = directory / "var"
    var_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        own_redis = None
        if redis == "own":
            own_redis = OwnRedis(directory)
            own_redis.start()
            stack.callback(own_redis.stop)
            redis_url = own_redis.url
        elif redis == "env":
            redis_url = os.environ.get("REDIS_URL") or None
        else:
            redis_url = None
        (directory / "bank").mkdir(exist_ok=True)
        bank = stack.enter_context(
            running_bank(directory / "bank", workers=bank_workers, threads=4, settings=bank_settings)
        )
        proxy = FaultProxy(("127.0.0.1", bank.port)).start()
        stack.callback(proxy.close)
        db = stack.enter_context(PortalDatabase.create(var_dir, os.environ.get("DATABASE_URL")))
        portal_port = free_port()
        env = _portal_env(
            var_dir=var_dir,
            portal_port=portal_port,
            bank_url=proxy.base_url,
            database_url=db.url,
            redis_url=redis_url,
            bank_timeout=bank_timeout,
            # The bank's own address (its SCA screens), for settings that must name it (a CSP form-action).
            extra={"PRODUCT_BANK_URL": bank.base_url, **(extra_env or {})},
        )
        product = Product(
            directory=directory,
            env=env,
            bank_url=bank.base_url,
            bank_port=bank.port,
            bank_env=dict(bank.env),
            proxy=proxy,
            portal_url=f"http://127.0.0.1:{portal_port}",
            db=db,
            redis=own_redis,
        )
        # The first bank process is running_bank's; bank_stop() adopts it so that it can be stopped and restarted.
        product.processes["bank"] = bank.process
        stack.callback(lambda: [product.stop(name) for name in list(product.processes)])
        product.manage("migrate", "--noinput", "--skip-checks", "-v0")
        web = product._spawn(
            "web",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "tpp_portal.wsgi",
                "--config",
                "tpp_portal/gunicorn.conf.py",
                "--bind",
                f"127.0.0.1:{portal_port}",
                "--workers",
                str(web_workers),
                "--threads",
                str(web_threads),
                "--timeout",
                "60",
                "--access-logfile",
                "/dev/null",
            ],
        )
        try:
            wait_for_ok(f"{product.portal_url}/healthz", process=web, deadline=time.monotonic() + START_TIMEOUT)
        except NotReady as exc:
            raise NotReady(f"{exc}\n{product.log('web')}") from None
        if worker:
            product.worker_start(concurrency=worker_concurrency)
        if beat:
            product.beat_start()
        yield product


# --- a user of the portal, over HTTP ----------------------------------------------------------------------------


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, html[:800]
    return match.group(1)


def user_create(product: Product, username: str, password: str) -> int:
    """A portal user with a confirmed address (users.signals, as for accounts staff make): ``username`` itself when
    it is an e-mail address (as sign-up makes them: it signs in with it), else ``<username>@example.test``."""
    return product.django(
        """
from django.contrib.auth import get_user_model
username = params["username"]
email = username if "@" in username else f"{username}@example.test"
user = get_user_model().objects.create_user(username, email, params["password"])
result = user.pk
""",
        username=username,
        password=password,
    )


def users_create(product: Product, prefix: str, count: int, password: str) -> list[int]:
    """``count`` users ``prefix0 ..`` with one password (its hash computed once: fast for load tests)."""
    return product.django(
        """
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from allauth.account.models import EmailAddress
User = get_user_model()
hashed = make_password(params["password"])
User.objects.bulk_create([User(username=f'{params["prefix"]}{i}', email=f'{params["prefix"]}{i}@example.test',
                               password=hashed) for i in range(params["count"])])
made = list(User.objects.filter(username__startswith=params["prefix"]))
EmailAddress.objects.bulk_create([EmailAddress(user=u, email=u.email, verified=True, primary=True) for u in made])
result = [u.pk for u in made]
""",
        prefix=prefix,
        count=count,
        password=password,
    )


def sign_in(product: Product, username: str, password: str) -> requests.Session:
    """A browser session signed in to the portal through its sign-in page (the requests transport of
    tests/signin.py's sign-in)."""
    session = product.portal_session()
    address = product.portal_url + SIGN_IN_PATH
    page = session.get(address, timeout=30)
    assert page.status_code == 200, page.text[:500]
    done = session.post(
        address,
        data={"csrfmiddlewaretoken": csrf_of(page.text), **sign_in_form(username, password)},
        headers={"Referer": address},
        timeout=30,
        allow_redirects=False,
    )
    assert done.status_code == 302, done.text[:1500]
    return session


def connect_bank(
    product: Product, session: requests.Session, *, identity: str, context: str = "PRIVATE"
) -> requests.Response:
    """Connect the bank through the portal's pages and the bank's SCA screens; returns the callback's page."""
    from tests.live_bank import BankBrowser, callback_target

    page = session.get(f"{product.portal_url}/bank/connect/", timeout=30)
    assert page.status_code == 200, page.text[:500]
    start = session.post(
        f"{product.portal_url}/bank/connect/",
        data={"csrfmiddlewaretoken": csrf_of(page.text), "context": context, "access": "accounts"},
        headers={"Referer": f"{product.portal_url}/bank/connect/"},
        timeout=60,
        allow_redirects=False,
    )
    assert start.status_code == 302, start.text[:1500]
    location = BankBrowser().authorise(start.headers["Location"], identity=identity, context=context)
    path, params = callback_target(location)
    return session.get(f"{product.portal_url}{path}", params=params, timeout=60)
