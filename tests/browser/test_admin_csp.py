"""The Content-Security-Policy in a real browser: no page of the admin or of the portal makes chromium report a
violation, and no script of theirs fails.

tests/security checks the headers and the served markup; this test catches what only a browser sees: scripts
setting inline styles or adding <style> elements, widgets built at run time (the admin's calendar and clock,
the permission selector, the navigation sidebar). Every ``securitypolicyviolation`` event is collected by a
script added before any page script runs, with the violated directive and what was blocked, so that a failure
names them.

Found with it (November 2026): the stock admin of Django 5.2 keeps to the portal's policy (style-src 'self',
no inline style attribute or element, no inline script) on load and when its widgets are used, so the admin
gets no relaxation. The violations seen in the accessibility test's admin walk ("style-src-elem blocked inline"
on change forms) come from axe-core itself: to read admin/css/forms.css's ``@import url('widgets.css')`` it
inserts a ``<style>@import ...</style>`` element, which the policy rightly blocks. No axe runs here.

Pages come from walking the URL resolver (tests/security/pages.py) with objects made by the factories, as the
admin's superuser (every admin page: index, app lists, changelists, change and add forms, the bank-call audit
log, deletion confirmations, the staff pages) and as a customer and a visitor (the portal's pages).
"""

from __future__ import annotations

import pytest

from tests.browser.test_accessibility import html_pages, visit
from tests.browser.test_accessibility import world as world  # the fixture, shared
from tests.signin import force_login_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile || ''}:${e.lineNumber || ''})`
));
"""


# Widgets the admin builds or changes with JavaScript, used once each: calendar and clock pop-ups (and their
# "Today"/"Now" links), the permission selector's "Choose all", the navigation sidebar's toggle.
WIDGETS = (".datetimeshortcuts a", ".selector-chooseall", "#toggle-nav-sidebar")


def use_widgets(page) -> int:
    used = 0
    for selector in WIDGETS:
        for element in page.query_selector_all(selector):
            if element.is_visible():
                element.click()
                page.keyboard.press("Escape")  # closes an open calendar or clock
                used += 1
    return used


def walk(page, live_server, world, who: str) -> tuple[dict[str, list[str]], list[str], int]:
    """The CSP violations and uncaught script errors per page (only pages that have some), the pages walked,
    and how many widgets were used."""
    page.add_init_script(COLLECT_VIOLATIONS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"script error: {error}"))
    if who != "anonymous":
        force_login_page(page, live_server.url, getattr(world, who))
    urls = html_pages(world, who)
    found = {}
    used = 0
    for url in urls:
        errors.clear()
        visit(page, live_server.url + url)
        page.wait_for_load_state("load")  # the admin builds its widgets on load
        used += use_widgets(page)
        problems = [*page.evaluate("window.__cspViolations"), *errors]
        if problems:
            found[url] = problems
    return found, urls, used


def test_no_admin_page_violates_the_csp(page, live_server, world):
    found, urls, used = walk(page, live_server, world, "superuser")
    assert found == {}
    # The walk reached the admin's page types: changelists, change and add forms, the bank-call audit log, the
    # staff pages; and it used the widgets (calendar and clock of the exchange rate's and users' dates ...).
    assert any(url.endswith("/change/") for url in urls), urls
    assert any(url.endswith("/add/") for url in urls), urls
    assert {"/admin/", "/admin/tpp_portal/bankcall/", "/staff/dashboard/"} <= set(urls), urls
    assert len(urls) >= 20, urls
    assert used >= 10, f"only {used} admin widgets were used"


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_no_portal_page_violates_the_csp(page, live_server, world, who):
    found, urls, _used = walk(page, live_server, world, who)
    assert found == {}
    assert len(urls) >= {"anonymous": 5, "owner": 10}[who], urls


def test_a_violation_is_seen(page, live_server, world):
    """The collector works: an inline style set from a page script is reported with its directive."""
    page.add_init_script(COLLECT_VIOLATIONS)
    visit(page, live_server.url + "/")
    page.evaluate("document.body.setAttribute('style', 'color: red')")
    page.wait_for_function("window.__cspViolations.length > 0")
    assert page.evaluate("window.__cspViolations")[0].startswith("style-src-attr blocked inline")
