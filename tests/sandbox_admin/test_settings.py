"""How the portal knows its bank is a sandbox: BANK_IS_SANDBOX, true by default only for the local sandbox bank
outside production."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.tpp_portal.test_settings import PRODUCTION, ROOT


def bank_is_sandbox(**env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BANK_", "SECRET_KEY"))}
    environment.update({"DJANGO_SETTINGS_MODULE": "tpp_portal.settings", **env})
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.BANK_IS_SANDBOX)"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "True"),  # development with the embedded default bank
        ({"BANK_BASE_URL": "http://127.0.0.1:8001/"}, "True"),  # the same address
        ({"BANK_BASE_URL": "https://xs2a.bank.example/psd2"}, "False"),  # any other bank must say so
        ({"BANK_BASE_URL": "https://xs2a.bank.example/psd2", "BANK_IS_SANDBOX": "true"}, "True"),
        ({"BANK_IS_SANDBOX": "false"}, "False"),
        (PRODUCTION, "False"),  # production never defaults to a sandbox
        ({**PRODUCTION, "BANK_IS_SANDBOX": "true"}, "True"),  # e.g. docker/compose.yaml with its sandbox bank
    ],
)
def test_bank_is_sandbox_default(env, expected):
    assert bank_is_sandbox(**env) == expected
