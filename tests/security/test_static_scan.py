"""The static security scan (`make lint` runs bandit with pyproject.toml's [tool.bandit]) is not a no-op:
with the project's configuration it still reports what ruff's S rules do not stand in for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLANTED = """
import pickle
import yaml
from django.utils.safestring import mark_safe


def load(path, text, blob):
    config = yaml.load(open(path))
    return config, mark_safe(text), pickle.loads(blob)
"""


def test_bandit_with_the_project_configuration_reports_planted_issues(tmp_path):
    sample = tmp_path / "planted.py"
    sample.write_text(PLANTED)
    result = subprocess.run(
        [sys.executable, "-m", "bandit", "-c", str(ROOT / "pyproject.toml"), "-f", "json", "-q", str(sample)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    found = {issue["test_id"] for issue in json.loads(result.stdout)["results"]}
    assert {"B506", "B703", "B301"} <= found, found
