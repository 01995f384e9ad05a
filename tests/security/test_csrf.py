"""CSRF on every state-changing address: a POST (and PUT, PATCH, DELETE) without the token is refused with 403
at every address of the portal and the admin (found by walking the URL resolver), for a visitor, a customer and
the superuser, and writes nothing."""

from __future__ import annotations

import pytest

from tests.security.conftest import changed_tables, database_snapshot, signed_in
from tests.security.pages import pages

pytestmark = pytest.mark.django_db

# Addresses that accept a POST without a CSRF token, with the reason. Keep this empty unless a machine (not a
# browser) posts to the address with its own authentication.
CSRF_EXEMPT = {
    "/healthz": "the load balancer's probe: answered before the CSRF middleware and changes nothing",
}


@pytest.mark.parametrize("who", ["anonymous", "owner", "superuser"])
def test_every_post_without_a_token_is_refused_and_writes_nothing(world, who):
    user = None if who == "anonymous" else getattr(world, who)
    client = signed_in(user, enforce_csrf_checks=True)
    walked = pages(world)
    before = database_snapshot()
    accepted = {}
    for page in walked:
        if page.url in CSRF_EXEMPT:
            continue
        for method in ("post", "put", "patch", "delete"):
            response = getattr(client, method)(page.url, {"next": "/", "confirm": "yes"})
            if response.status_code != 403:
                accepted[f"{method.upper()} {page.url}"] = response.status_code
    assert accepted == {}
    assert changed_tables(before, database_snapshot()) == []
    if user is not None:  # still signed in: the refused sign-out did not run
        assert client.get("/account/").status_code == 200


def test_the_same_post_with_the_token_is_not_refused_for_csrf(world):
    # The control: the refusal above comes from the missing token, not from the address.
    client = signed_in(world.owner, enforce_csrf_checks=True)
    page = client.get("/bank/connections/")
    token = page.cookies["csrftoken"].value if "csrftoken" in page.cookies else None
    assert token, "the page set no CSRF cookie"
    with_token = client.post(
        f"/bank/connections/{world.connection.pk}/disconnect/", {"csrfmiddlewaretoken": token}
    )
    assert with_token.status_code != 403
    assert client.post("/auth/sign-out/", {"csrfmiddlewaretoken": "x" * 64}).status_code == 403
