"""The SCA screens: English or Norwegian bokmål by the browser's Accept-Language, and the back button after SCA
("already done" and a link back to the provider, never a live Approve button)."""

from __future__ import annotations

import os
import re
import shutil
from html import escape
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.core.management import call_command
from django.test import Client, RequestFactory

from bank_simulator.models import Consent, ScaSession
from bank_simulator.views.sca import screen_language
from tests.bank_simulator.conftest import PRIVATE_1, form_accounts, form_agreements, redirect_params, sca_path
from tests.bank_simulator.pis.helpers import account, body, identify, initiate, pin_clock, start_authorisation

BANK = Path(__file__).resolve().parents[2] / "bank_simulator"
PO = BANK / "locale/nb/LC_MESSAGES/django.po"
NORWEGIAN = "nb-NO,nb;q=0.9,no;q=0.8,en;q=0.5"


def _start(bank) -> str:
    response = bank.post("/v1/bank-offered-consents", "{}")
    assert response.status_code == 201, response.content
    return sca_path(response.json()["_links"]["scaRedirect"]["href"])


@pytest.mark.parametrize(
    ("header", "language"),
    [
        ("nb", "nb"),
        ("no", "nb"),
        ("no-NO,no;q=0.9", "nb"),
        ("nn-NO,nn;q=0.9", "nb"),
        (NORWEGIAN, "nb"),
        ("en-GB,en;q=0.9,nb;q=0.8", "en"),
        ("de-DE,de;q=0.9,nb;q=0.5", "nb"),
        ("nb;q=0, en;q=0.1", "en"),
        ("de-DE", "en"),
        ("", "en"),
        ("nb;q=x", "en"),
    ],
)
def test_the_screen_language_follows_accept_language(header, language):
    request = RequestFactory().get("/sca/authorize", headers={"Accept-Language": header} if header else {})
    assert screen_language(request) == language


def test_the_screens_are_in_bokmal_when_the_browser_asks_for_it(bank):
    path = _start(bank)
    browser = Client(headers={"Accept-Language": NORWEGIAN})
    page = browser.get(path)
    html = page.content.decode()
    assert page["Content-Language"] == "nb" and "Accept-Language" in page["Vary"]
    assert '<html lang="nb">' in html
    assert "Fødselsnummer (11 siffer)" in html and "Fortsett" in html and "Avbryt" in html
    wrong = browser.post(path, {"identity": "01019000083", "action": "identify"})
    assert "Ukjent fødselsnummer." in wrong.content.decode()
    page = browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    html = page.content.decode()
    assert "Opptre som" in html and "PRIVAT - mine egne kontoer" in html and "BEDRIFT - Fjellbygg" in html
    page = browser.post(path, {"agreement": form_agreements(html)[0], "action": "context"})
    html = page.content.decode()
    assert "Del kontoinformasjon" in html and "i 180 dager (PRIVAT)" in html and "Godkjenn" in html
    refused = browser.post(path, {"action": "approve"})
    assert "Velg minst én konto å dele" in refused.content.decode()
    params = redirect_params(browser.post(path, {"account": list(form_accounts(html)), "action": "approve"}))
    assert params["context"] == "PRIVATE"  # what goes back to the TPP is the same in every language


def test_the_screens_are_in_english_otherwise(bank):
    path = _start(bank)
    for headers in ({}, {"Accept-Language": "en-GB,en;q=0.9"}, {"Accept-Language": "sv-SE"}):
        page = Client(headers=headers).get(path)
        html = page.content.decode()
        assert page["Content-Language"] == "en"
        assert '<html lang="en">' in html and "National identity number (11 digits)" in html


def test_the_error_redirect_to_the_tpp_stays_english(bank):
    path = _start(bank)
    browser = Client(headers={"Accept-Language": "nb"})
    params = redirect_params(browser.post(path, {"action": "cancel"}))
    assert params["message"] == "The PSU cancelled the authentication."


def test_the_payment_screen_in_bokmal(bank):
    pin_clock()
    identify(bank, PRIVATE_1)
    created = initiate(bank, body(account(PRIVATE_1, "Brukskonto"))).json()
    path = sca_path(start_authorisation(bank, created).json()["_links"]["scaRedirect"]["href"])
    browser = Client(headers={"Accept-Language": "no"})
    page = browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    chosen = re.search(r'name="agreement" value="([^"]+)"\s*checked', page.content.decode()).group(1)
    html = browser.post(path, {"agreement": chosen, "action": "context"}).content.decode()
    assert "Godkjenn en betaling" in html and "Godkjenn betaling" in html
    assert "Beløp" in html and "Gebyr" in html and "Utføringsdato" in html
    assert "ber deg godkjenne denne betalingen (PRIVAT)" in html


