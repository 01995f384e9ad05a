"""The bank client's settings as the portal reads them (core.bank.client_config)."""

from __future__ import annotations

from core.bank import client_config
from tests.tpp_portal.test_settings import manage


def test_the_response_size_cap_comes_from_bank_max_response_bytes(settings):
    assert settings.BANK_MAX_RESPONSE_BYTES == 10 * 1024 * 1024  # the default: 10 MiB
    assert client_config().max_response_bytes == 10 * 1024 * 1024
    settings.BANK_MAX_RESPONSE_BYTES = 4096
    assert client_config().max_response_bytes == 4096


def test_a_response_cap_below_one_byte_stops_start_up():
    result = manage("check", BANK_MAX_RESPONSE_BYTES="0")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "configuration error: BANK_MAX_RESPONSE_BYTES: must be at least 1" in result.stderr
