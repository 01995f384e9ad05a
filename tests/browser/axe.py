"""axe-core in a real browser: the copy bundled in the axe-playwright-python package (MPL-2.0), injected from the
test, so nothing is fetched from outside and the portal's CSP stays as it is. Shared by the accessibility tests
(the page tour, tests/browser/test_tour.py) and the end-to-end suite (tests/e2e)."""

from __future__ import annotations

BLOCKING = {"serious", "critical"}


def axe_violations(page) -> list[dict]:
    """The serious and critical axe violations of the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [v for v in results.response["violations"] if v.get("impact") in BLOCKING]


def describe(violations: list[dict]) -> list[str]:
    """One readable line per violation: rule, impact, help and the first offending elements."""
    return [
        f"{v['id']} ({v['impact']}): {v['help']} - {[n['target'] for n in v['nodes'][:3]]}" for v in violations
    ]


def axe_all(page) -> list[dict]:
    """Every axe violation of the page as it is now, of any impact."""
    from axe_playwright_python.sync_playwright import Axe

    return Axe().run(page).response["violations"]
