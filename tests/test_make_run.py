"""`make run` on embedded defaults: four processes, both /healthz 200, a signed request accepted by the bank."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from devtools.livebank import NotReady, free_port, wait_for_ok
from xs2a.signing import imf_fixdate, sign_request

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def make_run(tmp_path):
    portal_port, bank_port = free_port(), free_port()
    # Embedded defaults, as on a fresh machine: no DATABASE_URL, no REDIS_URL, a fresh var directory.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "BANK_SIM_DATABASE_URL"}}
    env.update(VAR_DIR=str(tmp_path / "var"), PORTAL_PORT=str(portal_port), BANK_PORT=str(bank_port))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = tmp_path / "make-run.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            ["make", "run"], cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process, portal_port, bank_port, log, tmp_path / "var"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def signed_get(base: str, path: str, pki: Path) -> requests.Response:
    certificate = x509.load_pem_x509_certificate((pki / "tpp-qseal.pem").read_bytes())
    key = load_pem_private_key((pki / "tpp-qseal.key").read_bytes(), password=None)
    headers = {
        "Date": imf_fixdate(datetime.now(UTC)),
        "X-Request-ID": str(uuid.uuid4()),
        "TPP-Redirect-URI": "http://127.0.0.1/bank/callback",
        "Accept": "application/json",
    }
    signed = sign_request("GET", path, headers, None, key, certificate)
    return requests.get(base + path, headers=signed, timeout=10)


def test_make_run_brings_up_the_whole_product(make_run):
    process, portal_port, bank_port, log, var_dir = make_run
    deadline = time.monotonic() + 240  # the first run also migrates and generates the sandbox history
    try:
        portal = wait_for_ok(
            f"http://127.0.0.1:{portal_port}/healthz", process=process, deadline=deadline, interval=0.5
        )
        bank = wait_for_ok(
            f"http://127.0.0.1:{bank_port}/healthz", process=process, deadline=deadline, interval=0.5
        )
    except NotReady as exc:
        raise AssertionError(f"{exc}\n--- make run output ---\n{log.read_text()[-5000:]}") from None
    assert portal.json()["checks"] == {"database": "ok", "broker": "ok"}
    assert bank.status_code == 200

    # The portal's own 404 page, not Django's debug page listing every URL; the stylesheet is still served.
    missing = requests.get(f"http://127.0.0.1:{portal_port}/no-such-page/", timeout=10)
    assert missing.status_code == 404 and "<h1>Page not found</h1>" in missing.text
    assert "Django tried these URL patterns" not in missing.text
    assert requests.get(f"http://127.0.0.1:{portal_port}/static/css/portal.css", timeout=10).status_code == 200

    # A request signed with the development certificate (CA with a Norwegian letter: RFC 2047 on the wire).
    response = signed_get(f"http://127.0.0.1:{bank_port}", "/v1/sandbox/customers", var_dir / "pki")
    assert response.status_code == 200, response.text
    assert {c["customerNumber"] for c in response.json()} >= {"13039319955", "18129215603"}

    # The portal knows that the bank it started is the sandbox, on these (non-default) ports too: the staff sandbox
    # area exists (an anonymous visitor is sent to sign in; a portal with another bank answers 404).
    assert bank_port != 8001
    area = requests.get(f"http://127.0.0.1:{portal_port}/staff/sandbox/", allow_redirects=False, timeout=10)
    assert area.status_code == 302, area.status_code
    assert area.headers["Location"].startswith("/auth/sign-in/?next=/staff/sandbox/"), area.headers

    # A worker and a beat are among the processes, and the addresses and demo logins were printed.
    while time.monotonic() < deadline and not re.search(r"worker.*ready", log.read_text()):
        time.sleep(0.5)
    output = log.read_text()
    for name in ("web", "bank", "worker", "beat"):
        assert re.search(rf"^\S* ?{name}\.1\s+\| ", output, re.M), f"no {name} process in:\n{output[-3000:]}"
    assert re.search(r"worker.*ready", output)
    assert f"http://127.0.0.1:{portal_port}/" in output and f"http://127.0.0.1:{bank_port}/" in output
    assert re.search(r"user 'demo', password '[^']{8,}'", output)

    # One clock: the worker's and the bank's lines in UTC, the offset shown.
    assert re.search(r"worker\.1 +\| \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000 INFO ", output), output[-3000:]
    assert re.search(r"bank\.1 +\| \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000\] ", output), output[-3000:]

    # Ctrl-C stops every process, and no process logs an error on the way.
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=60) is not None
    for port in (portal_port, bank_port):
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    stopping = log.read_text()[len(output) :]
    assert "SIGINT received" in stopping
    assert not re.search(r"\bERROR\b|Traceback", stopping), stopping
