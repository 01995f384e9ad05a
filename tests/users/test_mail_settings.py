"""The user's mail settings (users.models.MailSettings): the payment mails on or off and their language, chosen on
"My account"; the header's language form and the first sign-in set the language too."""

from __future__ import annotations

import pytest
from django.urls import reverse

from users.models import MailSettings
from users.selectors import mail_settings

pytestmark = pytest.mark.django_db


def test_without_a_choice_the_mails_are_on_in_the_portals_language(alice):
    chosen = mail_settings(alice.pk)
    assert (chosen.language, chosen.payment_mails) == ("en", True)
    assert not MailSettings.objects.filter(user=alice).exists()


def test_the_first_sign_in_records_its_language_and_a_later_one_keeps_the_choice(client, alice):
    client.force_login(alice)
    assert mail_settings(alice.pk).language == "en"
    MailSettings.objects.filter(user=alice).update(language="nb")
    client.logout()
    client.force_login(alice)
    assert mail_settings(alice.pk).language == "nb"


def test_my_account_turns_the_payment_mails_off_and_sets_their_language(alice_client, alice):
    page = alice_client.get(reverse("account"))
    assert page.status_code == 200
    assert b'name="payment_mails"' in page.content and b"checked" in page.content

    answer = alice_client.post(reverse("account"), {"language": "nb"})  # the box left unticked: off

    assert answer.status_code == 302 and answer["Location"] == reverse("account")
    chosen = mail_settings(alice.pk)
    assert (chosen.language, chosen.payment_mails) == ("nb", False)
    page = alice_client.get(reverse("account"))
    assert b"Your e-mail settings are saved." in page.content
    assert b'<option value="nb" selected>' in page.content


def test_my_account_refuses_a_language_the_portal_does_not_offer(alice_client, alice):
    page = alice_client.post(reverse("account"), {"language": "de", "payment_mails": "on"})
    assert page.status_code == 200 and b"There is a problem" in page.content
    assert not MailSettings.objects.filter(user=alice, language="de").exists()


def test_the_header_language_form_sets_the_language_of_the_mails(alice_client, alice):
    answer = alice_client.post(reverse("set_language"), {"language": "nb", "next": "/account/"})
    assert answer.status_code == 302 and answer["Location"] == "/account/"
    assert mail_settings(alice.pk).language == "nb"
    assert answer.cookies["django_language"].value == "nb"


def test_the_header_language_form_without_a_user_stores_nothing(client):
    answer = client.post(reverse("set_language"), {"language": "nb", "next": "/"})
    assert answer.status_code == 302 and not MailSettings.objects.exists()
