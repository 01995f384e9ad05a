"""The payments list: only the user's payments (and their company's awaiting their signature), filters,
pagination, and the CSV export with the same filters (headers and words in the user's language, plain decimals,
local time to the second, no spreadsheet formulas)."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.urls import reverse

from payments.models import PaymentState
from payments.views_status import CSV_COLUMNS, CSV_KEYS, PAGE_SIZE
from tests.bank_factories import BankConnectionFactory
from tests.payments.payment_factories import PaymentFactory


def _csv_lines(response) -> list[list[str]]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="payments-')
    raw = b"".join(response.streaming_content)
    assert raw.startswith("\ufeff".encode())  # spreadsheet programs read it as UTF-8
    return list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))


def _csv(response) -> list[dict]:
    """The rows by the columns' keys, after checking the header is the English one."""
    header, *lines = _csv_lines(response)
    assert header == [str(label) for _key, label in CSV_COLUMNS]
    return [dict(zip(CSV_KEYS, line, strict=True)) for line in lines]


def test_the_list_shows_only_my_payments_newest_first(alice_client, alice, bob):
    old = PaymentFactory(user=alice, creditor_name="Old GmbH", created_at=datetime(2026, 1, 5, 9, tzinfo=UTC))
    new = PaymentFactory(user=alice, creditor_name="New AB", created_at=datetime(2026, 2, 5, 9, tzinfo=UTC))
    PaymentFactory(user=bob, creditor_name="Bobs Creditor")
    PaymentFactory(
        user=bob, creditor_name="Bobs Draft", state=PaymentState.DRAFT, payment_id="", submitted_at=None
    )

    page = alice_client.get(reverse("payment-list")).content.decode()

    assert "Bobs Creditor" not in page and "Bobs Draft" not in page
    assert page.index("New AB") < page.index("Old GmbH")
    assert f'href="/payments/{new.pk}/"' in page and f'href="/payments/{old.pk}/"' in page


def _draft(user, **fields):
    return PaymentFactory(
        user=user, state=PaymentState.DRAFT, payment_id="", transaction_status="", submitted_at=None, **fields
    )


def _row(page: str, payment) -> str:
    match = re.search(rf'<tr class="payment-row[^"]*" data-payment="{payment.pk}">(.*?)</tr>', page, re.S)
    assert match, f"payment {payment.pk} is not listed"
    return match.group(1)


def test_drafts_are_listed_as_drafts_with_continue_and_delete(alice_client, alice):
    draft = _draft(alice, creditor_name="Never Sent")
    sent = PaymentFactory(user=alice, creditor_name="Sent AS")

    page = alice_client.get(reverse("payment-list")).content.decode()

    row = _row(page, draft)
    assert "Never Sent" in row and "Draft, not sent" in row
    assert f'href="{reverse("payment-review", args=[draft.pk])}"' in row
    assert f'href="{reverse("payment-draft-delete", args=[draft.pk])}"' in row
    sent_row = _row(page, sent)
    assert "Draft, not sent" not in sent_row and "/delete/" not in sent_row
    drafts_only = alice_client.get(reverse("payment-list"), {"group": "draft"}).content.decode()
    assert "Never Sent" in drafts_only and "Sent AS" not in drafts_only
    in_progress = alice_client.get(reverse("payment-list"), {"group": "in_progress"}).content.decode()
    assert "Never Sent" not in in_progress and "Sent AS" in in_progress


def test_the_export_lists_sent_payments_only(alice_client, alice):
    _draft(alice, creditor_name="Never Sent")
    PaymentFactory(user=alice, creditor_name="Sent AS")

    rows = _csv(alice_client.get(reverse("payment-export")))

    assert [row["creditor_name"] for row in rows] == ["Sent AS"]


def test_the_filters_are_folded_unless_one_is_active(alice_client, alice):
    PaymentFactory(user=alice)

    plain = alice_client.get(reverse("payment-list")).content.decode()
    paged = alice_client.get(reverse("payment-list"), {"page": "1", "q": ""}).content.decode()
    filtered = alice_client.get(reverse("payment-list"), {"q": "GmbH"}).content.decode()

    fold = re.compile(r'<details class="filters" data-fold( open data-fold-open)?>')
    assert fold.search(plain).group(1) is None
    assert fold.search(paged).group(1) is None  # a page number and an empty field filter nothing
    assert fold.search(filtered).group(1) == " open data-fold-open"


