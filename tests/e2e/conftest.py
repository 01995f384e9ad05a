"""The end-to-end browser suite: Debian's chromium (Playwright) walks the user journeys against the running
product, started once for the suite as separate processes by tests/product.py: the sandbox bank, the fault proxy
in front of it, the portal under gunicorn, a Celery worker and a Celery beat. Nothing runs in-process.

The portal's processes use ``tests.e2e.settings`` (the product's settings with faster beat clocks and the bank's
SCA screens as a form target); its database is a SQLite file, or with ``DATABASE_URL`` a PostgreSQL database
made for the session; its broker and cache are ``REDIS_URL`` when set, else the filesystem broker. Its mail goes
to files (``filemail``) in ``<product directory>/mail``, read by :func:`mail_link` (the sign-up's confirmation code
among them).

Staff sign in with a second factor, as the product asks: an authenticator app (TOTP) whose codes the tests compute
from its secret with allauth.mfa's own TOTP functions, the same the portal checks them with.

Every test here is marked ``browser``, ``live_bank`` and ``product``. Screenshots go to
``test-artifacts/screenshots/e2e/`` (``TEST_ARTIFACTS_DIR`` overrides the root), kept as CI artefacts.

Fixtures: ``product`` (package, a :class:`tests.product.Product`), ``browser`` (session) and ``page`` (per test,
``page.problems`` collects console errors and page errors), the last two from tests/browser/fixtures.py.

Helpers (stable signatures; keyword-only after the first arguments):

* ``create_user(product, *, email, password, staff=False, superuser=False, groups=(), totp_secret=None) -> int``:
  a portal user made in the portal's database (username = e-mail, as sign-up makes them; its address confirmed, as
  for any account staff make); ``groups``: staff group names ("operators", "support"); ``totp_secret``: an
  authenticator app enrolled with this secret (allauth.mfa's ``TOTP.activate``) and recovery codes, as enrolling
  through the pages leaves them (staff without one are sent to enrol at their first sign-in).
* ``new_totp_secret() -> str``, ``totp_code(secret) -> str``: from tests/second_factor.py (a fresh authenticator
  secret; the app's code of now, never the same code twice for one secret: the portal takes each code once).
* ``enrol_totp(page, product, *, email, password, on_screen=None) -> str``: a signed-in staff user without a
  second factor sets up an authenticator app through the portal's pages: the portal says one is needed
  (``/auth/2fa/invitation/``), a superuser's invitation is mailed (``manage.py staff_invite``), its link is opened
  and used, the app's page shows the secret, the code is typed, the recovery codes are shown. Returns the secret.
  ``on_screen(page, step)``: called on each page ("needed", "invitation", "index", "password-again", "activate",
  "recovery-codes").
* ``sign_up(page, product, *, email, password, on_screen=None) -> None``: the sign-up page, then the code of the
  mail typed on the page that asks for it; the browser is then signed in. ``on_screen(page, step)``: called on
  each page ("form", "code", "welcome").
* ``sign_up_or_create_user(product, *, email, password, page=None, **create_user options) -> None``: through
  the pages when ``page`` is given, else ``create_user``.
* ``sign_in(page, product, username, password, *, keyboard=False, totp_secret=None) -> None``: the sign-in
  page (by keyboard alone with ``keyboard``) and, when the portal asks for the second factor, the code of the
  authenticator app with ``totp_secret``; returns once the portal has signed the browser in.
* ``connect_bank(page, product, *, identity, context="private", agreement=None, accounts=None,
  access="accounts", keyboard=False, on_screen=None) -> None``: the portal's connect form (by keyboard alone with
  ``keyboard``), then :func:`authorise_at_bank`; returns on the portal's page the bank sent the browser back to.
* ``authorise_at_bank(page, product, *, identity, context="private", agreement=None, accounts=None,
  keyboard=False, on_screen=None) -> None``: the bank's consent SCA screens (identity number,
  context/agreement, accounts, Approve) from wherever the browser is on them; ``agreement``: a part of the
  agreement's label at the bank (else the first of ``context``); ``accounts``: parts of the account labels to
  share (None: every one offered); ``on_screen(page, step)``: called on each screen before it is filled in.
* ``shot(page, name) -> Path``: a full-page screenshot ``<name>.png`` in the artefacts directory.
* ``axe_check(page) -> None``: axe-core on the page as it is; fails on any serious or critical violation.
* ``mail_link(product, *, to, pattern, timeout=30) -> str``: the first match of the regex ``pattern`` in a mail
  the portal sent to ``to`` (waits for it).
* ``watch(page, product) -> list[str]``: from now on, the portal's failed responses, console errors (CSP
  included) and script errors on this page (the bank's pages are not the portal's); assert it stays empty.
* ``tab_to(page, selector, *, limit=80) -> None``: press Tab until the focused element matches ``selector``.
* ``wait_until(predicate, *, timeout, interval=0.25, message="")``: from tests/product.py.
"""

