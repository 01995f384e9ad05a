"""Who sees the sandbox area: staff only, and nobody when the configured bank is not a sandbox."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import BankCall

PAGES = [
    ("sandbox_admin:customers", ""),
    ("sandbox_admin:customer-create", ""),
    ("sandbox_admin:customer", "?customer=enc!!x"),
    ("sandbox_admin:agreement-create", "?customer=enc!!x"),
    ("sandbox_admin:engagement-create", "?customer=enc!!x"),
    ("sandbox_admin:account-create", "?customer=enc!!x"),
    ("sandbox_admin:transaction-create", "?customer=enc!!x"),
    ("sandbox_admin:reset", ""),
    ("sandbox_admin:clock", ""),
]


def _url(name: str, query: str) -> str:
    return reverse(name) + query


@pytest.mark.parametrize(("name", "query"), PAGES)
def test_anonymous_visitors_are_sent_to_sign_in(client, db, name, query):
    response = client.get(_url(name, query))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize(("name", "query"), PAGES)
def test_a_customer_who_is_not_staff_gets_404_and_no_bank_call(bob_client, name, query):
    assert bob_client.get(_url(name, query)).status_code == 404
    assert bob_client.post(_url(name, query), {"confirm": "on"}).status_code == 404
    assert not BankCall.objects.exists()


@pytest.mark.parametrize(("name", "query"), PAGES)
def test_the_whole_area_is_404_when_the_bank_is_not_a_sandbox(settings, client, charlie, name, query):
    settings.BANK_IS_SANDBOX = False
    assert client.get(_url(name, query)).status_code == 404, "anonymous"
    client.force_login(charlie)
    assert client.get(_url(name, query)).status_code == 404, "staff"
    assert client.post(_url(name, query), {"confirm": "on"}).status_code == 404, "staff, POST"
    assert not BankCall.objects.exists()


def test_the_navigation_links_the_area_for_staff_of_a_sandbox_portal_only(settings, charlie_client):
    link = f'href="{reverse("sandbox_admin:customers")}"'
    settings.BANK_IS_SANDBOX = True
    assert link in charlie_client.get(reverse("home")).content.decode()
    settings.BANK_IS_SANDBOX = False
    assert link not in charlie_client.get(reverse("home")).content.decode()


def test_no_link_for_a_customer(bob_client):
    assert reverse("sandbox_admin:customers") not in bob_client.get(reverse("home")).content.decode()


def test_a_staff_member_gets_404_for_a_missing_or_unknown_customer_id(charlie_client, live_bank):
    assert charlie_client.get(reverse("sandbox_admin:customer")).status_code == 404
    response = charlie_client.get(reverse("sandbox_admin:customer") + "?customer=enc!!no-such-customer=")
    assert response.status_code == 404
    call = BankCall.objects.get()
    assert call.status == 404 and call.user.email == "charlie@example.com"


def test_the_clock_buttons_need_the_change_permission_and_a_csrf_token(charlie, settings):
    from django.contrib.auth.models import Permission
    from django.test import Client

    settings.BANK_IS_SANDBOX = True
    url = reverse("sandbox_admin:clock")
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(charlie)
    assert forged.post(url, {"move": "day"}).status_code == 403  # no CSRF token: refused before the view
    charlie.user_permissions.remove(Permission.objects.get(codename="change_sandbox"))
    reader = Client()
    reader.force_login(charlie)
    assert reader.post(url, {"move": "day"}).status_code == 403  # may view the area, not move the bank's clock
    assert not BankCall.objects.exists()
