"""Amounts are formatted for the active language with the currency's minor units; texts are translated."""

from decimal import Decimal

import pytest
from django.template import Context, Template
from django.utils import translation

from core.money import minor_units, to_decimal
from core.templatetags.portal_format import money


@pytest.mark.parametrize(
    ("language", "amount", "currency", "expected"),
    [
        ("nb", Decimal("150000"), "NOK", "150\xa0000,00 NOK"),
        ("en", Decimal("150000"), "NOK", "150,000.00 NOK"),
        ("nb", "1234567.5", "EUR", "1\xa0234\xa0567,50 EUR"),
        ("nb", Decimal("98765"), "JPY", "98\xa0765 JPY"),
        ("en", Decimal("12.345"), "KWD", "12.345 KWD"),
        ("nb", Decimal("-250.5"), "SEK", "-250,50 SEK"),
        # never rounded away: more digits than the currency has are all shown
        ("en", Decimal("10.999"), "NOK", "10.999 NOK"),
        ("en", Decimal("1500.5"), "JPY", "1,500.5 JPY"),
    ],
)
def test_money_is_localised(language, amount, currency, expected):
    with translation.override(language):
        assert money(amount, currency) == expected


def test_money_filter_in_a_template():
    template = Template('{% load portal_format %}{{ amount|money:"NOK" }}')
    with translation.override("nb"):
        assert template.render(Context({"amount": Decimal("150000.00")})) == "150\xa0000,00 NOK"


def test_minor_units_from_iso_4217_and_the_documented_exceptions():
    assert (minor_units("NOK"), minor_units("JPY"), minor_units("BHD"), minor_units("CLP")) == (2, 0, 3, 0)
    assert minor_units("GGP") == 2  # not an ISO code; our documented choice
    with pytest.raises(KeyError):
        minor_units("XYZ")


def test_a_value_that_is_not_an_amount_does_not_break_the_page(caplog):
    assert money("n/a", "NOK") == "n/a NOK"
    assert money(0.1, "NOK") == "0.1 NOK"
    assert "not a decimal amount" in caplog.text


def test_floats_are_refused_as_money():
    with pytest.raises(TypeError):
        to_decimal(0.1)
    assert to_decimal("0.10") == Decimal("0.10")


@pytest.mark.django_db
def test_pages_are_served_in_norwegian_bokmal(client):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="nb")
    assert response.status_code == 200
    assert response["Content-Language"] == "nb"
    assert 'lang="nb"' in response.content.decode()
    assert "Logg inn" in response.content.decode()


# --- dates: one format per language (tpp_portal/formats/) ------------------------------------------------------
MOMENT = "2026-11-25T08:27:00+00:00"  # 09:27 in Oslo


@pytest.mark.parametrize(
    ("language", "date_text", "datetime_text"),
    [("en", "25 Nov 2026", "25 Nov 2026, 09:27"), ("nb", "25.11.2026", "25.11.2026 kl. 09:27")],
)
def test_dates_read_the_same_way_on_every_page_of_a_language(language, date_text, datetime_text):
    from datetime import date, datetime

    moment = datetime.fromisoformat(MOMENT)
    template = Template(
        "{% load tz %}{% timezone 'Europe/Oslo' %}"
        '{{ d|date:"DATE_FORMAT" }}|{{ d|date:"SHORT_DATE_FORMAT" }}|{{ d }}|'
        '{{ m|date:"DATETIME_FORMAT" }}|{{ m|date:"SHORT_DATETIME_FORMAT" }}|{{ m }}{% endtimezone %}'
    )
    with translation.override(language):
        text = template.render(Context({"d": date(2026, 11, 25), "m": moment}))
    assert text.split("|") == [date_text] * 3 + [datetime_text] * 3


def test_templates_name_the_formats_instead_of_spelling_their_own():
    """A literal format in a template would be a second format; only 'c' (ISO, for machines) is allowed."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "templates"
    named = {"DATE_FORMAT", "SHORT_DATE_FORMAT", "DATETIME_FORMAT", "SHORT_DATETIME_FORMAT", "c"}
    found = {}
    for template_file in root.rglob("*.html"):
        for fmt in re.findall(r"\|date:[\"']([^\"']*)[\"']", template_file.read_text()):
            found.setdefault(fmt, []).append(template_file.name)
    assert found, "no |date in the templates: the pattern above no longer matches them"
    assert set(found) <= named, {k: v for k, v in found.items() if k not in named}
    assert not any("naturaltime" in f.read_text() for f in root.rglob("*.html"))
