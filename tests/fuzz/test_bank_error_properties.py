"""Property-based fuzzing of the bank's error bodies (xs2a/errors.py): whatever a bank answers with an error
status (malformed JSON, wrong types, huge or hostile tppMessages, odd Retry-After), the client turns it into
an Xs2aError with the bank's text when there is one, never another exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from xs2a.errors import Xs2aError, error_from_response, parse_retry_after

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "category": st.sampled_from(["ERROR", "WARNING", "error", ""]) | JSONISH,
        "code": st.sampled_from(["FORMAT_ERROR", "CONSENT_EXPIRED", "ACCESS_EXCEEDED", "SIGNATURE_INVALID"])
        | JSONISH,
        "text": st.text(max_size=500) | JSONISH,
        "path": JSONISH,
    },
)
BODIES = (
    st.binary(max_size=500)
    | st.text(max_size=500)
    | JSONISH.map(lambda v: json.dumps(v).encode())
    | st.lists(MESSAGE, max_size=5).map(lambda m: json.dumps({"tppMessages": m}).encode())
    | st.lists(MESSAGE, max_size=3).map(lambda m: {"tppMessages": m, "_links": {"scaRedirect": {"href": "x"}}})
)
HEADER_NAMES = st.sampled_from(["Retry-After", "Content-Type", "X-Request-ID", "retry-after"])
HEADERS = st.dictionaries(HEADER_NAMES, st.text(max_size=40), max_size=3)


@FUZZ
@given(status=st.integers(min_value=300, max_value=599), body=BODIES, headers=HEADERS)
@example(status=429, body=b'{"tppMessages": [{"code": "ACCESS_EXCEEDED"}]}', headers={"Retry-After": "-1"})
@example(status=400, body=b'{"tppMessages": "not a list"}', headers={})
@example(status=401, body=b"\xff\xfe{", headers={})
@example(status=500, body=b'{"tppMessages": [{"code": null, "text": {"nested": []}}]}', headers={})
def test_any_error_body_becomes_an_xs2a_error(status, body, headers):
    error = error_from_response(status=status, body=body, headers=headers, request_id="r-1", method="GET")
    assert isinstance(error, Xs2aError)
    assert error.status == status
    str(error)  # the message renders
    for message in error.tpp_messages:
        assert isinstance(message.code, str) and isinstance(message.text, str | None)


@FUZZ
@given(value=st.none() | st.text(max_size=60))
@example(value="Wed, 21 Oct 2015 07:28:00 GMT")
@example(value="99999999999999999999999")
@example(value="1e400")
@example(value="\u00b2")  # a digit to str.isdigit, not to int()
def test_retry_after_is_read_or_ignored(value):
    seconds, moment = parse_retry_after(value)
    assert (seconds is None) == (moment is None)
    assert seconds is None or seconds >= 0
