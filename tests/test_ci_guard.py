"""The CI guard turns a skipped test into a failure under CI=true, and leaves local runs alone."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pytest_on(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    test_file = tmp_path / "test_sample.py"
    test_file.write_text("import pytest\n\ndef test_needs_a_browser():\n    pytest.skip('chromium missing')\n")
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.ci_guard",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:django",
            "-q",
            "-c",
            os.devnull,
            str(test_file),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_skip_fails_under_ci(tmp_path):
    result = run_pytest_on(tmp_path, "true")
    assert result.returncode == 1
    assert "skipped under CI=true, which is not allowed: Skipped: chromium missing" in result.stdout


def test_a_skip_is_a_skip_locally(tmp_path):
    result = run_pytest_on(tmp_path, "")
    assert result.returncode == 0
    assert "1 skipped" in result.stdout