from __future__ import annotations

import email
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.axe import axe_violations, describe
from tests.browser.fixtures import ROOT
from tests.browser.problems import portal_problems
from tests.product import Product, wait_until, whole_product
from tests.second_factor import new_totp_secret, totp_code
from tests.signin import CODE_FIELD, LOGIN_FIELD, PASSWORD_FIELD, SIGN_IN_PATH

ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS_DIR", ROOT / "test-artifacts")) / "screenshots" / "e2e"
E2E_DIR = Path(__file__).resolve().parent
MARKS = ("browser", "live_bank", "product")

__all__ = [
    "authorise_at_bank",
    "axe_check",
    "connect_bank",
    "create_user",
    "enrol_totp",
    "mail_link",
    "new_totp_secret",
    "shot",
    "sign_in",
    "sign_up",
    "sign_up_or_create_user",
    "tab_to",
    "totp_code",
    "wait_until",
    "watch",
]


def pytest_configure(config):
    # Also registered by tests/faults/conftest.py; this suite can run without that directory being collected.
    config.addinivalue_line(
        "markers",
        "product: starts the whole product (bank, fault proxy, portal, worker, beat) as processes; slow",
    )


def pytest_collection_modifyitems(items):
    for item in items:
        if E2E_DIR in Path(item.path).parents:
            for name in MARKS:
                item.add_marker(getattr(pytest.mark, name))


@pytest.fixture(scope="package")
def product(tmp_path_factory) -> Iterator[Product]:
    """The whole product as processes, once for this suite (the tests/e2e package). Stopped after the suite's
    last test, not at the end of the session: its worker shares the broker (``REDIS_URL``) with the tests that
    follow and must not consume their tasks."""
    directory = tmp_path_factory.mktemp("e2e-product")
    (directory / "mail").mkdir()
    extra_env = {
        "DJANGO_SETTINGS_MODULE": "tests.e2e.settings",
        "EMAIL_URL": f"filemail:///{directory / 'mail'}",
    }
    with whole_product(
        directory, redis="env", bank_timeout=20.0, worker_concurrency=2, extra_env=extra_env
    ) as running:
        yield running
        # The suite is over and no task matters any more: SIGKILL spares the prefork worker's warm shutdown,
        # which waits out the whole stop timeout when its process group gets SIGTERM.
        running.worker_kill()


@pytest.fixture(autouse=True)
def _identities_released(product) -> None:
    """Each journey is another person, but the journeys share the sandbox bank's few customers: the bank
    identities the earlier journeys bound are released first (``Product.identities_release``)."""
    product.identities_release()


# --- artefacts and checks ----------------------------------------------------------------------------------------


def shot(page, name: str) -> Path:
    """A full-page screenshot ``<name>.png`` in the artefacts directory."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=path, full_page=True)
    return path


def axe_check(page) -> None:
    """No serious or critical axe-core violation on the page as it is now."""
    violations = axe_violations(page)
    assert violations == [], f"{page.url}: {describe(violations)}"


def watch(page, product: Product) -> list[str]:
    """From now on, collect the portal's failures on this page: responses of 400 or more from the portal, and
    what ``portal_problems`` collects (console errors of its pages, CSP violations included, and script errors).
    Returns the list, filled as the page goes on."""
    found = portal_problems(page, product.portal_url)

    def on_response(response) -> None:
        if response.status >= 400 and response.url.startswith(product.portal_url):
            found.append(f"{response.status} {response.url}")

    page.on("response", on_response)
    return found


def tab_to(page, selector: str, *, limit: int = 80) -> None:
    """Press Tab until the focused element matches ``selector`` (fails after ``limit`` presses)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} never received the focus with Tab on {page.url}")


