from decimal import Decimal

import pytest

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
