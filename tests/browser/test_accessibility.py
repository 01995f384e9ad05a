"""Accessibility in a real browser: every form usable by keyboard alone (axe-core on every page, at both widths
and in both languages, is the page tour's: tests/browser/test_tour.py).

Pages are not listed by hand: they come from walking the URL resolver (tests/security/pages.py), as a visitor
and as a customer with a bank connection, account, transaction and payment (made by the factories). The keyboard
test tabs through every POST form of those pages and checks that each visible control receives the focus; the
sign-in and sign-up forms (and the sign-up's mailed code) are then filled and sent with Enter alone.
"""

from __future__ import annotations

import pytest
from django.test import Client

from devtools.livebank import free_port
from tests.security.pages import make_world, pages
from tests.signin import force_login_page
from tests.users.helpers import code_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def world(alice, bob, charlie, settings):
    from core.bank import bank_client

    settings.BANK_BASE_URL = f"http://127.0.0.1:{free_port()}"  # a bank that refuses: no page reaches out
    bank_client.cache_clear()
    yield make_world(alice, bob, charlie)
    bank_client.cache_clear()


def html_pages(world, who: str) -> list[str]:
    """The addresses that answer this user with a 200 HTML page (asked through Django's test client first:
    POST-only addresses answer 405 without a body, which chromium takes for a network error)."""
    walked = pages(world)
    if who == "superuser":
        chosen = [p for p in walked if p.route.is_admin or p.url.startswith("/staff/")]
    else:
        chosen = [p for p in walked if not p.route.is_admin and p.url != "/healthz"]
    client = Client()
    if who != "anonymous":
        client.force_login(getattr(world, who))
    found = []
    for candidate in chosen:
        response = client.get(candidate.url)
        if response.status_code == 200 and response.get("Content-Type", "").startswith("text/html"):
            found.append(candidate.url)
    return found


def visit(page, url: str):
    """The response of the HTML page at ``url`` (one that html_pages found answering 200)."""
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    return response


# Every visible, enabled control of a POST form, marked with its index; a radio group is one stop of the Tab
# key (the arrow keys move inside it), so all radios of a name share the mark of the first.
FOCUSABLE_CONTROLS = """
() => {
  const controls = [...document.querySelectorAll(
    'form[method=post] input, form[method=post] select, form[method=post] textarea, form[method=post] button'
  )].filter(e => e.type !== 'hidden' && !e.disabled && e.offsetParent !== null);
  const names = [];
  const groups = {};
  controls.forEach(e => {
    const group = e.type === 'radio' ? e.form && e.name && (e.form.id + '|' + e.name) : null;
    if (group && group in groups) {
      e.setAttribute('data-keyboard-check', String(groups[group]));
      return;
    }
    if (group) groups[group] = names.length;
    e.setAttribute('data-keyboard-check', String(names.length));
    names.push(e.name || e.id || e.textContent.trim() || e.type);
  });
  return names;
}
"""


def tab_reaches(page, count: int) -> set[int]:
    """The data-keyboard-check ids that receive the focus while pressing Tab through the whole page."""
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    reached: set[int] = set()
    total = page.evaluate("() => document.querySelectorAll('a[href], button, input, select, textarea').length")
    for _ in range(total + 5):
        page.keyboard.press("Tab")
        mark = page.evaluate("() => document.activeElement && document.activeElement.dataset.keyboardCheck")
        if mark is not None:
            reached.add(int(mark))
        if len(reached) == count:
            break
    return reached


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_every_form_control_is_reachable_with_tab(page, live_server, world, who):
    if who != "anonymous":
        force_login_page(page, live_server.url, getattr(world, who))
    unreachable = {}
    forms = 0
    for url in html_pages(world, who):
        visit(page, live_server.url + url)
        names = page.evaluate(FOCUSABLE_CONTROLS)
        if not names:
            continue
        forms += 1
        reached = tab_reaches(page, len(names))
        missing = [name for i, name in enumerate(names) if i not in reached]
        if missing:
            unreachable[url] = missing
    assert unreachable == {}
    assert forms >= (3 if who == "anonymous" else 4), f"only {forms} pages with forms were found"


def test_sign_in_by_keyboard_alone(page, live_server, alice, password):
    page.goto(f"{live_server.url}/auth/sign-in/")
    page.get_by_label("E-mail address or username").focus()
    page.keyboard.type(alice.email)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_selector(f"text=Signed in as {alice.email}")
    assert page.problems == []


def test_sign_up_by_keyboard_alone(page, live_server, mailoutbox):
    page.goto(f"{live_server.url}/auth/sign-up/")
    page.locator("form[method=post] input:not([type=hidden])").first.focus()
    fields = page.evaluate(
        "() => [...document.querySelectorAll('form[method=post] input:not([type=hidden])')].map(e => e.type)"
    )
    values = {"email": "keyboard@example.com", "password": "a-long-keyboard-password-9"}
    for index, kind in enumerate(fields):
        if kind == "checkbox":
            page.keyboard.press("Space")
        else:
            page.keyboard.type(values["email" if kind == "email" else "password"])
        if index < len(fields) - 1:
            page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/auth/sign-up/confirm/")
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["keyboard@example.com"]
    # The mailed code, typed in the same page by keyboard alone.
    for _ in range(80):
        if page.evaluate("() => document.activeElement.name === 'code'"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("the code field never received the focus with Tab")
    page.keyboard.type(code_in(mailoutbox[0]))
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Signed in as keyboard@example.com")
    assert page.problems == []
