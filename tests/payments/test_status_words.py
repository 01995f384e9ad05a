"""Every bank status in plain words; a code the portal does not know is "being processed", never final."""

from __future__ import annotations

import pytest

from payments.models import FINAL_TRANSACTION_STATUSES
from payments.status import KNOWN_STATUSES, status_text

ISO_CODES = (
    "ACCC",
    "ACCP",
    "ACFC",
    "ACSC",
    "ACSP",
    "ACTC",
    "ACWC",
    "ACWP",
    "CANC",
    "PART",
    "PATC",
    "PDNG",
    "RCVD",
    "RJCT",
)


@pytest.mark.parametrize("code", ISO_CODES)
def test_every_status_the_platform_may_send_has_words(code):
    text = status_text(code)
    assert code in KNOWN_STATUSES
    assert text.label and text.label != code and text.meaning


def test_final_statuses_are_the_four_ends():
    assert FINAL_TRANSACTION_STATUSES == {"ACSC", "ACCC", "RJCT", "CANC"}


def test_an_unknown_code_reads_being_processed_and_keeps_the_code():
    text = status_text("ZZZZ")
    assert text.label == "Being processed"
    assert text.code == "ZZZZ" and text.tone == "progress"
    assert "ZZZZ" not in FINAL_TRANSACTION_STATUSES
