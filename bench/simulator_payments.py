"""Signed payment initiations per second against the sandbox bank under its production server settings.

``python -m bench.simulator_payments``: the same harness as ``bench.simulator`` (gunicorn with
``bank_simulator/gunicorn.conf.py`` on a free loopback port, a temporary SQLite database, requests pre-signed
before the clock starts, a few keep-alive client processes for a bounded time). Measured in the same run:

- signed ``POST /v1/payments/norwegian-cross-border-credit-transfers`` (full validation, fees, a payment row and
  its event row written; ``allowLogicalDuplicate=true`` so every one is created);
- the baseline: signed balance reads on the same server, and the cost of one signature verification in the
  bank's own code; printed as ratios.

Client and server share the machine's cores, so the figures are lower bounds for the server alone.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from bench.report import emit
from bench.simulator import _consent, _headers, _machine, _signer, _verification_in_process
from devtools.livebank import running_bank

DURATION = 6.0  # seconds of load per measurement
CLIENTS = 4
PER_CLIENT = 700  # pre-signed initiations per client (more than DURATION allows on 2 cores)
READS_PER_CLIENT = 1500  # pre-signed balance reads per client (the faster baseline)
TARGET = "/v1/payments/norwegian-cross-border-credit-transfers?allowLogicalDuplicate=true"


def _client(args: tuple[str, int, str, str, list[tuple[dict[str, str], bytes | None]], float]) -> tuple[int, int]:
    host, port, method, path, prepared, stop_at = args
    connection = http.client.HTTPConnection(host, port, timeout=30)
    ok = failed = 0
    for headers, body in prepared:
        if time.monotonic() >= stop_at:
            break
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status in (200, 201):
            ok += 1
        else:
            failed += 1
    connection.close()
    return ok, failed


def _load(host: str, port: int, method: str, path: str, batches: list) -> tuple[int, int, float]:
    stop_at = time.monotonic() + DURATION
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(CLIENTS) as pool:
        results = pool.map(_client, [(host, port, method, path, batch, stop_at) for batch in batches])
    elapsed = time.perf_counter() - started
    return sum(r[0] for r in results), sum(r[1] for r in results), elapsed


def _payment_body(iban: str, n: int) -> bytes:
    body = {
        "instructedAmount": {"amount": f"{100 + n % 5000}.{n % 100:02d}", "currency": "EUR"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAgent": "COBADEFFXXX",
        "creditorAccount": {"iban": "DE89370400440532013000", "currency": "EUR"},
        "creditorAddress": {"street": "Hauptstraße", "city": "Köln", "country": "DE"},
        "debtorAccount": {"iban": iban, "currency": "NOK"},
        "remittanceInformationUnstructured": f"Invoice {n}",
        "purposeCode": "SUPP",
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def main() -> None:
    import requests

    with tempfile.TemporaryDirectory(prefix="bench-bank-pay-") as tmp:
        # The production access log stays on (to the log file), as in bench runs before.
        with running_bank(Path(tmp), access_log=True) as bank:
            base, port = bank.base_url, bank.port
            signer = _signer()
            session_id = str(uuid.uuid4())
            psu_id, balances_path = _consent(base, signer, session_id)
            listing = requests.get(
                base + "/v1/accounts",
                headers=signer.sign("GET", "/v1/accounts", _headers(session_id, psu_id), None),
                timeout=10,
            ).json()
            iban = next(a["iban"] for a in listing["accounts"] if a["name"] == "Brukskonto")
            host = urlsplit(base).hostname or "127.0.0.1"

            started = time.perf_counter()
            payments = []
            for c in range(CLIENTS):
                batch = []
                for i in range(PER_CLIENT):
                    body = _payment_body(iban, c * PER_CLIENT + i)
                    headers = {**_headers(session_id, psu_id), "x-accept-fix": "amount-as-string"}
                    signed = signer.sign("POST", TARGET, headers, body)
                    batch.append(({**signed, "Content-Type": "application/json"}, body))
                payments.append(batch)
            sign_cost = (time.perf_counter() - started) / (CLIENTS * PER_CLIENT)
            reads = [
                [
                    (signer.sign("GET", balances_path, _headers(session_id, psu_id), None), None)
                    for _ in range(READS_PER_CLIENT)
                ]
                for _ in range(CLIENTS)
            ]
            paid, pay_failed, pay_elapsed = _load(host, port, "POST", TARGET, payments)
            read, read_failed, read_elapsed = _load(host, port, "GET", balances_path, reads)

        fresh = signer.sign("GET", balances_path, _headers(session_id, psu_id), None)
        verify_full, verify_rsa = _verification_in_process(bank.env, fresh, balances_path)

    payments_per_second = paid / pay_elapsed
    reads_per_second = read / read_elapsed
    verifications_per_second = 1 / verify_full
    print(_machine())
    print(
        f"signed payment initiations: {paid} in {pay_elapsed:.2f} s = {payments_per_second:.0f} /s "
        f"({pay_failed} non-201; {CLIENTS} keep-alive client processes on the same cores)"
    )
    print(
        f"baseline, same run: signed balance reads {read} in {read_elapsed:.2f} s = {reads_per_second:.0f} /s "
        f"({read_failed} non-200)"
    )
    print(
        f"reference: one signature verification = {verify_full * 1e6:.0f} us -> {verifications_per_second:.0f} /s "
        f"on one core; RSA verify alone {verify_rsa * 1e6:.0f} us; client-side signing {sign_cost * 1e6:.0f} us"
    )
    print(f"ratio: payment initiations / balance reads = {payments_per_second / reads_per_second:.3f}")
    print(
        f"ratio: payment initiations / signature verifications = "
        f"{payments_per_second / verifications_per_second:.3f}"
    )
    # No stated goal for initiations; the baseline is the balance reads of the same run.
    emit(
        "sandbox bank signed payment initiations",
        payments_per_second,
        "req/s",
        better="higher",
        baseline=reads_per_second,
    )
    emit("sandbox bank non-201 payment initiations", pay_failed, "", better="lower", goal=0)


if __name__ == "__main__":
    main()
