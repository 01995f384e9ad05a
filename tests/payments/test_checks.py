"""A bad regulatory or exchange-rate setting is reported at start-up."""

from __future__ import annotations

import pytest

from payments.checks import check_payment_settings


def test_the_defaults_pass():
    assert check_payment_settings() == []


@pytest.mark.parametrize(
    ("name", "value", "error_id"),
    [
        ("REGULATORY_THRESHOLD_NOK", 0, "payments.E001"),
        ("REGULATORY_THRESHOLD_NOK", "lots", "payments.E001"),
        ("REGULATORY_MARGIN", "1", "payments.E002"),
        ("REGULATORY_MARGIN", -0.01, "payments.E002"),
        ("REGULATORY_MARGIN", "NaN", "payments.E002"),
        ("EXCHANGE_RATE_MAX_AGE_DAYS", -1, "payments.E003"),
        ("EXCHANGE_RATE_MAX_AGE_DAYS", "7", "payments.E003"),
    ],
)
def test_bad_settings_are_errors(settings, name, value, error_id):
    setattr(settings, name, value)
    assert [error.id for error in check_payment_settings()] == [error_id]
