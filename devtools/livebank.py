"""The sandbox bank as a real process on loopback, for tests and benchmarks.

``running_bank(directory)`` gives the bank its own SQLite database in ``directory``, migrates it, resets it to
the known sandbox state (``python -m bank_simulator sandbox_initialize``), starts gunicorn ``bank_simulator.wsgi``
with ``bank_simulator/gunicorn.conf.py`` (the production server settings) on a free 127.0.0.1 port, waits until
``/healthz`` answers 200 and stops the server on exit. The server's output goes to ``directory/gunicorn.log``;
its tail is in the error when the bank does not start.

Development only: imports nothing of the portal (the portal and the bank talk over HTTP).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import requests

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 30.0  # seconds for gunicorn to answer /healthz
STOP_TIMEOUT = 15.0  # seconds for a graceful stop before the server is killed
COMMAND_TIMEOUT = 120.0  # seconds for migrate and sandbox_initialize each


class NotReady(RuntimeError):
    """A server did not answer 200 in time, or its process ended first."""


@dataclass(frozen=True)
class RunningBank:
    base_url: str  # http://127.0.0.1:<port> (https with tls), also the bank's BANK_SIM_PUBLIC_URL
    port: int
    process: subprocess.Popen
    log_path: Path  # gunicorn's stdout and stderr
    database_path: Path  # the SQLite file behind BANK_SIM_DATABASE_URL
    env: Mapping[str, str]  # the bank's environment, for code that sets up the bank's Django in-process later


def bank_sql(database_path: Path, query: str, params=()) -> list[tuple]:
    """Read a running sandbox bank's own SQLite database, read-only, and close it again: what exists at the bank,
    for tests (the bank is another process with its own database, so the portal's ORM does not reach it)."""
    uri = f"file:{database_path}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
        return db.execute(query, params).fetchall()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_ok(
    url: str,
    *,
    process: subprocess.Popen,
    deadline: float,
    interval: float = 0.2,
    verify: bool | str = True,
) -> requests.Response:
    """GET ``url`` until it answers 200, up to ``deadline`` (time.monotonic()); raise NotReady if ``process``
    ends first or the deadline passes. A refused connection or a timed-out answer means not ready yet.
    ``verify``: as requests takes it (a CA file for a server with the development certificates)."""
    last: str = "no answer"
    while True:
        if process.poll() is not None:
            raise NotReady(f"the process ended with status {process.returncode} before {url} answered 200")
        try:
            response = requests.get(url, timeout=5, verify=verify)
        except (requests.ConnectionError, requests.Timeout) as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if response.status_code == 200:
                return response
            last = f"status {response.status_code}"
        if time.monotonic() >= deadline:
            raise NotReady(f"{url} did not answer 200 in time (last: {last})")
        time.sleep(interval)


def csrf_token(html: str) -> str:
    """The CSRF token in a page of the bank's SCA screens."""
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    if match is None:
        raise ValueError(f"no CSRF token in the page: {html[:500]}")
    return match.group(1)


def sca_post(browser: requests.Session, href: str, page: requests.Response, **data) -> requests.Response:
    """Submit the form of ``page`` (an SCA screen at ``href``) with ``data`` and its CSRF token, the way a PSU's
    browser does: a step done is a 303 to the next screen, followed with a GET; any other answer is returned as it
    comes (the redirect back to the TPP is not followed)."""
    answer = browser.post(
        href, data={"csrfmiddlewaretoken": csrf_token(page.text), **data}, timeout=10, allow_redirects=False
    )
    return follow_see_other(browser, href, answer)


def follow_see_other(browser: requests.Session, href: str, answer: requests.Response) -> requests.Response:
    """The next SCA screen after a 303 (the bank's Post/Redirect/Get), as a browser GETs it; else ``answer``."""
    if answer.status_code != 303:
        return answer
    return browser.get(urljoin(href, answer.headers["Location"]), timeout=10)


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return "(no log)"


def _manage(command: list[str], env: Mapping[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bank_simulator", *command],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-2000:]
        raise RuntimeError(f"bank_simulator {' '.join(command)} failed with status {done.returncode}: {output}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def running_bank(
    directory: Path,
    *,
    workers: int | None = None,
    threads: int | None = None,
    access_log: bool = False,
    settings: dict[str, str] | None = None,
    tls: bool = False,
) -> Iterator[RunningBank]:
    """The sandbox bank running on a free loopback port, with its database and log in ``directory``.

    ``workers``/``threads``: gunicorn's (default: BANK_SIM_WORKERS/BANK_SIM_THREADS as the environment has
    them, else gunicorn.conf.py's defaults). ``access_log``: keep gunicorn.conf.py's access log (one line a
    request in the log file, as in production) or leave it out (a short log to read when something fails).
    ``settings``: further BANK_SIM_* variables (a behaviour the specification leaves open, say).
    ``tls``: gunicorn serves HTTPS with the development certificate (``var/pki/bank-tls.pem``, as in docker), which
    the development CA (``var/pki/ca.pem``) verifies.
    The environment is the current one, with the bank's database, address and settings module set.
    """
    directory = Path(directory)
    port = free_port()
    base_url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    pki_dir = Path(os.environ.get("VAR_DIR", ROOT / "var")) / "pki"
    database_path = directory / "bank.sqlite3"
    env = {
        **os.environ,
        "BANK_SIM_DATABASE_URL": f"sqlite:///{database_path}",
        "BANK_SIM_PUBLIC_URL": base_url,
        "BANK_SIM_BIND": f"127.0.0.1:{port}",
        "PORT": str(port),
        "DJANGO_SETTINGS_MODULE": "bank_simulator.settings",
        **(settings or {}),
    }
    if workers is not None:
        env["BANK_SIM_WORKERS"] = str(workers)
    if threads is not None:
        env["BANK_SIM_THREADS"] = str(threads)
    _manage(["migrate", "--noinput", "-v0"], env)
    _manage(["sandbox_initialize"], env)
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "bank_simulator.wsgi",
        "--config",
        "bank_simulator/gunicorn.conf.py",
    ]
    if tls:
        command += ["--certfile", str(pki_dir / "bank-tls.pem"), "--keyfile", str(pki_dir / "bank-tls.key")]
    env["BANK_SIM_ACCESS_LOG"] = "-" if access_log else ""  # "-": into the log file below
    log_path = directory / "gunicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_ok(
                f"{base_url}/healthz",
                process=process,
                deadline=time.monotonic() + START_TIMEOUT,
                verify=str(pki_dir / "ca.pem") if tls else True,
            )
        except NotReady as exc:
            raise NotReady(
                f"the sandbox bank did not start: {exc}\n--- {log_path} ---\n{_tail(log_path)}"
            ) from None
        yield RunningBank(
            base_url=base_url,
            port=port,
            process=process,
            log_path=log_path,
            database_path=database_path,
            env=env,
        )
    finally:
        _stop(process)
