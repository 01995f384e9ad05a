"""No admin page shows Python's "None" for a value that is not there: an empty read-only field shows the admin's
"-" in either language, as the change lists do (e.g. an account's next refresh before it is planned)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.bank_factories import BankAccountFactory
from tests.security.pages import admin_pages, make_world

pytestmark = pytest.mark.django_db

NONE_SHOWN = re.compile(r">\s*None\s*<")


def _get(client: Client, path: str, language: str) -> str:
    client.cookies["django_language"] = language
    response = client.get(path)
    assert response.status_code == 200, path
    return response.content.decode()


@pytest.mark.parametrize("language", ["nb", "en"])
def test_an_accounts_unplanned_refresh_shows_a_dash(operator_client, alice, language):
    account = BankAccountFactory(connection__user=alice)
    html = _get(operator_client, reverse("admin:accounts_bankaccount_change", args=[account.pk]), language)
    for field in ("next_due", "blocked_until"):
        shown = re.search(rf'field-{field}">.*?<div class="readonly">(.*?)</div>', html, re.S)[1]
        assert shown.strip() == "-", (field, shown)


@pytest.mark.parametrize("language", ["nb", "en"])
def test_no_admin_page_shows_none(alice, bob, charlie, language):
    world = make_world(alice, bob, charlie)
    client = Client()
    client.force_login(world.superuser)
    walked = [
        page.url
        for page in admin_pages(world)
        if re.search(r"^admin:\w+_\w+_(change|changelist)$", page.route.name)
    ]
    assert len(walked) > 30
    found = {
        path: NONE_SHOWN.findall(html)
        for path in walked
        if NONE_SHOWN.search(html := _get(client, path, language))
    }
    assert found == {}
