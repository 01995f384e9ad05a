"""Log lines carry the request id and never a secret; production logs are one JSON object per line."""

import io
import json
import logging

from core.logging import RedactingFilter, RequestIdFilter, redact
from core.requestid import current_request_id

# A PEM-shaped block (not a key): assembled here so that no key-looking text sits in the repository.
PEM_BLOCK = "-----BEGIN " + "PRIVATE KEY-----\nMIIB\n-----END " + "PRIVATE KEY-----"


def test_redact_removes_signatures_psu_ids_passwords_and_pem_blocks():
    text = (
        'Signature: keyId="SN=1,CA=CN=x",signature="abc=" PSU-ID=0b3a1e0c-1111-2222-3333-444455556666 '
        '{"password": "hunter2", "psu_corporate_id": "c0ffee"} ' + PEM_BLOCK
    )
    cleaned = redact(text)
    for secret in ("abc=", "0b3a1e0c-1111", "hunter2", "c0ffee", "MIIB"):
        assert secret not in cleaned
    assert "[redacted]" in cleaned


def _logger_with(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger(f"test.logging.{id(stream)}")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, stream


def test_json_lines_with_request_id_and_no_secret():
    from pythonjsonlogger.json import JsonFormatter

    logger, stream = _logger_with(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s"))
    token = current_request_id.set("req-12345678")
    try:
        logger.info("calling bank with %s", "PSU-ID: 6f1c2d3e-aaaa-bbbb-cccc-123456789012")
        try:
            raise ValueError("password=swordfish")
        except ValueError:
            logger.exception("failed")
    finally:
        current_request_id.reset(token)
    lines = stream.getvalue().strip().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["request_id"] == "req-12345678"
    assert "6f1c2d3e" not in first["message"]
    assert "swordfish" not in stream.getvalue()
    assert second["levelname"] == "ERROR"


def test_extra_fields_and_header_forms_are_redacted_too():
    from pythonjsonlogger.json import JsonFormatter

    logger, stream = _logger_with(JsonFormatter("%(message)s %(request_id)s"))
    logger.info(
        "sent %s",
        "('Authorization', 'Bearer abc.def') new_password1=swordfish",
        extra={"psu_id": "6f1c2d3e", "headers": {"PSU-ID": "77aa"}, "note": "Cookie: sessionid=zzz"},
    )
    line = stream.getvalue()
    for secret in ("abc.def", "swordfish", "6f1c2d3e", "77aa", "zzz"):
        assert secret not in line
    record = json.loads(line)
    assert record["psu_id"] == "[redacted]"


def test_django_records_are_written_once_through_the_filters(caplog):
    import logging as std

    django_logger = std.getLogger("django")
    assert django_logger.handlers == [] and django_logger.propagate


def test_names_the_tpp_session_state_and_national_identity_numbers_are_redacted():
    """Log attributes (``extra=``) and messages: a person's name, the TPP-Session-ID, the callback's state and
    PSU-ID (plain and inside an encoded next=), a national identity number."""
    from urllib.parse import quote

    from pythonjsonlogger.json import JsonFormatter

    callback = "/bank/callback?state=St4teQx7Zk2&tpp-session-id=SessWq8Vn3&psu-id=0b3a1e0c-1111&context=PRIVATE"
    logger, stream = _logger_with(JsonFormatter("%(message)s %(request_id)s"))
    logger.warning(
        '"GET %s HTTP/1.1" 400 then /auth/sign-in/?next=%s, payment to creditor_name=%s',
        callback,
        quote(callback, safe=""),
        "Kari Nordmann",
        extra={
            "creditor_name": "Kari Nordmann",
            "tpp_session_id": "SessWq8Vn3",
            "body": {"ownerName": "Ola Nordmann", "debtorAccount": {"bban": "13039319955"}},
            "note": "fnr 130393 19955 looked up",
        },
    )
    line = stream.getvalue()
    for secret in (
        "Kari",
        "Nordmann",
        "SessWq8Vn3",
        "St4teQx7Zk2",
        "0b3a1e0c-1111",
        "13039319955",
        "130393 19955",
    ):
        assert secret not in line, secret
    record = json.loads(line)
    assert record["creditor_name"] == record["tpp_session_id"] == "[redacted]"
    assert record["message"].startswith('"GET /bank/callback?state=[redacted]&tpp-session-id=[redacted]')
    assert "context=PRIVATE" in record["message"] and "looked up" in record["note"]
