"""A bounded load test of the whole product (bench/load.py, Locust headless, loopback only): users browse and
pay while the background refresh runs; afterwards every payment is at the bank exactly once and no account was
called beyond its unattended allowance. The full-size run is ``python -m bench.load``."""

from __future__ import annotations

import pytest

from bench.load import run_load

pytestmark = [pytest.mark.product, pytest.mark.live_bank, pytest.mark.timeout(600)]


def test_users_browsing_and_paying_while_the_background_refresh_runs(tmp_path):
    report = run_load(tmp_path, users=8, connections=4, seconds=20, max_requests=2000)

    print(
        f"\nload: {report.requests} requests, {report.throughput:.1f} req/s, median {report.median_ms:.0f} ms, "
        f"p95 {report.p95_ms:.0f} ms, {report.failures} failed, {report.payments_sent} payments, "
        f"{report.refreshed_accounts}/{report.accounts} accounts refreshed unattended"
    )
    assert report.problems == []
    assert report.failures == 0, report.failure_lines[:10]
    assert report.requests >= 50
    assert report.payments_sent >= 1, "payments were submitted during the run"
    # 4 connections of two sandbox customers: 12 portal accounts on 6 bank accounts, all within the allowance.
    assert report.accounts == 12 and report.refreshable_accounts == 12
    assert report.refreshed_accounts == report.accounts
