"""The bank's signed answers as its server sends them: gunicorn with bank_simulator/gunicorn.conf.py and
BANK_SIM_SIGN_RESPONSES=true, as docker/compose.yaml runs the bank. The Date an answer reaches the client with is
the one the bank signed, however long the answer took to leave (BANK_SIM_LATENCY_MS waits after the signing, so
the server writes the headers in a later second than the bank signed them)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509

from devtools.livebank import running_bank
from tests.bank_simulator.helpers import LiveTpp
from xs2a.signing import verify_response

pytestmark = pytest.mark.live_bank
ROOT = Path(__file__).resolve().parents[2]


def test_a_signed_answer_reaches_the_client_with_the_date_the_bank_signed(tmp_path):
    pki = ROOT / os.environ.get("VAR_DIR", "var") / "pki"
    seal = x509.load_pem_x509_certificate((pki / "bank-signing.pem").read_bytes())
    settings = {"BANK_SIM_SIGN_RESPONSES": "true", "BANK_SIM_LATENCY_MS": "1100"}
    with running_bank(tmp_path, workers=1, threads=2, settings=settings) as bank:
        answers = [LiveTpp(bank.base_url).send("GET", "/v1/accounts") for _ in range(2)]
    for answer in answers:
        assert answer.status_code == 401, answer.text  # no consent yet: an error, signed like every answer
        assert len(answer.raw.headers.getlist("Date")) == 1, answer.raw.headers
        # As the portal accepts it: over Date, Digest and the request's X-Request-ID, dated within the window.
        params = verify_response(
            answer.headers["Signature"],
            headers=answer.headers,
            body=answer.content,
            certificate=seal,
            request_id=answer.request.headers["X-Request-ID"],
            now=datetime.now(UTC),
            max_age=300,
            method="GET",
            target="/v1/accounts",
        )
        assert params.headers == ("date", "digest", "x-request-id")
