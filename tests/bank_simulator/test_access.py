"""Access control through real signed requests (spec section 5): each rule refused with 400 naming it."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.test import Client

from devtools import pki
from tests.bank_simulator.conftest import (
    CORPORATE_1,
    Bank,
    Signer,
    error_code,
    error_text,
    give_consent,
    http_date,
)

ACCOUNTS = "/v1/accounts"


def test_a_signed_request_passes_access_control(private_bank):
    response = private_bank.get(ACCOUNTS)
    assert response.status_code == 200
    assert response["X-Request-ID"]


def test_the_signature_is_rfc2047_encoded_because_the_ca_name_is_not_ascii(private_bank):
    # The development CA has "Tromsø" and "Ærø" in its name: the keyId is UTF-8, the header =?utf-8?B?...?=.
    seen = {}
    original = private_bank.client.get

    def spy(path, **kwargs):
        seen.update(kwargs["headers"])
        return original(path, **kwargs)

    private_bank.client.get = spy
    assert private_bank.get(ACCOUNTS).status_code == 200
    assert seen["Signature"].startswith("=?utf-8?B?")


def test_missing_signature_is_400_naming_the_header(bank):
    response = Client().get(ACCOUNTS, headers={"X-Request-ID": str(uuid.uuid4()), "Date": http_date()})
    assert response.status_code == 400
    assert error_code(response) == "HTTP_HEADER_REQUIRED"
    assert response.json()["tppMessages"][0]["path"] == "Signature"


def test_a_wrong_signature_is_refused(private_bank):
    response = private_bank.get(ACCOUNTS, tamper={"X-Request-ID": str(uuid.uuid4())})  # changed after signing
    assert response.status_code == 400
    assert error_code(response) == "BAD_REQUEST"
    assert "does not verify" in error_text(response)


def test_a_tampered_body_fails_the_digest(bank):
    response = bank.post(
        "/v1/sandbox/customers", '{"customerType":"PRIVATE"}', tamper={"Digest": "SHA-256=" + "A" * 43 + "="}
    )
    assert response.status_code == 400
    assert "does not verify" in error_text(response) or "Digest" in error_text(response)


def test_body_changed_after_signing_fails_the_digest(bank):
    from xs2a.signing import sign_request

    body = b'{"customerNumber":"01019000083","customerType":"PRIVATE","customerName":"A"}'
    headers = sign_request(
        "POST",
        "/v1/sandbox/customers",
        bank.headers(),
        body,
        bank.signer.key,
        bank.signer.certificate,
    )
    response = bank.client.post(
        "/v1/sandbox/customers",
        data=body.replace(b'"A"', b'"B"'),
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 400
    assert error_text(response) == "Digest: the SHA-256 hash does not match the request body"


def test_sha512_digest_and_signed_request_target_are_accepted(bank):
    response = bank.post("/v1/bank-offered-consents", "{}", digest_algorithm="SHA-512")
    assert response.status_code == 201


def test_request_target_with_opaque_ids_is_verified(private_bank):
    account = private_bank.get(ACCOUNTS).json()["accounts"][0]
    assert "!" in account["resourceId"] and "=" in account["resourceId"]
    response = private_bank.get(account["_links"]["balances"]["href"])
    assert response.status_code == 200


@pytest.mark.parametrize("offset", [-61, 61])
def test_date_outside_60_seconds_is_refused(private_bank, offset):
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset)
    response = private_bank.get(ACCOUNTS, headers={"Date": http_date(moment)})
    assert response.status_code == 400
    assert "Date: deviates more than 60 seconds" in error_text(response)


def test_date_within_60_seconds_is_accepted(private_bank):
    moment = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=50)
    assert private_bank.get(ACCOUNTS, headers={"Date": http_date(moment)}).status_code == 200


def _signature_without(bank: Bank, name: str) -> str:
    """A valid signature over the request's headers except ``name``."""
    from xs2a.signing import key_id, signature_for, signature_header

    headers = bank.headers()
    names = [n for n in ("(request-target)", "date", "x-request-id", "psu-id", "tpp-redirect-uri") if n != name]
    lowered = {k.lower(): v for k, v in headers.items()}
    signature = signature_for(names, method="GET", target=ACCOUNTS, headers=lowered, key=bank.signer.key)
    return headers, signature_header(
        key_id=key_id(bank.signer.certificate), header_names=names, signature=signature
    )


