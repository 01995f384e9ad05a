"""The page tour (tests/browser/tour.py): every page of the portal a visitor, a customer and staff see, at 390 px
(a phone) and 1280 px (a desktop), in English and in bokmål, each language and width one browser context that
visits every page once. On every page:

* axe-core (tests/browser/axe.py): no violation of any impact;
* in bokmål, no English word outside codes and names (tests/browser/words.py);
* the page fits its width (no sideways scrolling of the whole page), and no console error, script error or
  Content-Security-Policy violation;
* a screenshot, the set the docs and reviews look at: ``test-artifacts/screenshots/screens-NAME-LANG-WIDTH.png``.

The failures of all pages are reported together. The tour also fails when a URL pattern of the portal is neither
visited nor excluded with a reason (tour.EXCLUDED), so that a page added later cannot be forgotten.
"""

from __future__ import annotations

import fnmatch
import time
from collections import defaultdict
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from tests.browser import tour
from tests.browser.axe import axe_all, describe
from tests.browser.words import VISIBLE_TEXT, english_words
from tests.live_bank import live_bank, live_bank_server  # noqa: F401

pytestmark = pytest.mark.browser
#: The tour's own marks: the running sandbox bank, the live server's database, and time for a loaded machine.
TOUR = [
    pytest.mark.live_bank,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(600),
]

WIDTHS = {390: 844, 1280: 800}  # width: height
BROWSER_LOCALES = {"en": "en-GB", "nb": "nb-NO"}