def test_a_corporate_payment_names_the_company_that_pays(alice_client, alice):
    company = BankConnectionFactory(user=alice, context="CORPORATE", agreement_name="Havbruk Nord AS")
    private = BankConnectionFactory(user=alice, agreement_name="Alice - privat")
    corporate = PaymentFactory(user=alice, context="CORPORATE", connection=company)
    own = PaymentFactory(user=alice, connection=private)

    page = alice_client.get(reverse("payment-list")).content.decode()

    assert "Paid by Havbruk Nord AS" in _row(page, corporate)
    assert "Paid by" not in _row(page, own) and "privat" not in _row(page, own)


def test_anonymous_is_sent_to_sign_in(client):
    for name in ("payment-list", "payment-export"):
        response = client.get(reverse(name))
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_filters_by_status_group_recipient_currency_and_dates(alice_client, alice):
    done = PaymentFactory(
        user=alice, creditor_name="Done GmbH", transaction_status="ACSC", state=PaymentState.FINAL
    )
    waiting = PaymentFactory(
        user=alice, creditor_name="Waiting AS", transaction_status="PDNG", state=PaymentState.AWAITING_STATUS
    )
    cancelled = PaymentFactory(
        user=alice, creditor_name="Cancelled Ltd", transaction_status="CANC", state=PaymentState.FINAL
    )
    euro = PaymentFactory(
        user=alice,
        creditor_name="Euro SA",
        currency="EUR",
        transaction_status="ACSC",
        state=PaymentState.FINAL,
        created_at=datetime(2026, 1, 10, 12, tzinfo=UTC),
    )

    def names(**query) -> set[str]:
        page = alice_client.get(reverse("payment-list"), query).content.decode()
        return {p.creditor_name for p in (done, waiting, cancelled, euro) if p.creditor_name in page}

    assert names(group="completed") == {"Done GmbH", "Euro SA"}
    assert names(group="in_progress") == {"Waiting AS"}
    assert names(group="failed") == {"Cancelled Ltd"}
    assert names(q="waiting") == {"Waiting AS"}
    assert names(q=done.creditor_account[:8]) == {p.creditor_name for p in (done, waiting, cancelled, euro)}
    assert names(currency="eur") == {"Euro SA"}
    assert names(date_from="2026-01-10", date_to="2026-01-10") == {"Euro SA"}


def test_a_bad_filter_is_shown_next_to_its_field(alice_client, alice):
    PaymentFactory(user=alice, creditor_name="Still Listed")

    page = alice_client.get(reverse("payment-list"), {"date_from": "2026-02-02", "date_to": "2026-02-01"})
    bad_currency = alice_client.get(reverse("payment-list"), {"currency": "XX"})

    assert "The end date is before the start date." in page.content.decode()
    assert 'class="field field-invalid"' in bad_currency.content.decode()
    assert "Still Listed" in page.content.decode()  # an invalid filter filters nothing
    assert alice_client.get(reverse("payment-export"), {"currency": "XX"}).status_code == 400


def test_pagination(alice_client, alice):
    base = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(PAGE_SIZE + 3):
        PaymentFactory(user=alice, creditor_name=f"Creditor {n:03d}", created_at=base + timedelta(minutes=n))

    first = alice_client.get(reverse("payment-list")).content.decode()
    second = alice_client.get(reverse("payment-list"), {"page": 2}).content.decode()

    assert f"Creditor {PAGE_SIZE + 2:03d}" in first and "Creditor 000" not in first
    assert "Creditor 000" in second and f"Creditor {PAGE_SIZE + 2:03d}" not in second


