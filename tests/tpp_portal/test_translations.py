"""English and Norwegian bokmål are complete: every user-facing text is extracted and translated."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "locale/nb/LC_MESSAGES/django.po"
#: The admin's JavaScript texts that Django's catalogue leaves untranslated (staff/admin/django_words.js).
JS_PO = ROOT / "locale/nb/LC_MESSAGES/djangojs.po"


def _catalog(path: Path):
    with path.open("rb") as handle:
        return read_po(handle, locale="nb")


def _msgids(path: Path) -> set[str]:
    return {m.id if isinstance(m.id, str) else m.id[0] for m in _catalog(path) if m.id}


@pytest.mark.parametrize("po", [PO, JS_PO], ids=["django", "djangojs"])
def test_every_message_has_a_bokmal_translation(po):
    untranslated = [
        message.id
        for message in _catalog(po)
        if message.id and (not all(message.string) if isinstance(message.string, tuple) else not message.string)
    ]
    fuzzy = [message.id for message in _catalog(po) if message.id and message.fuzzy]
    assert not untranslated, f"untranslated: {untranslated}"
    assert not fuzzy, f"fuzzy: {fuzzy}"


def test_the_catalogue_holds_every_text_of_the_code_and_templates(tmp_path):
    assert shutil.which("xgettext"), (
        "GNU gettext (xgettext) is needed to extract messages: apt-get install gettext"
    )
    saved = tmp_path / "django.po"
    shutil.copy2(PO, saved)
    try:
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "makemessages",
                "-l",
                "nb",
                "--no-location",
                "--ignore=.venv",
                "--ignore=var",
                "--ignore=bank_simulator",
                "--ignore=tests",
                "--ignore=bench",
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=300,
        )
        extracted = _msgids(PO)
    finally:
        shutil.copy2(saved, PO)
    missing = extracted - _msgids(saved)
    assert not missing, f"texts not in locale/nb/LC_MESSAGES/django.po: {sorted(missing)}"