# --- the back button ----------------------------------------------------------------------------------------


def _to_review(browser: Client, path: str) -> str:
    browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    page = browser.post(
        path, {"agreement": form_agreements(browser.get(path).content.decode())[0], "action": "context"}
    )
    return page.content.decode()


def test_the_sca_pages_are_never_cached(bank):
    path = _start(bank)
    page = Client().get(path)
    assert "no-store" in page["Cache-Control"]


def test_each_step_done_is_a_303_to_the_same_address(bank):
    """Post/Redirect/Get: every screen in the browser's history is a GET of the SCA's address, so the back button
    asks for it again instead of offering to resubmit a form."""
    path = _start(bank)
    browser = Client()
    identified = browser.post(path, {"identity": PRIVATE_1, "action": "identify"})
    assert identified.see_other.status_code == 303 and identified.see_other["Location"] == path
    assert identified.status_code == 200 and 'name="agreement"' in identified.content.decode()
    assert "no-store" in identified.see_other["Cache-Control"]
    chosen = browser.post(
        path, {"agreement": form_agreements(identified.content.decode())[0], "action": "context"}
    )
    assert chosen.see_other.status_code == 303 and chosen.see_other["Location"] == path
    assert 'value="approve"' in chosen.content.decode()
    wrong = Client().post(_start(bank), {"identity": "01019000083", "action": "identify"})
    assert wrong.status_code == 400 and not hasattr(wrong, "see_other")  # an error stays on its screen


def test_back_after_approval_shows_already_done_with_a_link_to_the_provider(bank):
    path = _start(bank)
    browser = Client()
    review = _to_review(browser, path)
    redirect_params(browser.post(path, {"account": list(form_accounts(review)), "action": "approve"}))
    session = ScaSession.objects.get()
    for again in (
        browser.get(path),
        browser.post(path, {"account": list(form_accounts(review)), "action": "approve"}),
    ):
        html = again.content.decode()
        assert again.status_code == 409
        assert "This approval is finished" in html and "You have already approved this" in html
        assert f'<a class="back" href="{escape(session.redirect_uri)}">Back to ' in html
        assert "<form" not in html and 'value="approve"' not in html
    assert Consent.objects.count() == 1
    # In bokmål too.
    html = Client(headers={"Accept-Language": "nb"}).get(path).content.decode()
    assert "Denne godkjenningen er fullført" in html and "Tilbake til " in html


def test_back_after_cancelling_shows_that_it_ended(bank):
    path = _start(bank)
    browser = Client()
    _to_review(browser, path)
    redirect_params(browser.post(path, {"action": "cancel"}))
    again = browser.get(path)
    html = again.content.decode()
    assert again.status_code == 409
    session = ScaSession.objects.get()
    assert "already ended" in html and f'href="{escape(session.redirect_uri)}"' in html and "<form" not in html


# --- the catalogue --------------------------------------------------------------------------------------------


def _catalog(path: Path):
    with path.open("rb") as handle:
        return read_po(handle, locale="nb")


def test_every_message_has_a_bokmal_translation():
    catalog = list(_catalog(PO))
    untranslated = [
        m.id for m in catalog if m.id and (not all(m.string) if isinstance(m.string, tuple) else not m.string)
    ]
    assert not untranslated, f"untranslated: {untranslated}"
    assert not [m.id for m in catalog if m.id and m.fuzzy]


def test_the_catalogue_holds_every_text_of_the_screens(tmp_path):
    """makemessages over bank_simulator/ finds nothing the catalogue lacks (the file is restored after)."""
    assert shutil.which("xgettext"), (
        "GNU gettext (xgettext) is needed to extract messages: apt-get install gettext"
    )
    saved = tmp_path / "django.po"
    shutil.copy2(PO, saved)
    here = os.getcwd()
    try:
        os.chdir(BANK)  # makemessages reads the files under the current directory
        call_command("makemessages", locale=["nb"], no_location=True, verbosity=0)
        extracted = {m.id if isinstance(m.id, str) else m.id[0] for m in _catalog(PO) if m.id}
    finally:
        os.chdir(here)
        shutil.copy2(saved, PO)
    known = {m.id if isinstance(m.id, str) else m.id[0] for m in _catalog(saved) if m.id}
    assert not extracted - known, f"texts not in {PO}: {sorted(extracted - known)}"
