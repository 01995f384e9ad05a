"""The sandbox bank as a real process for portal tests, and a PSU's browser at its SCA screens.

``live_bank_server`` (session): gunicorn ``bank_simulator.wsgi`` on a free loopback port with its own temporary
SQLite database, migrated and reset to the known sandbox state. ``live_bank`` (per test): points
``settings.BANK_BASE_URL`` at it and clears the cached bank client before and after. ``BankBrowser`` walks the
SCA screens the way a browser does: GET the page, POST its forms (CSRF cookie and token), stop at the redirect
back to the portal.

Import the fixtures into a conftest: ``from tests.live_bank import live_bank, live_bank_server  # noqa: F401``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests

from devtools.livebank import follow_see_other, running_bank

# Private Customer 1 (docs/bank-interface.md, reference 1): 2 accounts + 1 card account
PRIVATE_1 = "13039319955"
PRIVATE_2 = "12085592767"


@pytest.fixture(scope="session")
def live_bank_server(tmp_path_factory) -> Iterator[str]:
    with running_bank(tmp_path_factory.mktemp("portal-live-bank"), workers=1) as bank:
        yield bank.base_url


@pytest.fixture
def live_bank(live_bank_server, settings) -> Iterator[str]:
    """The running sandbox bank, with the portal's bank client pointed at it."""
    from core.bank import bank_client

    settings.BANK_BASE_URL = live_bank_server
    bank_client.cache_clear()
    yield live_bank_server
    bank_client.cache_clear()


def _csrf(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1)


class BankBrowser:
    """A PSU's browser at the bank's SCA screens (identity number, context, accounts)."""

    def __init__(self) -> None:
        self.http = requests.Session()

    def _post(self, url: str, page: str, data: dict) -> requests.Response:
        action = re.search(r'<form method="post" action="([^"]*)"', page)
        target = urljoin(url, action.group(1).replace("&amp;", "&")) if action else url
        answer = self.http.post(
            target, data={"csrfmiddlewaretoken": _csrf(page), **data}, timeout=15, allow_redirects=False
        )
        return follow_see_other(self.http, target, answer)  # a step done: the next screen (303, then GET)

    def authorise(
        self,
        href: str,
        *,
        identity: str = PRIVATE_1,
        context: str = "PRIVATE",
        accounts: list[str] | None = None,
        cancel: bool = False,
    ) -> str:
        """Complete (or cancel) the SCA at ``href``; returns the Location the bank sends the browser to.

        ``accounts``: the resourceIds to tick (default: every offered account).
        """
        page = self.http.get(href, timeout=15)
        assert page.status_code == 200, page.text[:500]
        if cancel:
            done = self._post(href, page.text, {"action": "cancel"})
            assert done.status_code == 302, done.text[:500]
            return done.headers["Location"]
        if 'name="identity"' in page.text:
            page = self._post(href, page.text, {"identity": identity, "action": "identify"})
            assert page.status_code == 200, page.text[:500]
        options = re.findall(r'name="agreement" value="([^"]+)"[^>]*>\s*(PRIVATE|CORPORATE)', page.text)
        if options:
            agreement = next(value for value, kind in options if kind == context)
            page = self._post(href, page.text, {"agreement": agreement, "action": "context"})
            assert page.status_code == 200, page.text[:500]
        offered = re.findall(r'name="account" value="([^"]+)"', page.text)
        chosen = offered if accounts is None else accounts
        done = self._post(href, page.text, {"account": chosen, "action": "approve"})
        assert done.status_code == 302, done.text[:500]
        return done.headers["Location"]


def callback_target(location: str) -> tuple[str, dict[str, str]]:
    """The portal path and query parameters of the bank's redirect back."""
    parts = urlsplit(location)
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


def portal_connect(
    client, *, context: str = "PRIVATE", identity: str = PRIVATE_1, access: str = "accounts", **sca
):
    """Connect a bank through the portal's pages as the signed-in user of ``client``; returns the response of
    the callback and the callback's parameters."""
    start = client.post("/bank/connect/", {"context": context, "access": access})
    assert start.status_code == 302, start.content[:500]
    location = BankBrowser().authorise(start["Location"], identity=identity, context=context, **sca)
    path, params = callback_target(location)
    assert path == "/bank/callback"
    return client.get(path, params), params
