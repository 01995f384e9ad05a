"""The staff pages in bokmål like the customers' pages: the dashboard, the sandbox area and the admin's model
names (every portal model has translated names, so Django's "Se %s" no longer reads "Se payment")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.apps import apps
from django.contrib import admin as admin_module
from django.urls import reverse
from django.utils import translation
from django.utils.translation.trans_real import DjangoTranslation
from django.views.i18n import JavaScriptCatalog

from payments.models import Payment
from tests.staff.fixtures import bank_call
from users.models import SecondFactor

pytestmark = pytest.mark.django_db

PORTAL_APPS = ("users", "connections", "accounts", "payments", "tpp_portal", "sandbox_admin")


def _nb(client, path: str) -> str:
    client.cookies["django_language"] = "nb"
    response = client.get(path)
    assert response.status_code == 200, path
    return response.content.decode()


def test_every_portal_model_and_its_fields_have_bokmal_names():
    models = [model for label in PORTAL_APPS for model in apps.get_app_config(label).get_models()]
    assert len(models) > 15
    for model in models:
        opts = model._meta
        with translation.override("en"):
            english = (str(opts.verbose_name), str(opts.verbose_name_plural))
        with translation.override("nb"):
            bokmal = (str(opts.verbose_name), str(opts.verbose_name_plural))
        assert bokmal[0] != english[0] and bokmal[1] != english[1], (model, english, bokmal)
    with translation.override("nb"):
        assert Payment._meta.verbose_name == "betaling"
        assert Payment._meta.get_field("creditor_account").verbose_name == "mottakerkonto"


def test_the_admin_names_the_models_in_bokmal(support_client):
    bank_call()
    html = _nb(support_client, reverse("admin:tpp_portal_bankcall_changelist"))
    assert "Velg bankkall å se" in html
    assert "bank call" not in html
    html = _nb(support_client, reverse("admin:payments_payment_changelist"))
    assert "Velg betaling å se" in html
    index = _nb(support_client, reverse("admin:index"))
    for words in ("Bankintegrasjon", "Revisjonslogg over bankkall", "Betalinger", "Bankkontoer"):
        assert words in index, words
    assert "Audit log of bank calls" not in index


def test_the_dashboard_in_bokmal(support_client):
    bank_call()
    html = _nb(support_client, reverse("staff-dashboard"))
    for words in (
        "Oversikt over bankintegrasjonen",
        "Sertifikatene for bankforbindelsen",
        "Kall per operasjon",
        "Betalinger som venter på endelig status",
        "TPP-ens QSealC (signerer hver forespørsel)",
    ):
        assert words in html, words
    for english in (
        "Bank integration dashboard",
        "Calls per operation",
        "Payments waiting",
        "Error rate",
        "signs",
    ):
        assert english not in html, english
    calls = json.loads(
        re.search(r'<script id="chart-calls" type="application/json">(.*?)</script>', html, re.S)[1]
    )
    assert [series["name"] for series in calls["series"]] == ["kall", "feil", "429"]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("sandbox_admin:reset", ("Tilbakestill sandkassen", "Alle samtykker i banken fjernes", "Jeg forstår")),
        ("sandbox_admin:customer-create", ("Ny sandkassekunde", "Kundenummer", "Opprett kunde", "Privat")),
    ],
)
def test_the_sandbox_area_in_bokmal(settings, operator_client, name, words):
    settings.BANK_IS_SANDBOX = True
    html = _nb(operator_client, reverse(name))
    for word in words:
        assert word in html, word
    for english in ("Reset the sandbox", "Customer number", "Clock and batches", "New customer"):
        assert english not in html, english


def _catalogue(path: Path):
    with path.open("rb") as handle:
        return read_po(handle, locale="nb")


def _left_untranslated_by_django(domain: str) -> list:
    """The admin's texts of ``domain`` that Django's own bokmål catalogue has no translation for."""
    admin_locale = Path(admin_module.__file__).parent / "locale"
    translated = {
        (message.context, message.id if isinstance(message.id, str) else message.id[0])
        for message in _catalogue(admin_locale / f"nb/LC_MESSAGES/{domain}.po")
        if message.id
        and not message.fuzzy
        and all(message.string if isinstance(message.string, tuple) else [message.string])
    }
    return [
        m
        for m in _catalogue(admin_locale / f"en/LC_MESSAGES/{domain}.po")
        if m.id and (m.context, m.id if isinstance(m.id, str) else m.id[0]) not in translated
    ]


def test_every_admin_text_django_leaves_untranslated_has_the_portals_translation():
    """Django's admin texts without a bokmål translation in Django's own catalogue (the list changes with Django's
    version: staff/admin/django_words.py) are translated by the portal's."""
    untranslated = [m.id for m in _left_untranslated_by_django("django")]
    assert "Skip to main content" in untranslated  # Django 5.2's catalogue
    with translation.override("nb"):
        for message in untranslated:
            if isinstance(message, tuple):
                assert translation.ngettext(message[0], message[1], 2) != message[1], message
            else:
                assert translation.gettext(message) != message, message