# --- mail --------------------------------------------------------------------------------------------------------


def _mails(product: Product) -> list[email.message.Message]:
    """Every message the portal wrote with the file backend (one file per connection, messages split by a line
    of 79 dashes)."""
    found = []
    for path in sorted((product.directory / "mail").glob("*.log")):
        for chunk in path.read_bytes().split(b"\n" + b"-" * 79 + b"\n"):
            if chunk.strip():
                found.append(email.message_from_bytes(chunk.lstrip()))
    return found


def _body(message: email.message.Message) -> str:
    part = next((p for p in message.walk() if p.get_content_type() == "text/plain"), message)
    return part.get_payload(decode=True).decode(part.get_content_charset() or "utf-8")


def mail_link(product: Product, *, to: str, pattern: str, timeout: float = 30) -> str:
    """The first match of ``pattern`` in a mail the portal sent to ``to`` (waits for the mail)."""

    def find() -> str | None:
        for message in _mails(product):
            if to in message.get("To", ""):
                match = re.search(pattern, _body(message))
                if match:
                    return match.group(1) if match.groups() else match.group(0)
        return None

    return wait_until(find, timeout=timeout, message=f"a mail to {to} matching {pattern}")


# --- users -------------------------------------------------------------------------------------------------------


def create_user(
    product: Product,
    *,
    email: str,
    password: str,
    staff: bool = False,
    superuser: bool = False,
    groups: tuple[str, ...] = (),
    totp_secret: str | None = None,
) -> int:
    """A portal user in the portal's database; its username is its e-mail address, as sign-up makes it, and the
    address is confirmed (users.signals, as for every account staff make). With ``totp_secret``, an
    authenticator app with that secret and recovery codes (allauth.mfa's API)."""
    return product.django(
        """
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
make = get_user_model().objects.create_superuser if params["superuser"] else get_user_model().objects.create_user
user = make(params["email"], params["email"], params["password"])
user.is_staff = params["staff"] or params["superuser"]
user.save(update_fields=["is_staff"])
user.groups.set(Group.objects.filter(name__in=params["groups"]))
assert user.groups.count() == len(params["groups"]), "unknown group"
if params["totp_secret"]:
    TOTP.activate(user, params["totp_secret"])
    RecoveryCodes.activate(user)
result = user.pk
""",
        email=email,
        password=password,
        staff=staff,
        superuser=superuser,
        groups=list(groups),
        totp_secret=totp_secret,
    )


# --- the second factor -------------------------------------------------------------------------------------------