@pytest.mark.parametrize("name", ["date", "x-request-id"])
def test_date_and_request_id_must_be_signed(private_bank, name):
    from xs2a.signing import certificate_header

    headers, signature = _signature_without(private_bank, name)
    headers.update(
        {"Signature": signature, "TPP-Signature-Certificate": certificate_header(private_bank.signer.certificate)}
    )
    response = private_bank.client.get(ACCOUNTS, headers=headers)
    assert response.status_code == 400
    assert error_text(response) == f"Signature headers: {name} must be signed"


def test_digest_must_be_signed_when_there_is_a_body(bank):
    from xs2a.signing import certificate_header, digest_header, key_id, signature_for, signature_header

    body = b"{}"
    headers = {**bank.headers(), "Digest": digest_header(body)}
    names = ["(request-target)", "date", "x-request-id"]
    lowered = {k.lower(): v for k, v in headers.items()}
    signature = signature_for(
        names, method="POST", target="/v1/bank-offered-consents", headers=lowered, key=bank.signer.key
    )
    headers["Signature"] = signature_header(
        key_id=key_id(bank.signer.certificate), header_names=names, signature=signature
    )
    headers["TPP-Signature-Certificate"] = certificate_header(bank.signer.certificate)
    response = bank.client.post(
        "/v1/bank-offered-consents", data=body, content_type="application/json", headers=headers
    )
    assert response.status_code == 400
    assert error_text(response) == "Signature headers: digest must be signed"


def test_key_id_must_name_the_serial_in_upper_case_hex(private_bank):
    from xs2a import signing

    cert = private_bank.signer.certificate
    headers = private_bank.headers()
    names = signing.signed_header_names(headers)
    signature = signing.signature_for(
        names, method="GET", target=ACCOUNTS, headers=headers, key=private_bank.signer.key
    )
    lower_key_id = f"SN={cert.serial_number:x},CA={signing.rfc2253_name(cert.issuer)}"
    if lower_key_id == signing.key_id(cert):  # an all-digit serial has no case; make it wrong another way
        lower_key_id = f"SN=0{cert.serial_number:X},CA={signing.rfc2253_name(cert.issuer)}"
    headers["Signature"] = signing.signature_header(key_id=lower_key_id, header_names=names, signature=signature)
    headers["TPP-Signature-Certificate"] = signing.certificate_header(cert)
    response = private_bank.client.get(ACCOUNTS, headers=headers)
    assert response.status_code == 400
    assert "is not the serial number" in error_text(response)


def test_key_id_issuer_must_be_rfc2253_not_rfc4514(private_bank):
    from xs2a import signing

    cert = private_bank.signer.certificate
    headers = private_bank.headers()
    names = signing.signed_header_names(headers)
    signature = signing.signature_for(
        names, method="GET", target=ACCOUNTS, headers=headers, key=private_bank.signer.key
    )
    # cryptography's RFC 4514 form writes organizationIdentifier by name: not the bank's form.
    wrong = f"SN={cert.serial_number:X},CA={cert.issuer.rfc4514_string()}"
    headers["Signature"] = signing.signature_header(key_id=wrong, header_names=names, signature=signature)
    headers["TPP-Signature-Certificate"] = signing.certificate_header(cert)
    response = private_bank.client.get(ACCOUNTS, headers=headers)
    assert response.status_code == 400
    assert "CA= is not the issuer" in error_text(response)
    assert "2.5.4.97=#0c0f4e54524e4f2d393837363534333231" in error_text(response)


