"""pytest plugin (loaded from pyproject's addopts): under CI=true no test is skipped silently.

A skip there turns into a failure that names the reason, so a missing browser, server or tool is seen.
"""

from __future__ import annotations

import os

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which is not allowed: {reason}"
