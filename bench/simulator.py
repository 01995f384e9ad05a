"""Signed balance reads per second against the sandbox bank under its production server settings.

``python -m bench.simulator``: starts gunicorn with ``bank_simulator/gunicorn.conf.py`` (gthread, 2 workers x
4 threads by default) on a free loopback port with a temporary SQLite database, gives a consent through the SCA
screens, pre-signs the requests (so the client's RSA signing does not compete with the server during the
measurement), then sends them from a few keep-alive client processes for a bounded time.

Printed with the reference measured in the same run: the cost of one signature verification in the bank's own
code (``bank_simulator.access.verify_signature`` on a cached certificate), and the ratio between the two.
Client and server share the machine's cores, so the figure is a lower bound for the server alone. The CPU seconds
the bank's processes (gunicorn's master and workers) and the clients used during the load, per read answered, are
printed too: on a machine other sessions load, they say more than the reads per second do.
Payment initiations per second are measured by bench.simulator_payments.
"""

from __future__ import annotations

import http.client
import multiprocessing
import os
import re
import tempfile
import time
import uuid
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import urlsplit

from bench.report import emit
from devtools.livebank import running_bank, sca_post

ROOT = Path(__file__).resolve().parents[1]
PRIVATE_1 = "13039319955"
REDIRECT_URI = "https://tpp.example/callback"
DURATION = 8.0  # seconds of load
CLIENTS = 4  # client processes, each with one keep-alive connection
PER_CLIENT = 3000  # pre-signed requests per client (more than DURATION allows on 2 cores)


def _now_http() -> str:
    import datetime as dt

    return format_datetime(dt.datetime.now(dt.UTC), usegmt=True)


def _signer():
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from xs2a.signing import RequestSigner

    certificate = x509.load_pem_x509_certificate((ROOT / "var/pki/tpp-qseal.pem").read_bytes())
    key = serialization.load_pem_private_key((ROOT / "var/pki/tpp-qseal.key").read_bytes(), password=None)
    # The bank requires (request-target) in every signature.
    return RequestSigner(key, certificate)  # type: ignore[arg-type]


def _headers(session_id: str, psu_id: str | None = None) -> dict[str, str]:
    headers = {
        "Date": _now_http(),
        "X-Request-ID": str(uuid.uuid4()),
        "TPP-Redirect-URI": REDIRECT_URI,
        "TPP-Session-ID": session_id,
        "PSU-IP-Address": "198.51.100.7",
    }
    if psu_id:
        headers["PSU-ID"] = psu_id
    return headers


def _consent(base: str, signer, session_id: str) -> tuple[str, str]:
    """PSU-ID and the balances path of Private Customer 1's current account, after a consent through SCA."""
    import requests

    target = "/v1/bank-offered-consents"
    signed = signer.sign("POST", target, _headers(session_id), b"{}")
    response = requests.post(
        base + target, data=b"{}", headers={**signed, "Content-Type": "application/json"}, timeout=10
    )
    href = response.json()["_links"]["scaRedirect"]["href"]
    browser = requests.Session()
    page = browser.get(href, timeout=10)
    page = sca_post(browser, href, page, identity=PRIVATE_1, action="identify")
    agreement = re.search(r'name="agreement" value="([^"]+)"', page.text).group(1)
    page = sca_post(browser, href, page, agreement=agreement, action="context")
    accounts = re.findall(r'name="account" value="([^"]+)"', page.text)
    done = sca_post(browser, href, page, account=accounts, action="approve")
    psu_id = re.search(r"psu-id=([0-9a-f-]{36})", done.headers["Location"]).group(1)
    signed = signer.sign("GET", "/v1/accounts", _headers(session_id, psu_id), None)
    listing = requests.get(base + "/v1/accounts", headers=signed, timeout=10).json()
    main = next(a for a in listing["accounts"] if a["name"] == "Brukskonto")
    return psu_id, main["_links"]["balances"]["href"]


def _client(args: tuple[str, int, list[dict[str, str]], str, float]) -> tuple[int, int, float]:
    """Send the pre-signed requests until ``stop_at``: how many were answered 200, how many not, and the CPU
    seconds this client used."""
    host, port, requests_headers, path, stop_at = args
    cpu_started = time.process_time()
    connection = http.client.HTTPConnection(host, port, timeout=30)
    ok = failed = 0
    for headers in requests_headers:
        if time.monotonic() >= stop_at:
            break
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status == 200:
            ok += 1
        else:
            failed += 1
    connection.close()
    return ok, failed, time.process_time() - cpu_started


