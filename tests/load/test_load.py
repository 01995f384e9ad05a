"""A bounded load test of the whole product (bench/load.py, Locust headless, loopback only): users browse and
pay while the background refresh runs for 200 accounts made at the bank through its sandbox endpoints (one
customer, one consent through the SCA form); afterwards every account was refreshed, every payment is at the
bank exactly once and no account was called beyond its unattended allowance, counted at the bank and in the
portal's ledger. The full-size run, the same code with 10 000 accounts, is ``python -m bench.load``."""

from __future__ import annotations

import pytest

from bench.load import SIGN_IN, run_load

pytestmark = [pytest.mark.product, pytest.mark.live_bank, pytest.mark.timeout(600)]


def test_users_browsing_and_paying_while_the_background_refresh_runs(tmp_path):
    report = run_load(
        tmp_path, accounts=200, users=8, connections=4, seconds=20, max_requests=2000, refresh_wait=40
    )

    print(
        f"\nload: {report.requests} requests, {report.throughput:.1f} req/s, median {report.median_ms:.0f} ms, "
        f"p95 {report.p95_ms:.0f} ms, {report.failures} failed, {report.payments_sent} payments, "
        f"{report.refreshed_during_load} accounts refreshed unattended during the run and "
        f"{report.refreshed_accounts}/{report.accounts} in all ({report.refresh_rate:.1f}/s); unattended calls "
        f"{report.unattended_calls[0]} at the bank, {report.unattended_calls[1]} in the ledger"
    )
    assert report.problems == []
    assert report.failures == 0, report.failure_lines[:10]
    assert report.requests >= 50
    # Every simulated user signed in once, through the form: the sign-in figures (bench.load's RESULT) count them.
    assert report.by_request[SIGN_IN].count == 8 and report.by_request[SIGN_IN].failures == 0
    assert report.payments_sent >= 1, "payments were submitted during the run"
    # 200 bulk accounts, and 4 connections of two sandbox customers: 12 portal accounts on 6 bank accounts; all
    # within the allowance, all refreshed, and the refresh ran while the users did.
    assert report.accounts == 212 and report.refreshable_accounts == 212
    assert report.refreshed_accounts == report.accounts
    assert report.refreshed_during_load > 0
    # Each refresh is at least two unattended calls (balances, transactions pages); the portal's ledger reserves
    # every call before it is made, so it never counts fewer than the bank.
    assert 2 * report.accounts <= report.unattended_calls[0] <= report.unattended_calls[1]
