"""One client address for the sign-in limits and PSU-IP-Address, aware of trusted proxies only."""

import pytest
from django.test import RequestFactory

from connections.psu import psu_presence
from core.clientip import client_ip

LOGIN = "/auth/sign-in/"


def _request(**meta):
    return RequestFactory().get("/", **meta)


def test_without_a_trusted_proxy_a_clients_forwarded_for_header_is_ignored(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    request = _request(REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR="203.0.113.99")
    assert client_ip(request) == "198.51.100.7"
    assert psu_presence(request).ip_address == "198.51.100.7"


def test_behind_one_trusted_proxy_the_forwarded_client_address_is_used(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    request = _request(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.5, 10.0.0.2")
    assert client_ip(request) == "203.0.113.5"
    assert psu_presence(request).ip_address == "203.0.113.5"


@pytest.mark.django_db
def test_two_customers_behind_the_same_proxy_do_not_lock_each_other_out(client, settings, django_user_model):
    settings.TRUSTED_PROXY_COUNT = 1
    django_user_model.objects.create_user("victim@example.com", "victim@example.com", "a-long-test-password")
    for _ in range(settings.SIGN_IN_FAILURES):
        client.post(
            LOGIN,
            {"login": "victim@example.com", "password": "wrong"},
            REMOTE_ADDR="10.0.0.2",
            HTTP_X_FORWARDED_FOR="203.0.113.66, 10.0.0.2",
        )
    locked = client.post(
        LOGIN,
        {"login": "victim@example.com", "password": "a-long-test-password"},
        REMOTE_ADDR="10.0.0.2",
        HTTP_X_FORWARDED_FOR="203.0.113.66, 10.0.0.2",
    )
    assert locked.status_code == 429  # the attacker's own address is locked out for that user
    owner = client.post(
        LOGIN,
        {"login": "victim@example.com", "password": "a-long-test-password"},
        REMOTE_ADDR="10.0.0.2",
        HTTP_X_FORWARDED_FOR="198.51.100.20, 10.0.0.2",
    )
    assert owner.status_code == 302  # the owner, from another address behind the same proxy, signs in
