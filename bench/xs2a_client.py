"""A signed GET through ``xs2a.Xs2aClient`` against a bare minimal baseline, on one loopback server.

Baseline: a ``requests.Session`` that adds Date, X-Request-ID and a direct RSA-SHA256 Signature to each GET and
parses the JSON, nothing else. Client: ``Xs2aClient.accounts.balances()`` (PSU headers, x-accept-fix, signing,
audit hook, typed model with Decimal amounts). Both run in alternating rounds against the same server in the same
run; each round times both sides back to back, and the ratio is the median of the per-round ratios (robust
to drift on a shared machine). Goal: client/baseline time within 1.10, and exactly one
RSA signature per attempt. Run: ``python -m bench.xs2a_client``.
"""

from __future__ import annotations

import base64
import json
import statistics
import threading
import time
import uuid
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from bench.report import emit
from devtools import pki
from devtools.pki import CountingKey
from xs2a.client import ClientConfig, Xs2aClient
from xs2a.psu import PsuContext
from xs2a.signing import certificate_header, key_id

ROUNDS = 12
PER_ROUND = 150
BODY = json.dumps(
    {
        "account": {"iban": "NO9386011117947", "currency": "NOK"},
        "balances": [
            {"balanceAmount": {"amount": "1234.50", "currency": "NOK"}, "balanceType": "interimAvailable"},
            {"balanceAmount": {"amount": "1200.00", "currency": "NOK"}, "balanceType": "closingBooked"},
        ],
    }
).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # one segment per answer: no delayed-ACK stalls

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response_only(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def _baseline(session: requests.Session, url: str, key: rsa.RSAPrivateKey, kid: str, cert: str) -> None:
    headers = {
        "Date": format_datetime(datetime.now(UTC).replace(microsecond=0), usegmt=True),
        "X-Request-ID": str(uuid.uuid4()),
        "TPP-Redirect-URI": "https://portal.example/bank/callback",
    }
    text = "\n".join(f"{name.lower()}: {value}" for name, value in headers.items())
    signature = base64.b64encode(key.sign(text.encode(), padding.PKCS1v15(), hashes.SHA256())).decode()
    names = "date x-request-id tpp-redirect-uri"
    headers["TPP-Signature-Certificate"] = cert
    value = f'keyId="{kid}",algorithm="rsa-sha256",headers="{names}",signature="{signature}"'
    headers["Signature"] = "=?utf-8?B?" + base64.b64encode(value.encode()).decode() + "?="  # issuer is not ASCII
    response = session.get(url, headers=headers, timeout=10)
    response.raise_for_status()
    response.json()


def _list(rates: list[float]) -> str:
    return ", ".join(f"{r:.0f}" for r in rates)


def _rate(call, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        call()
    return n / (time.perf_counter() - started)


def main() -> None:
    ca = pki.issue_ca()
    tpp = pki.issue_qseal(ca)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    url = base + "/v1/accounts/acc-1/balances"

    counting = CountingKey(tpp.key)
    audited: list[object] = []
    client = Xs2aClient(
        ClientConfig(
            base_url=base,
            signing_key=counting,
            signing_certificate=tpp.certificate,
            redirect_uri="https://portal.example/bank/callback",
            timeout=10.0,
        ),
        audit_hook=audited.append,
    )
    psu = PsuContext(psu_id="5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1", ip_address="198.51.100.7")
    session = requests.Session()
    session.trust_env = False
    kid, cert = key_id(tpp.certificate), certificate_header(tpp.certificate)

    def through_client() -> None:
        client.accounts.balances("acc-1", psu=psu)

    def bare() -> None:
        _baseline(session, url, tpp.key, kid, cert)

    for _ in range(30):  # warm up both connections
        through_client()
        bare()
    counting.signatures = 0
    audited.clear()

    client_rates, baseline_rates = [], []
    for _ in range(ROUNDS):
        baseline_rates.append(_rate(bare, PER_ROUND))
        client_rates.append(_rate(through_client, PER_ROUND))
    signatures_per_attempt = counting.signatures / len(audited)

    client.close()
    session.close()
    server.shutdown()
    server.server_close()

    c, b = statistics.median(client_rates), statistics.median(baseline_rates)
    # Time per request, client over baseline, paired per round.
    ratio = statistics.median(base / mine for base, mine in zip(baseline_rates, client_rates, strict=True))
    print(f"requests per round: {PER_ROUND}, rounds: {ROUNDS} (alternating), RSA key 2048 bits, loopback HTTP")
    print(f"baseline (requests + direct RSA signature): {b:8.1f} req/s median; rounds: {_list(baseline_rates)}")
    print(f"xs2a client (balances, typed, audited):     {c:8.1f} req/s median; rounds: {_list(client_rates)}")
    verdict = "met" if ratio <= 1.10 else "NOT met"
    print(f"ratio client/baseline (time per request, median of rounds): {ratio:.3f}  goal <= 1.10: {verdict}")
    print(f"RSA signatures per attempt (client): {signatures_per_attempt:.2f}  (attempts: {len(audited)})")
    emit("xs2a client balance reads", c, "req/s", better="higher", baseline=b)
    emit("xs2a client time per request / bare baseline", ratio, "x", better="lower", goal=1.10)
    emit("RSA signatures per client attempt", signatures_per_attempt, "", better="lower", goal=1.0)


if __name__ == "__main__":
    main()