def test_every_admin_script_text_django_leaves_untranslated_has_the_portals_translation():
    """The same for the admin's JavaScript (its selectors and calendar: staff/admin/django_words.js): the admin's
    catalogue (/admin/jsi18n/) adds the portal's djangojs catalogue to Django's."""
    untranslated = _left_untranslated_by_django("djangojs")
    assert "Choose all %s" in [m.id for m in untranslated]  # Django 5.2's catalogue
    with translation.override("nb"):
        catalog = JavaScriptCatalog(packages=["django.contrib.admin"])
        catalog.translation = DjangoTranslation(
            "nb", domain="djangojs", localedirs=catalog.get_paths(["django.contrib.admin"])
        )
        texts = catalog.get_catalog()
    for message in untranslated:
        key = message.id if isinstance(message.id, str) else message.id[0]
        key = f"{message.context}\x04{key}" if message.context else key
        shown = texts.get(key)
        english = message.id if isinstance(message.id, str) else list(message.id)
        assert shown and shown != english, (key, shown)


def test_the_admin_scripts_speak_bokmal(support_client):
    """The permission selector and the calendar of the admin's pages take their words from /admin/jsi18n/."""
    script = _nb(support_client, reverse("admin:jsi18n"))
    texts = json.loads(re.search(r"const newcatalog = (\{.*?\});", script, re.S)[1])
    assert texts["Choose all %s"] == "Velg alle %s"
    assert texts["Remove all %s"] == "Fjern alle %s"
    assert texts["Choose selected %s"] == "Velg de markerte %s"
    assert texts["Today"] == "I dag" and texts["Now"] == "Nå"
    assert texts["Show"] == "Vis" and texts["Hide"] == "Skjul"
    assert texts["abbrev. day Monday\x04Mon"] == "man"
    assert "Choose all" not in "".join(str(value) for value in texts.values())


@pytest.fixture
def superuser_client(client):
    from allauth.mfa.totp.internal.auth import TOTP

    from tests.factories import UserFactory

    superuser = UserFactory(email="root@example.com", is_staff=True, is_superuser=True)
    TOTP.activate(superuser, "JBSWY3DPEHPK3PXP")
    client.force_login(superuser)
    return client


def test_the_admin_names_the_second_factors_in_bokmal(superuser_client):
    """allauth.mfa's authenticators have no verbose names of their own: the admin shows them as the portal's
    "second factors", with translated columns and filters, and never the secret they hold."""
    index = _nb(superuser_client, reverse("admin:index"))
    assert "Ekstra innloggingsfaktorer" in index
    assert "Authenticators" not in index and ">MFA<" not in index
    listing = _nb(superuser_client, reverse("admin:users_secondfactor_changelist"))
    for words in ("Velg ekstra innloggingsfaktor", "Bruker", "Satt opp", "Sist brukt", "TOTP-autentiserer"):
        assert words in listing, words
    for english in ("Authenticator", "Created at", "Last used at", "User<", "authenticator"):
        assert english not in listing, english
    (second_factor,) = SecondFactor.objects.all()
    page = _nb(superuser_client, reverse("admin:users_secondfactor_change", args=[second_factor.pk]))
    assert "Sist brukt" in page and "Last used" not in page
    assert "JBSWY3DPEHPK3PXP" not in page and "secret" not in page
    with translation.override("en"):
        superuser_client.cookies["django_language"] = "en"
        english = superuser_client.get(reverse("admin:users_secondfactor_changelist")).content.decode()
    assert "Second factors" in english and "Last used" in english


@pytest.mark.parametrize("page", ["admin:auth_group_add", "admin:auth_user_change"])
def test_the_permission_selector_names_permissions_in_bokmal(superuser_client, page):
    """Django stores a permission's name in English ("Can change payment") when it makes it; the selector of the
    user and group pages builds it in the reader's language from the action and the model's name."""
    from django.contrib.auth.models import User

    args = [User.objects.get(email="root@example.com").pk] if page.endswith("change") else []
    html = _nb(superuser_client, reverse(page, args=args))
    options = re.findall(r'<option value="\d+"[^>]*>(.*?)</option>', html)
    assert len(options) > 50
    assert "Betalinger | betaling | Kan endre betaling" in options
    assert "Bankkontoer | bankkonto | Kan se bankkonto" in options
    assert (
        "Administrasjon av sandkassebanken | tilgang til sandkassen | Kan se sandkassebankens kunder" in options
    ), [o for o in options if "sandkasse" in o.lower()]
    assert not [option for option in options if "| Can " in option]


def test_support_reads_a_users_permissions_in_bokmal(support_client):
    from django.contrib.auth.models import Permission

    from tests.factories import UserFactory

    user = UserFactory(email="someone@example.com", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="change_payment"))
    html = _nb(support_client, reverse("admin:auth_user_change", args=[user.pk]))
    assert "Betalinger | betaling | Kan endre betaling" in html
    assert "Can change" not in html
