"""Open redirects: no address of the portal sends the browser to a host named in a parameter (next=,
callback=, redirect_to=, return_to=, url=), whether by GET or POST, signed in or not; and the pages that do
follow ``next`` after a password (sign-in, re-authentication) keep to the portal's own addresses."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.security.conftest import body, signed_in
from tests.security.pages import pages

pytestmark = pytest.mark.django_db

EVIL = [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example/",
    "\\\\evil.example",
    "https:evil.example",
    "http://testserver@evil.example/",
    " https://evil.example/",
    "https://evil.example%2F@testserver/",
    "javascript:alert(1)",
]
WALK_TARGETS = EVIL[:3]  # every page gets the three main shapes; the sign-in pages below get all of them
PARAMETERS = ["next", "callback", "redirect_to", "return_to", "url"]


def leaves_the_portal(location: str, bank_host: str) -> bool:
    """True when a browser following ``location`` from http://testserver/ would end up elsewhere."""
    stripped = location.strip()
    if stripped.lower().startswith("javascript:"):
        return True
    # Browsers read "\" as "/" in special schemes: "/\evil" is "//evil".
    parts = urlsplit(stripped.replace("\\", "/"))
    if parts.scheme and parts.scheme not in {"http", "https"}:
        return True
    return bool(parts.netloc) and parts.hostname not in {"testserver", bank_host}


def test_the_judge_itself():
    assert leaves_the_portal("//evil.example/", "bank") and leaves_the_portal("/\\evil.example", "bank")
    assert leaves_the_portal("https://testserver@evil.example/", "bank")
    assert not leaves_the_portal("/auth/sign-in/?next=https%3A//evil.example/", "bank")


@pytest.mark.parametrize("who", ["anonymous", "owner"])
def test_no_address_redirects_to_a_host_named_in_a_parameter(world, who, settings):
    bank_host = urlsplit(settings.BANK_BASE_URL).hostname
    user = None if who == "anonymous" else world.owner
    escaped = {}
    for page in pages(world):
        if page.route.is_admin:
            continue
        client = signed_in(user)
        for target in WALK_TARGETS:
            query = dict.fromkeys(PARAMETERS, target)
            for method in ("get", "post"):
                response = getattr(client, method)(page.url, query)
                location = response.get("Location", "")
                if leaves_the_portal(location, bank_host):
                    escaped[f"{method.upper()} {page.url} {target}"] = location
                if response.status_code == 302 and response["Location"].startswith("/auth/sign-in/") and user:
                    client = signed_in(user)  # the POST signed out (or timed out): sign in again
                text = body(response)
                for attribute in ("href", "action", "content"):
                    if f'{attribute}="{target}' in text or f"{attribute}='{target}" in text:
                        escaped[f"{method.upper()} {page.url} {target} ({attribute})"] = "reflected"
    assert escaped == {}


@pytest.mark.parametrize("target", EVIL)
def test_sign_in_with_a_foreign_next_lands_on_the_portal(client, alice, password, target):
    response = client.post(f"/auth/sign-in/?next={target}", {"login": alice.email, "password": password})
    assert response.status_code == 302
    assert not leaves_the_portal(response["Location"], "none")
    assert client.get("/account/").status_code == 200  # the sign-in did happen


@pytest.mark.parametrize("target", EVIL)
def test_re_authentication_with_a_foreign_next_lands_on_the_portal(alice_client, password, target):
    response = alice_client.post("/auth/confirm-password/", {"password": password, "next": target})
    assert response.status_code == 302
    assert not leaves_the_portal(response["Location"], "none")


def test_a_local_next_is_still_followed(client, alice, password):
    # The control: the portal does follow next when it stays inside.
    response = client.post("/auth/sign-in/?next=/bank/accounts/", {"login": alice.email, "password": password})
    assert response["Location"] == "/bank/accounts/"
