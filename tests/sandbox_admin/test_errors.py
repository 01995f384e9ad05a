"""The staff's words for a failed sandbox call: an unknown outcome is never reported as "not reached"."""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext as _

from sandbox_admin.errors import sandbox_error
from xs2a import errors


def _bank_error(status: int, method: str) -> errors.Xs2aError:
    body = b'{"tppMessages": [{"category": "ERROR", "code": "SYSTEM_ERROR", "text": "Teknisk feil"}]}'
    return errors.error_from_response(status=status, body=body, request_id="rid-1", method=method)


def test_a_5xx_to_a_post_says_the_outcome_is_unknown_with_the_banks_status_and_text():
    error = sandbox_error(_bank_error(500, "POST"), what="the customer")
    assert error.message == (
        "The bank failed (HTTP 500: Teknisk feil (SYSTEM_ERROR)), so it is not known whether the customer went "
        "through. Check the customer list before trying again. [X-Request-ID rid-1]"
    )


def test_a_5xx_to_a_get_is_the_banks_failure():
    error = sandbox_error(_bank_error(503, "GET"), what="the customer")
    assert error.message == "The bank failed (HTTP 503): Teknisk feil (SYSTEM_ERROR) [X-Request-ID rid-1]"


def test_no_answer_after_sending_and_nothing_sent_are_told_apart():
    lost = sandbox_error(errors.OutcomeUnknownError("reset", request_id="rid-2"), what="the account")
    assert lost.message.startswith("The bank did not answer, so it is not known whether the account went through.")
    unsent = sandbox_error(errors.TransportError("refused", request_id="rid-3"), what="the account")
    assert unsent.message == "The bank could not be reached. Try again in a moment. [X-Request-ID rid-3]"


def test_the_staff_member_reads_the_failure_in_their_language():
    with translation.override("nb"):
        lost = sandbox_error(errors.OutcomeUnknownError("reset", request_id="rid-4"), what=_("the customer"))
        refused = sandbox_error(_bank_error(400, "POST"), what=_("the customer"))
    assert lost.message == (
        "Banken svarte ikke, så det er ukjent om kunden gikk gjennom. Sjekk kundelisten før du prøver igjen. "
        "[X-Request-ID rid-4]"
    )
    assert refused.message == "Banken avviste: Teknisk feil (SYSTEM_ERROR) [X-Request-ID rid-1]"