def enrol_totp(
    page,
    product: Product,
    *,
    email: str,
    password: str,
    on_screen: Callable[[Any, str], None] | None = None,
) -> str:
    """A signed-in staff user without a second factor sets up an authenticator app through the pages, with the
    invitation a superuser mailed them (a password alone enrols nothing); returns its secret (read from the page,
    as a person would type it into the app). ``on_screen(page, step)`` is called on each page ("needed": the
    portal's demand, "invitation": the mailed link's page, "index": the choice of factors, "password-again":
    allauth asks for it before a change of factors, "activate": the secret and the code field, "recovery-codes":
    the codes made with the first factor)."""
    screen = on_screen or (lambda page, step: None)
    page.goto(f"{product.portal_url}/")
    page.wait_for_url(re.compile(r"/auth/2fa/invitation/$"))  # staff without a second factor are told so
    screen(page, "needed")
    product.django(
        """
from django.core.management import call_command
call_command("staff_invite", params["email"])
result = None
""",
        email=email,
    )
    link = mail_link(product, to=email, pattern=r"(https?://\S+/auth/2fa/invitation/[\w-]+/)")
    page.goto(link)
    screen(page, "invitation")
    page.locator("main").get_by_role("button", name="Continue").click()
    page.wait_for_url(re.compile(r"/auth/2fa/$"))
    screen(page, "index")
    page.locator("main").get_by_role("link", name="Activate").click()
    page.wait_for_url(re.compile(r"/auth/(2fa/totp/activate|confirm-password)/"))
    if "/auth/confirm-password/" in page.url:  # allauth asks for the password before a change of factors
        screen(page, "password-again")
        page.locator("input[name=password]").fill(password)
        page.locator("main").get_by_role("button", name="Continue").click()
        page.wait_for_url(re.compile(r"/auth/2fa/totp/activate/"))
    secret = page.locator("#authenticator_secret").input_value()
    assert re.fullmatch(r"[A-Z2-7]{16,}=*", secret), secret
    screen(page, "activate")
    page.locator("input[name=code]").fill(totp_code(secret))
    page.locator("main").get_by_role("button", name="Activate").click()
    page.wait_for_url(re.compile(r"/auth/2fa/recovery-codes/$"))
    codes = page.locator("#recovery_codes").input_value().split()
    assert len(codes) == 10 and all(re.fullmatch(r"\d{8}", code) for code in codes), codes
    screen(page, "recovery-codes")
    return secret


def sign_up(
    page, product: Product, *, email: str, password: str, on_screen: Callable[[Any, str], None] | None = None
) -> None:
    """Sign up through the page and confirm the address with the mailed code, typed on the page that asks for it
    (in this browser, the one that signed up); the browser is then signed in. ``on_screen(page, step)`` is called
    on each page ("form", "code", "welcome")."""
    screen = on_screen or (lambda page, step: None)
    page.goto(f"{product.portal_url}/auth/sign-up/")
    screen(page, "form")
    page.get_by_label("E-mail address").fill(email)
    page.locator("#id_password1").fill(password)
    page.locator("#id_password2").fill(password)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(re.compile(r"/auth/sign-up/confirm/"))
    screen(page, "code")
    code = mail_link(product, to=email, pattern=r"(?m)^\s*([A-Z0-9]{4}-[A-Z0-9]{4})\s*$")
    page.locator("input[name=code]").fill(code)
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_url(lambda url: "/auth/sign-up/" not in url)
    page.wait_for_selector(f"text=Signed in as {email}")
    assert f"You have confirmed {email}." in page.locator(".messages").inner_text()
    screen(page, "welcome")


def sign_up_or_create_user(product: Product, *, email: str, password: str, page=None, **options) -> None:
    """Through the sign-up pages when ``page`` is given (a customer), else :func:`create_user` with ``options``."""
    if page is not None:
        assert not options, "sign-up through the pages makes a customer; staff options need create_user"
        sign_up(page, product, email=email, password=password)
    else:
        create_user(product, email=email, password=password, **options)


def sign_in(
    page,
    product: Product,
    username: str,
    password: str,
    *,
    keyboard: bool = False,
    totp_secret: str | None = None,
) -> None:
    """Sign in through the portal's sign-in page (by keyboard alone with ``keyboard``), with the authenticator
    app's code when the portal asks for the second factor: the Playwright transport of tests/signin.py's
    sign-in, filling the form as a person does."""
    page.goto(product.portal_url + SIGN_IN_PATH)
    if keyboard:
        tab_to(page, f"input[name={LOGIN_FIELD}]")
        page.keyboard.type(username)
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.name") == PASSWORD_FIELD
        page.keyboard.type(password)
        page.keyboard.press("Enter")
    else:
        page.get_by_label("E-mail address or username").fill(username)
        page.locator(f"input[name={PASSWORD_FIELD}]").fill(password)
        page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: SIGN_IN_PATH not in url)
    if "/auth/2fa/authenticate/" in page.url:
        assert totp_secret, f"{username}: the portal asks for a second factor and the test has none"
        code = totp_code(totp_secret)
        if keyboard:
            tab_to(page, f"input[name={CODE_FIELD}]")
            page.keyboard.type(code)
            page.keyboard.press("Enter")
        else:
            page.locator(f"input[name={CODE_FIELD}]").fill(code)
            page.locator("main").get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/auth/2fa/authenticate/" not in url)
    page.wait_for_selector("button:has-text('Sign out')")