def test_csv_export_has_the_filtered_rows_with_plain_decimals_and_local_time(alice_client, alice, bob):
    PaymentFactory(
        user=alice,
        creditor_name="Müller GmbH",
        amount=Decimal("150000.00"),
        currency="NOK",
        transaction_status="ACSC",
        state=PaymentState.FINAL,
        fee_amount=Decimal("50.00"),
        nok_equivalent=Decimal("150000.00"),
        created_at=datetime(2026, 3, 2, 9, 30, tzinfo=UTC),
        final_at=datetime(2026, 3, 2, 15, 2, tzinfo=UTC),
    )
    PaymentFactory(user=alice, creditor_name="Pending One", transaction_status="PDNG")
    PaymentFactory(user=bob, creditor_name="Not Mine", transaction_status="ACSC", state=PaymentState.FINAL)

    rows = _csv(alice_client.get(reverse("payment-export"), {"group": "completed"}))

    assert len(rows) == 1
    row = rows[0]
    assert row["creditor_name"] == "Müller GmbH"
    assert (row["amount"], row["currency"], row["fee"], row["nok_equivalent"]) == (
        "150000.00",
        "NOK",
        "50.00",
        "150000.00",
    )
    assert row["status_code"] == "ACSC" and row["status"] == "Completed"
    assert row["created_at"] == "2026-03-02T10:30:00+01:00"  # Oslo, to the second
    assert row["final_at"] == "2026-03-02T16:02:00+01:00"
    assert row["product"] == "Cross-border credit transfer"


def test_csv_export_speaks_the_users_language(alice_client, alice):
    PaymentFactory(
        user=alice,
        transaction_status="ACSC",
        state=PaymentState.FINAL,
        funds_available=True,
        created_at=datetime(2026, 7, 2, 9, 30, 15, 123456, tzinfo=UTC),
    )
    alice_client.cookies["django_language"] = "nb"

    header, line = _csv_lines(alice_client.get(reverse("payment-export")))

    row = dict(zip(CSV_KEYS, line, strict=True))
    assert header[:4] == ["Opprettet", "Betalingsnummer", "Type", "Mottaker"]
    assert not any("_" in cell for cell in header)
    assert row["status"] == "Fullført" and row["status_code"] == "ACSC" and row["funds_available"] == "Ja"
    assert row["created_at"] == "2026-07-02T11:30:15+02:00"  # summer time, no microseconds
    assert "-" not in row["product"] and row["product"] != "norwegian-cross-border-credit-transfers"


def test_csv_export_and_page_agree_that_a_cancelled_payment_cost_nothing(alice_client, alice):
    payment = PaymentFactory(
        user=alice,
        transaction_status="CANC",
        state=PaymentState.FINAL,
        fee_amount=Decimal("75.00"),
        fee_currency="NOK",
    )

    (row,) = _csv(alice_client.get(reverse("payment-export")))
    page = alice_client.get(reverse("payment-detail", args=[payment.pk])).content.decode()

    assert (row["fee"], row["fee_currency"]) == ("0.00", "NOK")
    assert row["status"] == "Cancelled" and row["status_code"] == "CANC"
    assert "75.00" not in page and "No fee: the payment was not carried out." in page


def test_csv_export_keeps_odd_digits_and_defuses_formulas(alice_client, alice):
    PaymentFactory(user=alice, creditor_name="=HYPERLINK(1)", amount=Decimal("10.125"), currency="EUR")
    PaymentFactory(user=alice, creditor_name="Yen KK", amount=Decimal("5000"), currency="JPY")

    rows = {r["currency"]: r for r in _csv(alice_client.get(reverse("payment-export")))}

    assert rows["EUR"]["creditor_name"] == "'=HYPERLINK(1)" and rows["EUR"]["amount"] == "10.125"
    assert rows["JPY"]["amount"] == "5000"


def test_csv_export_defuses_every_formula_start(alice_client, alice):
    for name in ("-1+2", "@SUM(A1)", "+47", "\uff1dcmd"):
        PaymentFactory(user=alice, creditor_name=name, amount=Decimal("1.00"), currency="NOK")

    names = sorted(r["creditor_name"] for r in _csv(alice_client.get(reverse("payment-export"))))

    assert names == sorted(["'-1+2", "'@SUM(A1)", "'+47", "'\uff1dcmd"])