def test_a_certificate_from_another_ca_is_refused(bank):
    other_ca = pki.issue_ca()
    cert = pki.issue_qseal(other_ca)
    response = bank.get(ACCOUNTS, signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert "does not chain to a trusted CA" in error_text(response)


def test_a_certificate_with_the_trusted_ca_name_but_another_key_is_refused(bank):
    impostor = pki.issue_ca()  # same default name as the development CA, different key
    cert = pki.issue_qseal(impostor)
    response = bank.get(ACCOUNTS, signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert "does not chain to a trusted CA" in error_text(response)


def test_an_expired_certificate_is_refused(bank, dev_ca):
    start = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
    cert = pki.issue_qseal(dev_ca, not_before=start, days=30)
    response = bank.get(ACCOUNTS, signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert error_text(response) == "TPP-Signature-Certificate: the certificate has expired"


def test_a_not_yet_valid_certificate_is_refused(bank, dev_ca):
    start = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    cert = pki.issue_qseal(dev_ca, not_before=start, days=30)
    response = bank.get(ACCOUNTS, signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert error_text(response) == "TPP-Signature-Certificate: the certificate is not yet valid"


def test_account_information_needs_the_psp_ai_role(bank, dev_ca):
    cert = pki.issue_qseal(dev_ca, roles=("PSP_PI",))
    response = bank.get(ACCOUNTS, signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert "PSD2 role PSP_AI is required" in error_text(response)
    response = bank.post("/v1/bank-offered-consents", "{}", signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400


def test_users_needs_the_psp_pi_role(bank, dev_ca):
    cert = pki.issue_qseal(dev_ca, roles=("PSP_AI",))
    response = bank.get("/v1/users", signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert "PSD2 role PSP_PI is required" in error_text(response)
    assert bank.get("/v1/users").status_code == 200  # the development QSealC has both roles


def test_a_certificate_without_psd2_statement_is_refused(bank, dev_ca):
    cert = pki.issue_qseal(dev_ca, roles=())
    response = bank.get("/v1/sandbox/customers", signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 200  # sandbox operations need a valid certificate, no particular role
    response = bank.get(ACCOUNTS, signer=Signer(cert.key, cert.certificate))
    assert response.status_code == 400
    assert "the certificate holds none" in error_text(response)


def test_the_tpp_is_identified_by_organization_identifier(bank, dev_ca):
    """Another certificate of the same TPP (same organizationIdentifier) sees the same PSU-ID and consent."""
    give_consent(bank, "13039319955")
    renewed = pki.issue_qseal(dev_ca)
    response = bank.get(ACCOUNTS, signer=Signer(renewed.key, renewed.certificate))
    assert response.status_code == 200
    from cryptography import x509

    other_tpp = pki.issue_qseal(
        dev_ca,
        x509.Name(
            [
                x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, "Other TPP AS"),
                x509.NameAttribute(x509.NameOID.ORGANIZATION_IDENTIFIER, "PSDNO-FSA-111222333"),
            ]
        ),
    )
    response = bank.get(ACCOUNTS, signer=Signer(other_tpp.key, other_tpp.certificate))
    assert response.status_code == 401  # the PSU-ID belongs to the first TPP
    assert error_code(response) == "PSU_CREDENTIALS_INVALID"


@pytest.mark.parametrize(
    ("target", "header"),
    [(ACCOUNTS, "TPP-Redirect-URI"), ("/v1/users", "TPP-Session-ID"), ("/v1/users", "TPP-Redirect-URI")],
)
def test_required_headers_are_named(private_bank, target, header):
    response = private_bank.get(target, headers={header: None})
    assert response.status_code == 400
    assert error_code(response) == "HTTP_HEADER_REQUIRED"
    assert response.json()["tppMessages"][0]["path"] == header


def test_sandbox_listing_needs_only_the_signing_headers(bank):
    response = bank.get("/v1/sandbox/customers", headers={"TPP-Redirect-URI": None, "TPP-Session-ID": None})
    assert response.status_code == 200


def test_psu_id_must_be_a_uuid(bank):
    response = bank.get(ACCOUNTS, headers={"PSU-ID": "13039319955"})
    assert response.status_code == 400
    assert error_code(response) == "FORMAT_ERROR"
    assert response.json()["tppMessages"][0]["path"] == "PSU-ID"


def test_a_corporate_psu_without_psu_corporate_id_gets_400(bank):
    give_consent(bank, CORPORATE_1)
    assert bank.corporate_id
    assert bank.get(ACCOUNTS).status_code == 200
    bank.corporate_id = None
    response = bank.get(ACCOUNTS)
    assert response.status_code == 400
    assert error_code(response) == "HTTP_HEADER_REQUIRED"
    assert response.json()["tppMessages"][0]["path"] == "PSU-Corporate-ID"


def test_xml_is_refused(bank):
    response = bank.post("/v1/sandbox/customers", "<customer/>", content_type="application/xml")
    assert response.status_code == 400
    assert error_code(response) == "FORMAT_ERROR"
    assert "no XML" in error_text(response)
    response = bank.get("/v1/sandbox/customers", headers={"Accept": "application/xml"})
    assert response.status_code == 406
    assert error_code(response) == "FORMAT_ERROR"


def test_an_emoji_is_refused_with_400(bank):
    body = '{"customerNumber":"01019000083","customerType":"PRIVATE","customerName":"Kari 😀"}'
    response = bank.post("/v1/sandbox/customers", body)
    assert response.status_code == 400
    assert "U+1F600" in error_text(response)


def test_norwegian_letters_are_fine(bank):
    body = '{"customerNumber":"01019000083","customerType":"PRIVATE","customerName":"Åse Ødegård"}'
    response = bank.post("/v1/sandbox/customers", body)
    assert response.status_code == 201, response.content
    assert response.json()["customerName"] == "Åse Ødegård"


def test_invalid_json_is_a_format_error(bank):
    response = bank.post("/v1/sandbox/customers", '{"customerType": ')
    assert response.status_code == 400
    assert error_code(response) == "FORMAT_ERROR"


def test_psu_ip_address_must_be_an_ip(private_bank):
    response = private_bank.get(ACCOUNTS, headers={"PSU-IP-Address": "not-an-ip"})
    assert response.status_code == 400
    assert response.json()["tppMessages"][0]["path"] == "PSU-IP-Address"


def test_unknown_paths_and_methods_answer_with_tpp_messages(bank):
    response = bank.get("/v1/nothing-here")
    assert response.status_code == 404
    assert error_code(response) == "NOT_FOUND"
    response = bank.delete(ACCOUNTS)
    assert response.status_code == 405
    assert error_code(response) == "BAD_REQUEST"


def test_malformed_signature_header(bank):
    response = bank.get(ACCOUNTS, tamper={"Signature": "keyId=unquoted"})
    assert response.status_code == 400
    assert error_text(response).startswith("Signature header:")
    response = bank.get(ACCOUNTS, tamper={"TPP-Signature-Certificate": "bm90IGEgY2VydA=="})
    assert response.status_code == 400
    assert "not a DER X.509 certificate" in error_text(response)


def test_responses_are_signed_with_the_bank_seal_when_enabled(private_bank, settings):
    """Signed as the portal accepts an answer (xs2a.signing.verify_response): over Date, Digest and the request's
    X-Request-ID, dated now."""
    from cryptography import x509

    from xs2a.signing import verify_response

    settings.BANK_SIM_SIGN_RESPONSES = True
    seal = x509.load_pem_x509_certificate(settings.BANK_SIM_SIGNING_CERT.read_bytes())
    ids = [str(uuid.uuid4()) for _ in range(2)]
    response = private_bank.get(ACCOUNTS, headers={"X-Request-ID": ids[0]})
    assert response.status_code == 200
    error = private_bank.get(ACCOUNTS, headers={"PSU-ID": "not-a-uuid", "X-Request-ID": ids[1]})
    assert error.status_code == 400  # error answers are signed too
    for answer, request_id in ((response, ids[0]), (error, ids[1])):
        headers = dict(answer.items())
        assert headers["Signature"].startswith("=?utf-8?B?")  # the CA name is not ASCII
        params = verify_response(
            headers["Signature"],
            headers=headers,
            body=answer.content,
            certificate=seal,
            request_id=request_id,
            now=dt.datetime.now(dt.UTC),
            max_age=300,
        )
        assert params.headers == ("date", "digest", "x-request-id")


def test_a_seal_whose_issuer_has_escaped_characters_signs_answers_the_portal_accepts(
    private_bank, settings, tmp_path
):
    """A keyId holding a backslash (an issuer such as ``O=Tillitstjenester Vest\\, AS`` in RFC 2253) is written as
    an HTTP quoted-string, as the portal reads it: unescaped, the portal would read another keyId and refuse every
    answer."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    from bank_simulator.security import response_signing
    from devtools import pki
    from xs2a.signing import key_id, verify_response

    issuer = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'Tillitstjenester Vest, AS "Nord"'),
            x509.NameAttribute(NameOID.COMMON_NAME, "Vest CA"),
        ]
    )
    seal = pki.issue_qseal(pki.issue_ca(issuer), pki.BANK_NAME, roles=())
    assert "\\," in key_id(seal.certificate) and '\\"' in key_id(seal.certificate)
    (tmp_path / "seal.pem").write_bytes(seal.cert_pem())
    (tmp_path / "seal.key").write_bytes(seal.key_pem())
    settings.BANK_SIM_SIGN_RESPONSES = True
    settings.BANK_SIM_SIGNING_CERT = tmp_path / "seal.pem"
    settings.BANK_SIM_SIGNING_KEY = tmp_path / "seal.key"
    response_signing._seal.cache_clear()
    try:
        request_id = str(uuid.uuid4())
        response = private_bank.get(ACCOUNTS, headers={"X-Request-ID": request_id})
    finally:
        response_signing._seal.cache_clear()
    assert response.status_code == 200
    headers = dict(response.items())
    verify_response(
        headers["Signature"],
        headers=headers,
        body=response.content,
        certificate=seal.certificate,
        request_id=request_id,
        now=dt.datetime.now(dt.UTC),
        max_age=300,
    )


def test_responses_are_not_signed_by_default(private_bank):
    assert "Signature" not in private_bank.get(ACCOUNTS)


def test_psu_corporate_id_of_an_agreement_the_psu_may_not_use_is_403(private_bank):
    from bank_simulator.models import Agreement

    foreign = Agreement.objects.get(owner__customer_number="20079518612")  # Private Customer 1 is no user of it
    private_bank.corporate_id = str(foreign.agreement_id)
    response = private_bank.get(ACCOUNTS)
    assert response.status_code == 403
    assert error_code(response) == "FORBIDDEN"


# --- what must be signed, replays, keyId as a quoted string --------------------------------------------------


def _signed(bank: Bank, method: str, target: str, names: list[str], headers: dict[str, str], **kw) -> dict:
    """``headers`` with a valid signature over exactly ``names`` (any keyId quoting given by ``key_id``)."""
    from xs2a import signing

    key = kw.get("key", bank.signer.key)
    certificate = kw.get("certificate", bank.signer.certificate)
    lowered = {k.lower(): v for k, v in headers.items()}
    signature = signing.signature_for(names, method=method, target=target, headers=lowered, key=key)
    key_id = kw.get("key_id", signing.key_id(certificate))
    value = f'keyId="{key_id}",algorithm="rsa-sha256",headers="{" ".join(names)}",signature="{signature}"'
    return {
        **headers,
        "Signature": signing.encode_rfc2047(value),
        "TPP-Signature-Certificate": signing.certificate_header(certificate),
    }


def test_request_target_must_be_signed(private_bank):
    headers = private_bank.headers()
    names = ["date", "x-request-id", "psu-id"]
    response = private_bank.client.get(ACCOUNTS, headers=_signed(private_bank, "GET", ACCOUNTS, names, headers))
    assert response.status_code == 400
    assert error_text(response).startswith("Signature headers: (request-target) must be signed")
    assert response.json()["tppMessages"][0]["path"] == "Signature"


@pytest.mark.parametrize(("header", "name"), [("PSU-ID", "psu-id"), ("PSU-Corporate-ID", "psu-corporate-id")])
def test_psu_headers_must_be_signed_when_sent(bank, header, name):
    give_consent(bank, CORPORATE_1)
    headers = bank.headers()
    assert header in headers
    names = ["(request-target)", "date", "x-request-id", "psu-id", "psu-corporate-id"]
    names.remove(name)
    response = bank.client.get(ACCOUNTS, headers=_signed(bank, "GET", ACCOUNTS, names, headers))
    assert response.status_code == 400
    assert error_text(response).startswith(f"Signature headers: {name} must be signed when the {header} header")
    # Signed, the same request passes.
    signed = _signed(bank, "GET", ACCOUNTS, [*names, name], bank.headers())
    assert bank.client.get(ACCOUNTS, headers=signed).status_code == 200


def test_a_captured_request_cannot_be_re_aimed_with_an_unsigned_psu_id(private_bank):
    """A signed GET of the sandbox listing (no PSU) sent to /v1/accounts with a PSU-ID added: refused whether
    the capture signed (request-target) or not (before: it read the PSU's accounts)."""
    psu_id = private_bank.psu_id
    for names in (["date", "x-request-id", "tpp-redirect-uri"], ["(request-target)", "date", "x-request-id"]):
        captured = _signed(private_bank, "GET", "/v1/sandbox/customers", names, private_bank.headers(psu=False))
        response = private_bank.client.get(ACCOUNTS, headers={**captured, "PSU-ID": psu_id})
        assert response.status_code == 400, names
        assert "Signature headers:" in error_text(response) or "does not verify" in error_text(response)
    # Signing psu-id as well does not help either: (request-target) names the other path.
    names = ["(request-target)", "date", "x-request-id", "psu-id"]
    captured = _signed(
        private_bank, "GET", "/v1/sandbox/customers", names, {**private_bank.headers(), "PSU-ID": psu_id}
    )
    response = private_bank.client.get(ACCOUNTS, headers=captured)
    assert response.status_code == 400
    assert "does not verify" in error_text(response)


def test_a_replayed_signature_is_refused(private_bank):
    from xs2a.signing import sign_request

    signed = sign_request(
        "GET",
        ACCOUNTS,
        private_bank.headers(),
        None,
        private_bank.signer.key,
        private_bank.signer.certificate,
    )
    assert private_bank.client.get(ACCOUNTS, headers=signed).status_code == 200
    again = private_bank.client.get(ACCOUNTS, headers=signed)
    assert again.status_code == 400
    assert error_code(again) == "BAD_REQUEST"
    assert error_text(again).startswith("Signature: this signature was already used")
    # The same request signed again (another X-Request-ID) is fine.
    assert private_bank.get(ACCOUNTS).status_code == 200


def test_a_refused_request_does_not_use_up_its_signature(private_bank):
    """Only a request that passed access control is remembered: a request refused for its headers is refused
    again for the same reason, not as a replay."""
    from xs2a.signing import sign_request

    headers = private_bank.headers({"TPP-Redirect-URI": None})
    signed = sign_request(
        "GET",
        ACCOUNTS,
        headers,
        None,
        private_bank.signer.key,
        private_bank.signer.certificate,
    )
    for _ in range(2):
        response = private_bank.client.get(ACCOUNTS, headers=signed)
        assert response.status_code == 400 and error_code(response) == "HTTP_HEADER_REQUIRED"


def test_seen_signatures_are_kept_for_the_date_window_and_pruned(private_bank, settings):
    from bank_simulator.models import SeenSignature
    from bank_simulator.security import replay

    SeenSignature.objects.all().delete()
    sent = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=20)
    assert private_bank.get(ACCOUNTS, headers={"Date": http_date(sent)}).status_code == 200
    (row,) = SeenSignature.objects.all()
    assert row.expires_at == sent.replace(microsecond=0) + dt.timedelta(seconds=settings.BANK_SIM_DATE_TOLERANCE)
    assert replay.prune(real_now=row.expires_at) == 0  # still within the window: a replay would pass the Date
    assert replay.prune(real_now=row.expires_at + dt.timedelta(seconds=1)) == 1
    assert not SeenSignature.objects.exists()


def _trusted_tpp(settings, tmp_path, organization: str) -> Signer:
    """A QSealC from a new CA named O=<organization> that the bank trusts (beside the development CA)."""
    from cryptography import x509

    ca = pki.issue_ca(
        x509.Name(
            [
                x509.NameAttribute(x509.NameOID.COUNTRY_NAME, "NO"),
                x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, organization),
                x509.NameAttribute(x509.NameOID.COMMON_NAME, "Test QTSP CA"),
            ]
        )
    )
    ca_file = tmp_path / "qtsp.pem"
    ca_file.write_bytes(ca.cert_pem())
    settings.BANK_SIM_TRUSTED_CAS = [*settings.BANK_SIM_TRUSTED_CAS, ca_file]
    cert = pki.issue_qseal(ca)
    return Signer(cert.key, cert.certificate)


def _quoted(text: str) -> str:
    """An HTTP quoted-string's content: \\ and \" escaped (as the portal's signer writes keyId)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


@pytest.mark.parametrize(
    ("organization", "issuer"),
    [
        ("Tillitstjenester Vest, AS", "CN=Test QTSP CA,O=Tillitstjenester Vest\\, AS,C=NO"),
        ('Sertifikat "Nord" AS', 'CN=Test QTSP CA,O=Sertifikat \\"Nord\\" AS,C=NO'),
    ],
)
def test_key_id_is_read_as_a_quoted_string(bank, settings, tmp_path, organization, issuer):
    """An issuer whose RFC 2253 form needs an escape: keyId written as a quoted string (each \\ and " escaped
    again) verifies end to end; written raw, the escapes are read away and the issuer does not match."""
    from xs2a import signing

    tpp = _trusted_tpp(settings, tmp_path, organization)
    key_id = f"SN={tpp.certificate.serial_number:X},CA={issuer}"
    assert signing.key_id(tpp.certificate) == key_id  # the portal's RFC 2253 form agrees with the bank's
    target = "/v1/sandbox/customers"
    names = ["(request-target)", "date", "x-request-id"]
    escaped = _signed(
        bank,
        "GET",
        target,
        names,
        bank.headers(psu=False),
        key=tpp.key,
        certificate=tpp.certificate,
        key_id=_quoted(key_id),
    )
    response = bank.client.get(target, headers=escaped)
    assert response.status_code == 200, response.content
    raw = _signed(
        bank,
        "GET",
        target,
        names,
        bank.headers(psu=False),
        key=tpp.key,
        certificate=tpp.certificate,
        key_id=key_id,
    )
    response = bank.client.get(target, headers=raw)
    assert response.status_code == 400
    assert "CA= is not the issuer" in error_text(response) and "quoted string" in error_text(response)