# --- the bank ----------------------------------------------------------------------------------------------------


def connect_bank(
    page,
    product: Product,
    *,
    identity: str,
    context: str = "private",
    agreement: str | None = None,
    accounts: list[str] | None = None,
    access: str = "accounts",
    keyboard: bool = False,
    on_screen: Callable[[Any, str], None] | None = None,
) -> None:
    """The portal's connect form, then the bank's SCA screens; ends on the portal's page the bank sent us to."""
    page.goto(f"{product.portal_url}/bank/connect/")
    if keyboard:
        # A radio group is one Tab stop; the arrow keys move the choice within it (as a keyboard user does).
        tab_to(page, "input[name=context]")
        _choose_radio_by_keyboard(page, "context", context.upper())
        page.keyboard.press("Tab")
        _choose_radio_by_keyboard(page, "access", access)
        page.keyboard.press("Tab")  # the box "approve in my bank's app", left unticked
        assert page.evaluate("() => document.activeElement.name") == "in_app"
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.textContent.trim()") == "Continue to the bank"
        page.keyboard.press("Enter")
    else:
        page.locator(f"input[name=context][value={context.upper()}]").check()
        page.locator(f"input[name=access][value={access}]").check()
        page.get_by_role("button", name="Continue to the bank").click()
    authorise_at_bank(
        page,
        product,
        identity=identity,
        context=context,
        agreement=agreement,
        accounts=accounts,
        keyboard=keyboard,
        on_screen=on_screen,
    )


def _choose_radio_by_keyboard(page, name: str, value: str) -> None:
    """With the focus in the radio group ``name``, press ArrowDown until ``value`` is checked."""
    count = page.locator(f"input[name={name}]").count()
    for _ in range(count):
        if page.evaluate("() => document.activeElement.value") == value:
            break
        page.keyboard.press("ArrowDown")
    assert page.locator(f"input[name={name}][value={value}]").is_checked(), f"{name}={value} not chosen"


def authorise_at_bank(
    page,
    product: Product,
    *,
    identity: str,
    context: str = "private",
    agreement: str | None = None,
    accounts: list[str] | None = None,
    keyboard: bool = False,
    on_screen: Callable[[Any, str], None] | None = None,
) -> None:
    """The bank's consent SCA screens, from wherever the browser is on them, up to the redirect to the portal.

    The bank may skip the identity step when this browser already authenticated there in this session.
    ``on_screen(page, step)`` is called on each screen before it is filled in ("identity", "agreement",
    "accounts"): for screenshots and checks of the bank's pages."""
    screen = on_screen or (lambda page, step: None)
    page.wait_for_url(lambda url: url.startswith(product.bank_url))
    page.wait_for_selector("input[name=identity], input[name=agreement], input[name=account]")
    if page.locator("input[name=identity]").count():
        screen(page, "identity")
        if keyboard:
            page.locator("input[name=identity]").focus()
            page.keyboard.type(identity)
            page.keyboard.press("Enter")
        else:
            page.fill("input[name=identity]", identity)
            page.get_by_role("button", name="Continue").click()
        page.wait_for_selector("input[name=agreement], input[name=account]")
    if page.locator("input[name=agreement]").count():
        screen(page, "agreement")
        label = agreement or f"{context.upper()} - "
        page.locator("label", has_text=label).first.locator("input[name=agreement]").check()
        page.get_by_role("button", name="Continue").click()
        page.wait_for_selector("input[name=account]")
    offered = page.locator("input[name=account]")
    shared = 0
    for index in range(offered.count()):
        box = offered.nth(index)
        text = box.locator("xpath=..").inner_text()
        if accounts is None or any(part in text for part in accounts):
            box.check()
            shared += 1
        else:
            box.uncheck()
    screen(page, "accounts")
    assert shared, f"none of {accounts} is offered at the bank: {page.locator('fieldset').inner_text()}"
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(lambda url: url.startswith(product.portal_url))
    page.wait_for_load_state()
