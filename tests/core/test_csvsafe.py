from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils import translation
from django.utils.translation import gettext

from core import csvsafe


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (None, ""),
        ("Fjord AS", "Fjord AS"),
        ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
        ("+47 22", "'+47 22"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("\nx", "'\nx"),
        ("\uff1d1+1", "'\uff1d1+1"),  # full-width equals sign
        ("a=b", "a=b"),
    ],
)
def test_text_cells_are_defused(value, cell):
    assert csvsafe.text_cell(value) == cell


@pytest.mark.parametrize(
    ("amount", "currency", "cell"),
    [
        (Decimal("-1234.5"), "NOK", "-1234.50"),
        (Decimal("0.12345"), "EUR", "0.12345"),
        (Decimal("5000"), "JPY", "5000"),
        (Decimal("1.5"), "KWD", "1.500"),
        (None, "NOK", ""),
    ],
)
def test_amount_cells_are_exact_and_keep_their_sign(amount, currency, cell):
    assert csvsafe.amount_cell(amount, currency) == cell


def test_stream_starts_with_a_bom_and_quotes_as_csv():
    lines = list(csvsafe.stream([["a", "b,c"], ["1", 'say "hi"']]))
    assert lines == ["\ufeff", 'a,"b,c"\r\n', '1,"say ""hi"""\r\n']


def test_a_time_cell_is_oslo_time_to_the_second_with_its_offset():
    assert csvsafe.time_cell(datetime(2026, 1, 15, 8, 0, 59, 999999, tzinfo=UTC)) == "2026-01-15T09:00:59+01:00"
    assert csvsafe.time_cell(datetime(2026, 6, 15, 8, 0, 0, 1, tzinfo=UTC)) == "2026-06-15T10:00:00+02:00"
    assert csvsafe.time_cell(None) == ""


def test_rows_are_made_in_the_language_of_the_request_even_after_it_changed():
    def rows():
        yield [gettext("Amount")]
        yield [gettext("Currency")]

    with translation.override("en"):
        streamed = csvsafe.stream_in_language(rows(), "nb")
        assert next(streamed) == "\ufeff"
        assert [next(streamed), next(streamed)] == ["Beløp\r\n", "Valuta\r\n"]
        assert translation.get_language() == "en"