# Collected before any page script runs: every CSP violation, with its directive and what was blocked.
COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile || ''}:${e.lineNumber || ''})`
));
"""

# The elements whose right edge lies beyond the viewport (the innermost few), to name what makes a page scroll.
OVERFLOWING = """
width => {
  const out = [];
  for (const e of document.body.querySelectorAll('*')) {
    const box = e.getBoundingClientRect();
    const inner = [...e.children].some(c => c.getBoundingClientRect().right > width + 1);
    if (box.right > width + 1 && box.width > 0 && !inner) {
      const name = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
        (e.classList.length ? '.' + [...e.classList].join('.') : '');
      out.push(`${name} (right edge ${Math.round(box.right)} px)`);
      if (out.length >= 4) break;
    }
  }
  return out;
}
"""

# Boxes of the page that scroll sideways themselves (a wide table in its wrapper): the page fits, but what is
# beyond the box's edge is hidden until the reader scrolls that box. A list box (<select multiple>, the admin's
# permissions) is not one: it is a control that scrolls by itself, with the keyboard too.
SCROLLING_BOXES = """
() => [...document.body.querySelectorAll(':not(select)')].filter(e => {
  const style = getComputedStyle(e);
  return ['auto', 'scroll'].includes(style.overflowX) && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0;
}).map(e => `${e.tagName.toLowerCase()}${e.className ? '.' + [...e.classList].join('.') : ''}` +
  ` (${e.scrollWidth} px of content in ${e.clientWidth} px)`)
"""


@dataclass(frozen=True)
class Known:
    """A problem seen today, listed rather than hidden: ``stops`` is a pattern of stop names. The tour fails if
    it is seen elsewhere, and (``strict``) if it is no longer seen, so that the entry is removed."""

    stops: str
    width: int | None  # None: at both widths
    problem: str  # the start of the problem's text
    why: str
    strict: bool = True


KNOWN = [
    # Wide data tables that scroll inside their box on a phone, and Django's changelists also at 1280 px beside
    # the navigation sidebar: readable (the box can be scrolled by keyboard too), but to be made to fit.
    Known("admin-*-list", None, "a box scrolls sideways: div.results", "the admin's changelist tables", False),
    Known("admin-*-change", 390, "a box scrolls sideways: div.js-inline-admin-formset", "inlines", False),
    Known("admin-*-change", 390, "a box scrolls sideways: div.tabular", "inlines", False),
]


def _known(name: str, width: int, problem: str) -> Known | None:
    for known in KNOWN:
        if (
            fnmatch.fnmatch(name, known.stops)
            and known.width in (None, width)
            and problem.startswith(known.problem)
        ):
            return known
    return None


def test_the_english_word_check_finds_english_and_passes_bokmal():
    found = english_words("Automatic refresh - Next: not planned yet - Left today 4 of 4 (the bank's rule)")
    assert found == sorted(
        ["Automatic", "refresh", "Next", "not", "planned", "yet", "Left", "today", "of", "the", "bank's", "rule"]
    )
    assert english_words("Automatiske oppdateringer · Neste oppdatering: ingen planlagt ennå · 4 av 4") == []
    assert english_words("Fjordpay · English · Brukskonto NO9386011100001 NOK") == []
    assert english_words("X-Request-ID · GET /v1/accounts · New Zealand") == []
    assert english_words("5add3f0e-1fee-4c2b-9a1d-0b7cafe01234 · 200") == []
    assert english_words("add 2 fee") == ["add", "fee"]


def _placeholder_data() -> tour.Data:
    """Data for the coverage check without a database: every id 1, every sandbox customer "x"."""
    ids = defaultdict(lambda: 1)
    return tour.Data(
        customer=None,
        signer=None,
        staff=None,
        connection=SimpleNamespace(pk=1),
        corporate=SimpleNamespace(pk=2),
        account_pk=1,
        transaction_pk=1,
        drafts=[1, 2, 3],
        payments=ids,
        admin_objects=ids,
        sandbox=defaultdict(lambda: "x"),
    )


def test_the_tour_misses_no_url_pattern():
    """Every URL pattern is visited by a stop or excluded with a reason; an exclusion names a pattern that is."""
    data = _placeholder_data()
    visited = {tour.route_of(stop.path(data)) for stop in tour.stops()}
    assert tour.unvisited_routes(visited) == []
    assert tour.stale_exclusions() == []
    # The check can fail: a pattern nobody visits is named.
    assert tour.unvisited_routes(visited - {"payment-detail"}) == ["payments/<int:pk>/ (payment-detail)"]


class Clock:
    """Seconds spent per phase of the visits, printed at the end (``pytest -s``) to see where the time goes."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.started = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.spent[phase] = self.spent.get(phase, 0.0) + now - self.started
        self.started = now


def _visit(page, base: str, stop: tour.Stop, data: tour.Data, width: int, language: str, clock: Clock):
    """Open the stop's page and check it; the problems found there (empty when it is fine)."""
    page.tour_problems.clear()
    clock.lap("other")
    response = page.goto(base + stop.path(data))
    problems = []
    if response is None or response.status != stop.status:
        problems.append(f"answered {response and response.status}, expected {stop.status}")
    elif stop.status == 200 and page.url.split("?")[0] != (base + stop.path(data)).split("?")[0]:
        problems.append(f"redirected to {page.url}")
    if stop.then:
        stop.then(page, data)
    page.wait_for_load_state("load")
    clock.lap("load")
    if page.evaluate("document.documentElement.lang") != language:
        problems.append(f"the page is not in {language}")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    if scroll > width:
        problems.append(f"scrolls sideways: {scroll} px wide; {', '.join(page.evaluate(OVERFLOWING, width))}")
    problems += [f"a box scrolls sideways: {box}" for box in page.evaluate(SCROLLING_BOXES)]
    problems += page.evaluate("window.__cspViolations")
    # Read before axe runs: axe inserts a <style>@import</style> of its own to read the admin's imported
    # stylesheet, which the CSP rightly refuses; that refusal is axe's, not the page's.
    problems += page.tour_problems
    clock.lap("fit")
    problems += [f"axe: {line}" for line in describe(axe_all(page))]
    clock.lap("axe")
    if language == "nb":
        words = english_words(page.evaluate(VISIBLE_TEXT))
        if words:
            problems.append(f"English: {words}")
        clock.lap("words")
    return problems


def _new_page(browser, language: str, width: int):
    """A context of its own for this language and width; its page collects console and script errors."""
    context = browser.new_context(
        locale=BROWSER_LOCALES[language], viewport={"width": width, "height": WIDTHS[width]}
    )
    context.add_init_script(COLLECT_VIOLATIONS)
    page = context.new_page()
    page.tour_problems = []

    def console(message) -> None:
        if message.type == "error" and not _expected_not_found(message, page):
            page.tour_problems.append(f"console: {message.text}")

    page.on("console", console)
    page.on("pageerror", lambda error: page.tour_problems.append(f"script error: {error}"))
    return page


def _expected_not_found(message, page) -> bool:
    """Chromium reports the 404 page's own status as a console error: that one is what the page is for."""
    return "status of 404" in message.text and (message.location or {}).get("url", "") == page.url


def _tour(browser, base: str, data: tour.Data, language: str, width: int, artifacts_dir) -> None:
    """One language at one width: one context that visits every stop once; fails listing every problem."""
    users = {"customer": data.customer, "signer": data.signer, "staff": data.staff}
    stops = tour.stops()
    found: dict[str, list[str]] = {}
    seen: set[Known] = set()
    visits = 0
    clock = Clock()
    # Sessions of their own per context: allauth's second-factor pages ask for a password typed within the
    # last minutes.
    sessions = {who: tour.session_of(user) for who, user in users.items()}
    page = _new_page(browser, language, width)
    who = None
    for stop in stops:
        if stop.who != who:
            page.context.clear_cookies()
            page.context.add_cookies(tour.cookies(base, language, sessions.get(stop.who)))
            who = stop.who
        problems = _visit(page, base, stop, data, width, language, clock)
        if stop.shot or problems:
            page.screenshot(path=artifacts_dir / f"screens-{stop.name}-{language}-{width}.png", full_page=True)
        clock.lap("screenshot")
        visits += 1
        for problem in problems:
            known = _known(stop.name, width, problem)
            if known:
                seen.add((known, language))
            else:
                found.setdefault(f"{stop.name}-{language}-{width}", []).append(problem)
    page.context.close()
    print(
        f"\n{language} at {width} px: {visits} visits of {len(stops)} pages, seconds:",
        {k: round(v) for k, v in clock.spent.items()},
    )
    assert visits == len(stops)
    assert found == {}, f"{len(found)} of {visits} visits failed:\n" + "\n".join(
        f"{name}: {problems}" for name, problems in found.items()
    )
    gone = [
        known for known in KNOWN if known.strict and known.width in (None, width) and (known, language) not in seen
    ]
    assert gone == [], f"no longer seen, remove from KNOWN: {gone}"


@pytest.fixture
def tour_data(live_server, live_bank, settings, alice, bob):  # noqa: F811
    settings.PORTAL_BASE_URL = live_server.url
    settings.BANK_IS_SANDBOX = True  # the sandbox area talks to this bank
    return tour.build(alice, bob)


# One class per language and width: pytest-xdist's --dist loadscope (make test) gives each class to a worker of
# its own, so the four tours run side by side.
class TestTourInEnglishOnAPhone:
    pytestmark = TOUR

    def test_every_page(self, browser, live_server, tour_data, artifacts_dir):
        _tour(browser, live_server.url, tour_data, "en", 390, artifacts_dir)


class TestTourInEnglishOnADesktop:
    pytestmark = TOUR

    def test_every_page(self, browser, live_server, tour_data, artifacts_dir):
        _tour(browser, live_server.url, tour_data, "en", 1280, artifacts_dir)


class TestTourInBokmalOnAPhone:
    pytestmark = TOUR

    def test_every_page(self, browser, live_server, tour_data, artifacts_dir):
        _tour(browser, live_server.url, tour_data, "nb", 390, artifacts_dir)


class TestTourInBokmalOnADesktop:
    pytestmark = TOUR

    def test_every_page(self, browser, live_server, tour_data, artifacts_dir):
        _tour(browser, live_server.url, tour_data, "nb", 1280, artifacts_dir)