def _cpu_seconds(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far (0 for one that has ended)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _bank_pids(master: int) -> list[int]:
    """gunicorn's master and its workers."""
    import psutil

    return [master, *(child.pid for child in psutil.Process(master).children())]


def _verification_cost(signed: dict[str, str], path: str) -> tuple[float, float]:
    """Seconds per verify_signature call with the certificate cached, and per RSA verification alone."""
    import base64

    from django.test import RequestFactory

    from bank_simulator import clock
    from bank_simulator.access import verify_signature
    from bank_simulator.security.certificates import load_tpp_certificate
    from bank_simulator.security.httpsig import parse_signature_header, signing_string, verify_rsa_sha256

    factory = RequestFactory()
    request = factory.get(path, headers=signed)
    now = clock.real_now()
    verify_signature(request, real_now=now)  # warms the certificate cache
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        verify_signature(factory.get(path, headers=signed), real_now=now)
    full = (time.perf_counter() - started) / rounds
    from django.conf import settings

    cert = load_tpp_certificate(signed["TPP-Signature-Certificate"], tuple(settings.BANK_SIM_TRUSTED_CAS), at=now)
    params = parse_signature_header(signed["Signature"])
    lowered = {k.lower(): v for k, v in signed.items()}
    text = signing_string(params.headers, lowered.get, method="GET", target=path)
    started = time.perf_counter()
    for _ in range(rounds):
        verify_rsa_sha256(cert.public_key, params.signature, text)
    rsa_only = (time.perf_counter() - started) / rounds
    assert base64  # imported for symmetry with the signer; keeps the module list explicit
    return full, rsa_only


def _verification_in_process(env, signed: dict[str, str], path: str) -> tuple[float, float]:
    """_verification_cost with the bank's Django set up in this process on the bank's environment ``env``
    (its settings and database, which must still exist)."""
    os.environ.update(env)
    import django

    django.setup()
    return _verification_cost(signed, path)


def _machine() -> str:
    workers = os.environ.get("BANK_SIM_WORKERS", "2")
    threads = os.environ.get("BANK_SIM_THREADS", "4")
    return f"machine: {os.cpu_count()} cores; gunicorn gthread {workers} workers x {threads} threads; SQLite"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-bank-") as tmp:
        # The production access log stays on (to the log file), as in bench runs before.
        with running_bank(Path(tmp), access_log=True) as bank:
            signer = _signer()
            session_id = str(uuid.uuid4())
            psu_id, path = _consent(bank.base_url, signer, session_id)
            started = time.perf_counter()
            batches = [
                [signer.sign("GET", path, _headers(session_id, psu_id), None) for _ in range(PER_CLIENT)]
                for _ in range(CLIENTS)
            ]
            sign_cost = (time.perf_counter() - started) / (CLIENTS * PER_CLIENT)
            host = urlsplit(bank.base_url).hostname or "127.0.0.1"
            bank_pids = _bank_pids(bank.process.pid)
            with multiprocessing.get_context("fork").Pool(CLIENTS) as pool:
                bank_cpu = _cpu_seconds(bank_pids)
                stop_at = time.monotonic() + DURATION
                started = time.perf_counter()
                results = pool.map(_client, [(host, bank.port, batch, path, stop_at) for batch in batches])
                elapsed = time.perf_counter() - started
                bank_cpu = _cpu_seconds(bank_pids) - bank_cpu
        ok = sum(r[0] for r in results)
        failed = sum(r[1] for r in results)
        client_cpu = sum(r[2] for r in results)

        fresh = signer.sign("GET", path, _headers(session_id, psu_id), None)
        verify_full, verify_rsa = _verification_in_process(bank.env, fresh, path)

    reads_per_second = ok / elapsed
    verifications_per_second = 1 / verify_full
    print(_machine())
    print(
        f"signed balance reads: {ok} in {elapsed:.2f} s = {reads_per_second:.0f} /s "
        f"({failed} non-200; {CLIENTS} keep-alive client processes on the same cores)"
    )
    print(
        f"reference: one signature verification (verify_signature, cached certificate) = "
        f"{verify_full * 1e6:.0f} us -> {verifications_per_second:.0f} /s on one core; RSA verify alone "
        f"{verify_rsa * 1e6:.0f} us; client-side signing {sign_cost * 1e6:.0f} us"
    )
    answered = max(ok + failed, 1)
    bank_cpu = max(bank_cpu, 1e-9)
    print(
        f"CPU per read: bank (gunicorn master and workers) {bank_cpu / answered * 1e3:.2f} ms, clients "
        f"{client_cpu / answered * 1e3:.2f} ms; {os.cpu_count()} cores at this CPU per read would serve "
        f"{(os.cpu_count() or 1) / ((bank_cpu + client_cpu) / answered):.0f} reads/s with the clients, "
        f"{(os.cpu_count() or 1) / (bank_cpu / answered):.0f} /s without (other load on the machine inflates both)"
    )
    print(
        f"ratio: balance reads per second / signature verifications per second = "
        f"{reads_per_second / verifications_per_second:.3f}"
    )
    print(f"goal >= 800 balance reads/s: {'met' if reads_per_second >= 800 else 'NOT met'}")
    emit(
        "sandbox bank signed balance reads",
        reads_per_second,
        "req/s",
        better="higher",
        goal=800,
        baseline=verifications_per_second,
    )
    emit("sandbox bank non-200 balance reads", failed, "", better="lower", goal=0)
    emit("sandbox bank CPU per signed balance read", bank_cpu / answered * 1e3, "ms", better="lower")
    print("payment initiations per second: see bench.simulator_payments")


if __name__ == "__main__":
    main()
