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

from payments.models import Payment
from tests.staff.fixtures import bank_call

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


def test_every_admin_text_django_leaves_untranslated_has_the_portals_translation():
    """Django's admin texts without a bokmål translation in Django's own catalogue (the list changes with Django's
    version: staff/admin/django_words.py) are translated by the portal's."""
    admin_locale = Path(admin_module.__file__).parent / "locale"
    translated = {
        message.id if isinstance(message.id, str) else message.id[0]
        for message in _catalogue(admin_locale / "nb/LC_MESSAGES/django.po")
        if message.id
        and not message.fuzzy
        and all(message.string if isinstance(message.string, tuple) else [message.string])
    }
    untranslated = [
        m.id
        for m in _catalogue(admin_locale / "en/LC_MESSAGES/django.po")
        if m.id and (m.id if isinstance(m.id, str) else m.id[0]) not in translated
    ]
    assert "Skip to main content" in untranslated  # Django 5.2's catalogue
    with translation.override("nb"):
        for message in untranslated:
            if isinstance(message, tuple):
                assert translation.ngettext(message[0], message[1], 2) != message[1], message
            else:
                assert translation.gettext(message) != message, message
