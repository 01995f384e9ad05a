"""Another user's objects by id: every address that names an object (tests/security/pages.py marks them
``owned``) answers another customer and staff exactly as for an id that does not exist (404; 405 for a method
the address never takes), by GET and by POST, and nothing changes; the owner gets the page, so the 404 is about
ownership and not a broken address. Ids next to the owner's are probed too."""

from __future__ import annotations

import re

import pytest

from tests.security.conftest import changed_tables, database_snapshot, signed_in
from tests.security.pages import Page, pages

pytestmark = pytest.mark.django_db


def missing(url: str) -> str:
    return re.sub(r"/\d+/", "/999999999/", url, count=1)


def owned_pages(world) -> list[Page]:
    found = [page for page in pages(world) if page.owned]
    assert found, "no address names an object: the walk is broken"
    return found


@pytest.mark.parametrize("who", ["stranger", "staff"])
def test_another_users_object_is_404_and_nothing_changes(world, who):
    client = signed_in(getattr(world, who))
    walked = owned_pages(world)
    before = database_snapshot()
    different = {}
    for page in walked:
        statuses = []
        for method in ("get", "post"):
            status = getattr(client, method)(page.url).status_code
            expected = getattr(client, method)(missing(page.url)).status_code
            statuses.append(status)
            if status != expected or status not in {404, 405}:
                different[f"{method.upper()} {page.url}"] = (status, expected)
        assert 404 in statuses, (page.url, statuses)
    assert different == {}
    assert changed_tables(before, database_snapshot()) == []


def test_the_owner_reaches_every_one_of_those_addresses(world):
    client = signed_in(world.owner)
    answers = {page.url: client.get(page.url).status_code for page in owned_pages(world)}
    # 405: a POST-only address (it exists and is the owner's); never 404 and never an error.
    assert {url: status for url, status in answers.items() if status not in {200, 302, 405}} == {}


def test_anonymous_visitors_are_sent_to_sign_in(world):
    client = signed_in(None)
    for page in owned_pages(world):
        for method in ("get", "post"):
            response = getattr(client, method)(page.url)
            assert response.status_code == 302, (method, page.url, response.status_code)
            assert response["Location"].startswith("/auth/sign-in/?next="), (method, page.url)


def neighbours(page: Page, walked: list[Page]) -> list[str]:
    """The ids next to the one in ``page``'s address, other than ids the owner has at an address of that kind
    (the numbering of each table is its own: the connection's next id may well be the owner's payment)."""
    own = re.search(r"/(\d+)/", page.url)
    kind = page.url[: own.start()]
    taken = {
        int(found.group(1))
        for p in walked
        if (found := re.search(r"/(\d+)/", p.url)) and p.url[: found.start()] == kind
    }
    nearby = {int(own.group(1)) - 1, int(own.group(1)) + 1, max(taken) + 1}  # the last never taken
    return [str(n) for n in sorted(nearby) if n > 0 and n not in taken]


def test_neighbouring_and_malformed_ids_are_404(world):
    client = signed_in(world.owner)
    walked = owned_pages(world)
    for page in walked:
        for replacement in ("0", *neighbours(page, walked), "-1", "1e3", "%00"):
            url = re.sub(r"/\d+/", f"/{replacement}/", page.url, count=1)
            statuses = [client.get(url).status_code, client.post(url).status_code]
            assert set(statuses) <= {404, 405} and 404 in statuses, (url, statuses)
