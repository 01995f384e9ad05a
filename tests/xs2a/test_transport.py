"""TLS: 1.2 as the floor, trust limited to the configured CA bundle, an optional QWAC client certificate."""

from __future__ import annotations

import ssl
import urllib.request

import pytest

from devtools import pki
from tests.bankfake import Answer
from tests.xs2a.server import LocalBank
from xs2a import errors

OK = Answer(200, {"_links": {}})


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_a_server_capped_at_tls_1_1_is_refused(test_pki, make_client):
    with LocalBank(ssl_context=test_pki.server_context(maximum=ssl.TLSVersion.TLSv1_1)) as bank:
        bank.add("GET", "/v1/users", OK)
        # Control: the server does speak TLS 1.1 to a client that allows it.
        permissive = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        permissive.load_verify_locations(test_pki.ca_file)
        permissive.minimum_version = ssl.TLSVersion.TLSv1
        permissive.set_ciphers("DEFAULT:@SECLEVEL=0")
        with urllib.request.urlopen(bank.base_url + "/v1/users", context=permissive, timeout=5) as answer:
            assert answer.status == 200
        assert len(bank.received) == 1

        client = make_client(bank.base_url, ca_bundle=str(test_pki.ca_file))
        with pytest.raises(errors.TransportError, match="TLS"):
            client.consents.users()
        assert len(bank.received) == 1, "the client sent nothing over TLS 1.1"


def test_tls_1_2_with_the_configured_ca_is_accepted(test_pki, make_client, monkeypatch):
    with LocalBank(ssl_context=test_pki.server_context()) as bank:
        bank.add("GET", "/v1/users", OK)
        client = make_client(bank.base_url, ca_bundle=str(test_pki.ca_file))
        assert client.consents.users().links == {}
        assert len(bank.received) == 1


def test_trust_is_the_configured_bundle_only(test_pki, make_client, monkeypatch, tmp_path):
    """A server certificate from another CA is refused, even when the environment points at that CA."""
    other_ca = pki.issue_ca()
    other_tls = pki.issue_tls_server(other_ca)
    (tmp_path / "other-ca.pem").write_bytes(other_ca.cert_pem())
    (tmp_path / "tls.pem").write_bytes(other_tls.cert_pem())
    (tmp_path / "tls.key").write_bytes(other_tls.key_pem())
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "other-ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "other-ca.pem"))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # would break the call if it leaked in
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.pem", tmp_path / "tls.key")
    with LocalBank(ssl_context=context) as bank:
        bank.add("GET", "/v1/users", OK)
        refused = make_client(bank.base_url, ca_bundle=str(test_pki.ca_file))
        with pytest.raises(errors.TransportError, match="TLS"):
            refused.consents.users()
        trusting = make_client(bank.base_url, ca_bundle=str(tmp_path / "other-ca.pem"))
        assert trusting.consents.users().links == {}, "the proxy variable was ignored and the bundle used"


def test_the_qwac_client_certificate_is_presented(test_pki, make_client, tmp_path):
    qwac = pki.issue_qseal(test_pki.ca, roles=("PSP_AI", "PSP_PI"))
    (tmp_path / "qwac.pem").write_bytes(qwac.cert_pem())
    (tmp_path / "qwac.key").write_bytes(qwac.key_pem(b"s3cret-passphrase"))
    context = test_pki.server_context()
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(test_pki.ca_file)
    with LocalBank(ssl_context=context) as bank:
        bank.add("GET", "/v1/users", OK)
        without = make_client(bank.base_url, ca_bundle=str(test_pki.ca_file))
        with pytest.raises(errors.TransportError):
            without.consents.users()
        with_qwac = make_client(
            bank.base_url,
            ca_bundle=str(test_pki.ca_file),
            tls_client_cert=str(tmp_path / "qwac.pem"),
            tls_client_key=str(tmp_path / "qwac.key"),
            tls_client_key_passphrase="s3cret-passphrase",
        )
        assert with_qwac.consents.users().links == {}
        assert len(bank.received) == 1


def test_one_pooled_connection_serves_consecutive_calls(bank, client):
    bank.add("GET", "/v1/users", OK)
    for _ in range(3):
        client.consents.users()
    adapter = client.session.get_adapter(bank.base_url)
    pools = list(adapter.poolmanager.pools._container.values())
    assert len(pools) == 1
    assert pools[0].num_connections == 1, "keep-alive: one TCP connection for three calls"
