"""The attacks of the sign-up and sign-in issue, each tried as the attacker did (they worked before allauth):

- account pre-hijacking: a stranger signs up with the victim's address and a password of their own; when the
  victim later signs up and confirms from the mail, the stranger's password must not sign in;
- mail bombing: ten sign-ups or password resets for one address in two seconds must not send ten mails;
- a timing oracle: the reset page must do the same mail work for an address with an account and without one
  (the mail is queued for the worker in both cases, never sent while the visitor waits);
- the read-only support role must not write to the sandbox bank (create customers, reset).

The sign-up helper confirms whatever the mail carries: a code typed in the browser that signed up, or a link
opened there, so the same test runs against the old flow and the new one.
"""

from __future__ import annotations

import re
import time
from unittest import mock

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from core.models import BankCall

pytestmark = pytest.mark.django_db
VICTIM = "victim@example.com"
ATTACKER_PASSWORD = "attacker-chosen-pass-1"
VICTIM_PASSWORD = "victims-own-pass-word-2"


def later(minutes: int):
    """allauth's rate limits (time.time) as if ``minutes`` had passed."""
    real = time.time
    return mock.patch("allauth.core.internal.ratelimit.time.time", lambda: real() + minutes * 60)


def _mails_to(address: str) -> list:
    return [m for m in mail.outbox if address in m.to]


def _sign_up(client: Client, email: str, password: str):
    return client.post(reverse("signup"), {"email": email, "password1": password, "password2": password})


def _confirm_from_the_latest_mail(client: Client, email: str) -> None:
    """Do what the mail asks, in this browser: type its code, or open its link and press the button."""
    body = _mails_to(email)[-1].body
    code = re.search(r"^\s*([A-Z0-9]{4}-[A-Z0-9]{4})\s*$", body, re.M)
    if code:
        client.post(reverse("account_email_verification_sent"), {"code": code.group(1)})
        return
    link = re.search(r"https?://[^/\s]+(/\S+)", body)
    assert link, body
    client.post(link.group(1))


def _signs_in(email: str, password: str) -> bool:
    client = Client()
    page = client.get(reverse("login"))
    field = "login" if 'name="login"' in page.content.decode() else "username"
    client.post(reverse("login"), {field: email, "password": password})
    return "_auth_user_id" in client.session


def test_a_strangers_earlier_sign_up_does_not_keep_its_password(settings):
    settings.PORTAL_BASE_URL = "https://portal.example.com"
    attacker, victim = Client(), Client()
    _sign_up(attacker, VICTIM, ATTACKER_PASSWORD)
    with later(minutes=5):  # the victim comes later (a code a minute at most to one address)
        _sign_up(victim, VICTIM, VICTIM_PASSWORD)
        _confirm_from_the_latest_mail(victim, VICTIM)
    assert not _signs_in(VICTIM, ATTACKER_PASSWORD), "the stranger's password signs in to the victim's account"
    assert _signs_in(VICTIM, VICTIM_PASSWORD)


def test_ten_sign_ups_of_one_address_in_two_seconds_send_at_most_one_mail():
    for n in range(10):
        _sign_up(Client(), VICTIM, f"{VICTIM_PASSWORD}-{n}")
    assert len(_mails_to(VICTIM)) <= 1


def test_ten_password_resets_of_one_address_in_two_seconds_send_at_most_three_mails(alice):
    for _ in range(10):
        Client().post(reverse("password_reset"), {"email": alice.email})
    assert 1 <= len(_mails_to(alice.email)) <= 3


def test_the_reset_page_does_the_same_mail_work_for_known_and_unknown_addresses(alice, settings, monkeypatch):
    settings.ACCOUNT_MAIL_QUEUED = True
    queued = []
    from users import tasks

    monkeypatch.setattr(tasks.send_account_mail, "apply_async", lambda args, **kw: queued.append(args[0]))
    Client().post(reverse("password_reset"), {"email": alice.email})
    Client().post(reverse("password_reset"), {"email": "nobody@example.com"})
    assert mail.outbox == []  # nothing was sent while the visitor waited, for either address
    assert [message["to"] for message in queued] == [[alice.email], ["nobody@example.com"]]
    tasks.send_account_mail(queued[0])  # the worker's side
    assert mail.outbox[0].subject == "Set a new Fjordpay password"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("sandbox_admin:customer-create", {"customer_type": "PRIVATE", "name": "Support Was Here"}),
        ("sandbox_admin:reset", {"confirm": "on"}),
    ],
)
def test_support_cannot_write_to_the_sandbox_bank(support_client, name, data, settings):
    settings.BANK_IS_SANDBOX = True
    assert support_client.get(reverse("sandbox_admin:customer-create")).status_code == 403
    response = support_client.post(reverse(name), data)
    assert response.status_code == 403
    assert not BankCall.objects.exists()  # the bank was never asked
