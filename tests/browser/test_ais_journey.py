"""The account-information journey in a real browser against the sandbox bank running as a process: sign up
(through the page, and the code of the confirmation mail typed in the same browser), connect as Private
Customer 1, tick accounts at the bank's screen, land back, see the balances, read the transactions with "Refresh
now", see the chart, the transactions and one transaction's details. Screenshots are kept as test artefacts."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from tests.live_bank import PRIVATE_1, live_bank, live_bank_server  # noqa: F401
from tests.users.helpers import code_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

EMAIL = "journey@example.invalid"
PASSWORD = "fjord-journey-pass-2026"


@pytest.fixture
def portal(live_server, live_bank, settings):  # noqa: F811
    """The live portal wired to the live bank: the bank sends the PSU back to this server, and the portal's CSP
    lets the connect form lead to this bank (as BANK_BASE_URL does in a deployment)."""
    from core.bank import bank_client

    settings.PORTAL_BASE_URL = live_server.url
    policy = settings.CONTENT_SECURITY_POLICY
    directives = {**policy["DIRECTIVES"], "form-action": ["'self'", live_bank]}
    settings.CONTENT_SECURITY_POLICY = {**policy, "DIRECTIVES": directives}
    bank_client.cache_clear()
    yield live_server.url
    bank_client.cache_clear()


def _confirmation_code() -> str:
    (message,) = mail.outbox
    return code_in(message)


def test_sign_up_connect_and_see_balances_and_transactions(page, portal, artifacts_dir):
    failed, console, errors = [], [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "console", lambda m: console.append((m.location.get("url", ""), m.text)) if m.type == "error" else None
    )
    # Sign up through the page; the address is confirmed with the mailed code, typed in this browser.
    page.goto(f"{portal}/auth/sign-up/")
    page.get_by_label("E-mail address").fill(EMAIL)
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(re.compile(r"/auth/sign-up/confirm/"))
    page.locator("input[name=code]").fill(_confirmation_code())
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_selector(f"text=You have confirmed {EMAIL}.")
    page.wait_for_selector(f"text=Signed in as {EMAIL}")

    # Connect: private, accounts; at the bank identify as Private Customer 1 and share two of the three accounts.
    page.goto(f"{portal}/bank/connect/")
    page.get_by_label("Private: my own accounts").check()
    page.get_by_label("See my accounts and balances, and pay").check()
    page.get_by_role("button", name="Continue to the bank").click()
    page.wait_for_selector("input[name=identity]")
    page.fill("input[name=identity]", PRIVATE_1)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector("input[name=account], input[name=agreement]")
    if page.locator("input[name=agreement]").count():
        page.get_by_label(re.compile("PRIVATE")).check()
        page.get_by_role("button", name="Continue").click()
        page.wait_for_selector("input[name=account]")
    offered = page.locator("input[name=account]")
    assert offered.count() == 3  # 2 accounts + 1 card account (docs/bank-interface.md, reference 1)
    for index in range(offered.count()):
        label = offered.nth(index).locator("xpath=..").inner_text()
        if "Brukskonto" in label or "Høyrentekonto" in label:
            offered.nth(index).check()
        else:
            offered.nth(index).uncheck()
    page.screenshot(path=artifacts_dir / "ais-journey-bank-consent.png", full_page=True)
    page.get_by_role("button", name="Approve").click()

    # Back at the portal: the new connection's accounts.
    page.wait_for_url(re.compile(rf"^{re.escape(portal)}/bank/accounts/\?connection=\d+$"))
    assert page.get_by_text("Your bank is connected.").is_visible()
    rows = page.locator("tr.account-row")
    assert rows.count() == 2
    overview = page.locator("table.accounts-overview").text_content()
    assert "Brukskonto" in overview and "Høyrentekonto" in overview
    assert re.search(r"\d NOK", overview), overview  # balances were read when the bank sent us back
    assert re.search(r"\d of 4", overview), overview
    page.screenshot(path=artifacts_dir / "ais-journey-accounts.png", full_page=True)

    # The current account: read its transactions now (the PSU is present), then see them and the chart.
    page.get_by_role("link", name="Brukskonto").click()
    page.wait_for_selector("h1:has-text('Brukskonto')")
    page.get_by_role("button", name="Refresh now").click()
    page.wait_for_selector(".message-success")
    assert "Balances and transactions refreshed." in page.locator(".messages").inner_text()
    booked = page.locator("table.transactions-booked tr.transaction")
    assert booked.count() == 50  # a year of history: a full first page, and an Older link
    assert page.locator("a[rel=next]").is_visible()
    assert re.search(r"-?[\d,]+\.\d\d NOK", booked.first.inner_text())
    page.wait_for_selector("#balance-chart[data-chart-state=drawn] svg path.chart-line")
    assert page.locator("#balance-chart svg").get_attribute("role") == "img"
    assert page.locator("details.chart-table table tbody tr").count() == 90
    page.screenshot(path=artifacts_dir / "ais-journey-account.png", full_page=True)

    # Older transactions, a text filter, and one transaction's details.
    first_page = booked.first.get_attribute("data-transaction")
    page.locator("a[rel=next]").click()
    page.wait_for_selector("a[rel=prev]")
    assert (
        page.locator("table.transactions-booked tr.transaction").first.get_attribute("data-transaction")
        != first_page
    )
    page.get_by_label("Text").fill("REMA 1000")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"q=REMA"))
    matches = page.locator("table.transactions-booked tr.transaction")
    assert matches.count() > 0
    assert all("REMA 1000" in matches.nth(i).inner_text().upper() for i in range(matches.count()))
    matches.first.get_by_role("link").click()
    page.wait_for_selector("dl.transaction-facts")
    assert "Booked" in page.locator("dl.transaction-facts").inner_text()
    page.screenshot(path=artifacts_dir / "ais-journey-transaction.png", full_page=True)

    # The portal's pages: nothing failed, no CSP violation, no script error (the bank's pages are not ours).
    assert failed == [] and errors == []
    assert [text for url, text in console if url.startswith(portal)] == []
    print("console errors outside the portal:", [entry for entry in console if not entry[0].startswith(portal)])


CHARTS_PAGE = """<!DOCTYPE html><html lang="en"><body>
<script id="line-data" type="application/json">
{"labels": ["1 Mar", "2 Mar", "3 Mar", "4 Mar", "5 Mar"],
 "series": [{"name": "Computed", "values": ["100.50", "-20.25", null, "300", "310.75"]},
            {"name": "Reported", "values": [null, null, "250.00", null, null]}],
 "unit": "NOK"}
