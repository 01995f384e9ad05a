"""``manage.py bank_call``: one signed request with the configured certificate, answer printed."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from core.models import BankCall
from devtools import pki
from tests.bankfake import Answer, check_signature
from tests.xs2a.server import LocalBank

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"


@pytest.fixture
def local_bank():
    with LocalBank(prefix="/xs2a") as server:
        yield server


@pytest.fixture
def tpp(settings, tmp_path, local_bank):
    ca = pki.issue_ca()
    tpp = pki.issue_qseal(ca)
    (tmp_path / "tpp.pem").write_bytes(tpp.cert_pem())
    (tmp_path / "tpp.key").write_bytes(tpp.key_pem())
    settings.BANK_BASE_URL = local_bank.base_url
    settings.BANK_SIGNING_CERT = tmp_path / "tpp.pem"
    settings.BANK_SIGNING_KEY = tmp_path / "tpp.key"
    settings.BANK_SIGNING_KEY_PASSPHRASE = None
    settings.BANK_RESPONSE_CERT = None
    settings.BANK_CA_BUNDLE = None
    settings.BANK_TLS_CLIENT_CERT = None
    settings.BANK_TLS_CLIENT_KEY = None
    return tpp


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("bank_call", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_get_with_psu_headers_prints_status_headers_and_body(tpp, local_bank):
    local_bank.add("GET", "/v1/sandbox/customers", Answer(200, [{"customerId": "c1"}], {"X-Bank-Trace": "t-42"}))
    output = _run(
        "get",
        "/v1/sandbox/customers?withAccounts=true",
        "--psu-id",
        PSU_ID,
        "--psu-ip",
        "198.51.100.7",
        "--header",
        "PSU-User-Agent: curl/8",
    )
    (sent,) = local_bank.received
    assert sent.target == "/xs2a/v1/sandbox/customers?withAccounts=true"
    assert sent.headers["psu-id"] == PSU_ID and sent.headers["psu-ip-address"] == "198.51.100.7"
    assert sent.headers["psu-user-agent"] == "curl/8"
    check_signature(sent, tpp.certificate)
    assert "HTTP 200" in output
    assert "X-Bank-Trace: t-42" in output
    assert '"customerId": "c1"' in output
    assert f"X-Request-ID: {sent.headers['x-request-id']}" in output
    assert "Signature: [redacted]" in output
    assert "PRIVATE KEY" not in output and sent.headers["signature"][:40] not in output
    assert BankCall.objects.get().request_id == sent.headers["x-request-id"]


@pytest.mark.django_db
def test_post_json_is_sent_exactly_and_an_error_status_fails_the_command(tpp, local_bank):
    local_bank.add(
        "POST",
        "/v1/sandbox/customers",
        Answer(400, {"tppMessages": [{"category": "ERROR", "code": "FORMAT_ERROR", "path": "customerType"}]}),
    )
    with pytest.raises(CommandError, match="HTTP 400"):
        _run("POST", "/v1/sandbox/customers", "--json", '{"customerType": "ALIEN", "amount": 1.50}')
    (sent,) = local_bank.received
    assert sent.body == b'{"customerType": "ALIEN", "amount": 1.50}', "sent exactly as typed"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["digest"].startswith("SHA-256=")


def test_bad_arguments_are_refused_before_anything_is_sent(tpp, local_bank):
    with pytest.raises(CommandError, match="not valid JSON"):
        _run("POST", "/v1/sandbox/customers", "--json", "{nope")
    with pytest.raises(CommandError, match="PSU-ID must be a UUID"):
        _run("GET", "/v1/accounts", "--psu-id", "alice")
    with pytest.raises(CommandError, match="starting with '/'"):
        _run("GET", "v1/accounts")
    assert local_bank.received == []
