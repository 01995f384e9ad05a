"""The staff pages on a phone (390 x 844), in both languages, against the running sandbox bank: the dashboard,
the sandbox area's customer list (with accounts and agreements: its widest table), a customer, the forms, the
clock. Nothing scrolls sideways: not the page, and not a box inside it (a table scrolling within its card hid
most of the customer list at this width). Screenshots: test-artifacts/screenshots/staff-layout-*-390.png."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from tests.live_bank import live_bank, live_bank_server  # noqa: F401 - the fixtures
from tests.signin import force_login_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

PHONE = {"width": 390, "height": 844}

#: The page's width, the screen's, and the visible elements of the content that scroll sideways inside
#: themselves (a box with overflow narrower than what it holds) or reach past the screen's right edge.
_SIDEWAYS = """() => {
  const width = window.innerWidth;
  const scrolling = [], outside = [];
  for (const element of document.querySelectorAll("main *")) {
    if (!element.checkVisibility() || element.closest(".visually-hidden, thead")) continue;
    const inner = element.querySelector("[id]");  // a table-wrap is named by its table
    const classes = [...element.classList].join(".");
    const name = `${element.tagName.toLowerCase()}.${classes}${inner ? " #" + inner.id : ""}`;
    const overflow = getComputedStyle(element).overflowX;
    if (overflow !== "visible" && element.scrollWidth > element.clientWidth + 1) scrolling.push(name);
    const box = element.getBoundingClientRect();
    if (box.width > 0 && box.right > width + 1) outside.push(`${name} [${Math.round(box.right)}]`);
  }
  return {scrollWidth: document.documentElement.scrollWidth, width, scrolling, outside};
}"""


def _pages(live_bank_client) -> dict[str, str]:
    customers = live_bank_client.sandbox.customers(with_accounts=True, with_agreements=True)
    corporate = next(c for c in customers if c.customer_type == "CORPORATE")
    assert corporate.accounts and corporate.agreements
    q = f"?customer={corporate.customer_id}"
    return {
        "dashboard": "/staff/dashboard/",
        "customers": "/staff/sandbox/?listed=1&with_accounts=on&with_agreements=on",
        "customer": f"/staff/sandbox/customer/{q}",
        "customer-create": "/staff/sandbox/customers/new/",
        "account-create": f"/staff/sandbox/customer/accounts/new/{q}",
        "agreement-create": f"/staff/sandbox/customer/agreements/new/{q}",
        "engagement-create": f"/staff/sandbox/customer/engagements/new/{q}",
        "transaction-create": f"/staff/sandbox/customer/transactions/new/{q}",
        "clock": "/staff/sandbox/clock/",
        "reset": "/staff/sandbox/reset/",
    }


@pytest.mark.parametrize("language", ["en", "nb"])
def test_no_staff_page_scrolls_sideways_on_a_phone(
    page,
    live_server,
    live_bank,  # noqa: F811
    charlie,
    artifacts_dir,
    language,
):
    from core.bank import bank_client
    from tests.staff.fixtures import bank_call

    charlie.user_permissions.add(Permission.objects.get(codename="view_bankcall"))  # the dashboard
    bank_call(path="/v1/accounts/{account_id}/transactions", status=200)  # its table of operations
    bank_call(path="/v1/accounts", status=429)
    pages = _pages(bank_client())
    force_login_page(page, live_server.url, charlie)
    page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page.set_viewport_size(PHONE)
    found = {}
    for name, path in pages.items():
        response = page.goto(live_server.url + path)
        assert response.status == 200, path
        page.wait_for_load_state("load")
        measured = page.evaluate(_SIDEWAYS)
        assert measured["width"] == PHONE["width"]
        if measured["scrollWidth"] > measured["width"] or measured["scrolling"] or measured["outside"]:
            found[name] = measured
        page.screenshot(path=artifacts_dir / f"staff-layout-{name}-{language}-390.png", full_page=True)
        table = page.locator("main table.stack-on-phone").first
        if table.count():  # the top of the first stacked table, at its real size
            table.scroll_into_view_if_needed()
            box = table.bounding_box()
            clip = {"x": 0, "y": box["y"], "width": PHONE["width"], "height": min(box["height"], 800)}
            page.screenshot(path=artifacts_dir / f"staff-layout-{name}-{language}-390-table.png", clip=clip)
    assert found == {}, found
    # The customer list is the stacked table, each cell under its column's name.
    page.goto(live_server.url + pages["customers"])
    assert page.locator("tr.sandbox-customer").count() >= 4
    assert page.locator("tr.sandbox-customer td.accounts").first.is_visible()
    assert page.problems == []