</script>
<div class="chart" id="line" data-chart-kind="line" data-chart-source="line-data" data-chart-title="Balance"></div>
<script id="bar-data" type="application/json">
{"labels": ["Mon", "Tue", "Wed"], "series": [{"name": "Payments", "values": [3, 0, -2]}], "unit": "payments"}
</script>
<div class="chart" id="bar" data-chart-kind="bar" data-chart-source="bar-data"></div>
<script id="empty-data" type="application/json">{"labels": [], "series": []}</script>
<div class="chart" id="empty" data-chart-kind="line" data-chart-source="empty-data"
     data-chart-empty="No data"></div>
<div class="chart" id="broken" data-chart-kind="line" data-chart-source="missing"></div>
</body></html>"""


def test_charts_js_draws_lines_with_gaps_bars_and_empty_states(page):
    from tests.browser.fixtures import ROOT

    page.set_content(CHARTS_PAGE)
    page.add_script_tag(path=str(ROOT / "static" / "js" / "charts.js"))

    assert page.get_attribute("#line", "data-chart-state") == "drawn"
    assert page.get_attribute("#line svg", "role") == "img"
    assert page.locator("#line svg title").first.text_content() == "Balance"
    computed = page.get_attribute("#line path.chart-series-0", "d")
    assert computed.count("M") == 2  # the null on 3 Mar splits the line
    assert page.locator("#line path.chart-series-1").count() == 0  # one value alone: a point, no line
    point_titles = page.locator("#line circle.chart-series-1 title").all_text_contents()
    assert point_titles == ["3 Mar: 250.00 NOK"]  # the value exactly as sent
    assert page.locator("#line circle.chart-series-0 title").all_text_contents()[1] == "2 Mar: -20.25 NOK"
    assert page.locator("#line .chart-legend li").all_text_contents() == ["Computed", "Reported"]
    assert page.locator("#line line.chart-zero").count() == 1  # values on both sides of zero

    bars = page.locator("#bar rect.chart-bar")
    assert bars.count() == 3
    heights = [float(bars.nth(i).get_attribute("height")) for i in range(3)]
    assert heights[0] > heights[2] > heights[1]  # 3 > |-2| > 0 (drawn at least 1 unit high)
    assert page.locator("#bar .chart-legend").count() == 0  # one series: no legend
    assert page.locator("#bar .chart-axis text").all_text_contents() == ["Mon", "Tue", "Wed"]  # every category

    assert page.get_attribute("#empty", "data-chart-state") == "empty"
    assert page.locator("#empty").text_content() == "No data"
    assert page.get_attribute("#broken", "data-chart-state") == "unreadable"
    assert page.locator("svg [style]").count() == 0  # CSP: no inline style anywhere
