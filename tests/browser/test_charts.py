"""The account page's balance chart in a real browser, at 390 px and 1280 px, in both languages: drawn by the
portal's own script (static/js/charts.js) as one named image (role=img with its title), with the figures in a
table beside it, no axe violation of any impact in the chart's section, axis labels that do not touch, nothing
wider than the screen, and no CSP violation. With tests/tpp_portal/test_chart_library_choice.py, the evidence
for keeping the SVG over a library (docs/charts.md)."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import BalanceSnapshot
from tests.accounts.test_account_pages import booked_rows
from tests.bank_factories import BankAccountFactory, BankConnectionFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'}`));
"""

# The boxes of the chart's axis labels, in drawing order, in page pixels.
AXIS_LABELS = """
() => [...document.querySelectorAll('#balance-chart .chart-axis text')].map(t => {
  const box = t.getBoundingClientRect();
  return {text: t.textContent, left: box.left, right: box.right};
})
"""


@pytest.fixture
def account_page(alice, live_server):
    """alice's account with a balance read today and 90 days of booked transactions: a full chart."""
    account = BankAccountFactory(connection=BankConnectionFactory(user=alice), name="Brukskonto")
    now = timezone.now()
    BalanceSnapshot.objects.create(
        account=account, balance_type="closingBooked", amount=Decimal("65758.21"), currency="NOK", fetched_at=now
    )
    booked_rows(account, 180, per_day=2)
    account.transactions_refreshed_at = now - timedelta(minutes=5)
    account.save()
    client = Client()
    client.force_login(alice)
    return f"{live_server.url}/bank/accounts/{account.pk}/", client.cookies["sessionid"].value


@pytest.mark.parametrize("language", ["en", "nb"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_balance_chart_is_a_named_image_with_a_table_and_fits(
    browser, account_page, width, language, artifacts_dir
):
    from axe_playwright_python.sync_playwright import Axe

    url, session = account_page
    context = browser.new_context(viewport={"width": width, "height": 844})
    context.add_cookies(
        [
            {"name": "sessionid", "value": session, "url": url},
            {"name": "django_language", "value": language, "url": url},
        ]
    )
    context.add_init_script(COLLECT_VIOLATIONS)
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("#balance-chart[data-chart-state=drawn] svg path.chart-line")

    # One image to assistive technology, named by its title, in the page's language.
    svg = page.locator("#balance-chart svg")
    assert svg.get_attribute("role") == "img"
    title = {"en": "Balance over time", "nb": "Saldo over tid"}[language]
    assert page.get_by_role("img", name=title).count() == 1
    # The same figures as a table: one row per day of the chart.
    data = json.loads(page.locator("#balance-chart-data").text_content())
    assert len(data["labels"]) == 90
    assert page.locator("details.chart-table table tbody tr").count() == len(data["labels"])
    page.locator("details.chart-table summary").click()  # opened, so that axe checks the table too

    # It fits: the chart within its card, the page within the screen, the axis labels apart and inside.
    chart = page.locator("#balance-chart").bounding_box()
    drawn = svg.bounding_box()
    assert drawn["x"] >= chart["x"] - 1 and drawn["x"] + drawn["width"] <= chart["x"] + chart["width"] + 1
    section = page.locator("section[aria-labelledby=chart-title]").bounding_box()
    assert section["x"] >= 0 and section["x"] + section["width"] <= width
    labels = page.evaluate(AXIS_LABELS)
    assert len(labels) >= 2, labels
    assert labels[0]["text"] == data["labels"][0] and labels[-1]["text"] == data["labels"][-1]
    for before, after in itertools.pairwise(labels):
        assert after["left"] >= before["right"] + 2, f"axis labels touch at {width} px: {before} {after}"
    assert all(label["right"] <= width and label["left"] >= 0 for label in labels), labels

    # axe on the chart's section: no violation of any impact (not only the serious ones of the page walk).
    results = Axe().run(page, context="section[aria-labelledby=chart-title]").response
    assert [(v["id"], v["impact"]) for v in results["violations"]] == []
    assert results["testEngine"]["name"] == "axe-core"
    assert page.evaluate("window.__cspViolations") == [] and errors == []
    page.locator("section[aria-labelledby=chart-title]").screenshot(
        path=artifacts_dir / f"chart-account-{language}-{width}.png"
    )
    context.close()


TICKS_PAGE = """<!DOCTYPE html><html lang="en"><body>
<script id="counts-data" type="application/json">
{"labels": ["a", "b", "c", "d"], "series": [{"name": "Calls", "values": [13, 9, 6, 1]}]}
</script>
<div class="chart" id="counts" data-chart-kind="bar" data-chart-source="counts-data"></div>
<script id="amounts-data" type="application/json">
{"labels": ["1 Mar", "2 Mar", "3 Mar"], "series": [{"name": "Balance", "values": ["0.50", "12.50", "7.25"]}]}
</script>
<div class="chart" id="amounts" data-chart-kind="line" data-chart-source="amounts-data"></div>
</body></html>"""


def test_axis_ticks_are_shown_exactly_and_counts_get_whole_ticks(page):
    """A tick label never rounds its tick (a 2.5 step once read 0, 3, 5, 8, 10, 13): the labels read as numbers
    step evenly; counts get whole steps."""
    from tests.browser.fixtures import ROOT

    page.set_content(TICKS_PAGE)
    page.add_script_tag(path=str(ROOT / "static" / "js" / "charts.js"))

    for chart in ("counts", "amounts"):
        ticks = [float(t.replace(",", "")) for t in page.locator(f"#{chart} .chart-grid text").all_text_contents()]
        steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
        assert len(ticks) >= 3 and len(steps) == 1, (chart, ticks)
    counts = page.locator("#counts .chart-grid text").all_text_contents()
    assert all(t.isdigit() for t in counts) and counts[0] == "0", counts
    amounts = page.locator("#amounts .chart-grid text").all_text_contents()
    assert "2.5" in amounts, amounts
