"""Staff see the exchange rates and edit one; the admin records who edited it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from payments.models import ExchangeRate, ExchangeRateSource
from payments.rates import FetchedRate
from payments.services.exchange_rates import exchange_rates_store
from tests.payments.conftest import TODAY, make_rate

pytestmark = pytest.mark.django_db


@pytest.fixture
def rate_admin(charlie, client):
    charlie.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_exchangerate", "change_exchangerate", "add_exchangerate"])
    )
    client.force_login(charlie)
    return client


def test_the_list_filters_by_currency_source_and_date(rate_admin):
    make_rate("USD", "10.20")
    url = reverse("admin:payments_exchangerate_changelist")
    page = rate_admin.get(url, {"currency": "USD", "source__exact": ExchangeRateSource.NORGES_BANK})
    assert page.status_code == 200
    rows = list(page.context["cl"].queryset)
    assert [(r.currency, r.source) for r in rows] == [("USD", ExchangeRateSource.NORGES_BANK)]
    assert rate_admin.get(url, {"rate_date__year": "2026"}).status_code == 200


def test_staff_edit_records_who_and_keeps_the_identity(rate_admin, charlie):
    row = make_rate("USD", "10.20")
    url = reverse("admin:payments_exchangerate_change", args=[row.pk])
    response = rate_admin.post(url, {"rate": "10.35", "unit": "1", "currency": "EUR", "source": "seed"})
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    row.refresh_from_db()
    assert (row.rate, row.currency, row.source) == (Decimal("10.35"), "USD", ExchangeRateSource.NORGES_BANK)
    assert row.updated_by == charlie and row.updated_at is not None
    # The next fetch keeps the staff member's figure.
    exchange_rates_store(rates=[FetchedRate("USD", TODAY, Decimal("10.21"), 1)])
    row.refresh_from_db()
    assert row.rate == Decimal("10.35")


def test_staff_add_a_manual_rate(rate_admin, charlie):
    url = reverse("admin:payments_exchangerate_add")
    response = rate_admin.post(
        url, {"currency": "KES", "rate": "0.0785", "unit": "1", "rate_date": "2026-11-20", "source": "manual"}
    )
    assert response.status_code == 302
    row = ExchangeRate.objects.get(currency="KES")
    assert (row.source, row.updated_by) == (ExchangeRateSource.MANUAL, charlie)


def test_a_currency_outside_the_banks_list_is_refused(rate_admin):
    url = reverse("admin:payments_exchangerate_add")
    response = rate_admin.post(
        url, {"currency": "BYN", "rate": "3.1", "unit": "1", "rate_date": "2026-11-20", "source": "manual"}
    )
    assert response.status_code == 200
    assert "currency" in response.context["adminform"].form.errors
    assert not ExchangeRate.objects.filter(currency="BYN").exists()


def test_customers_cannot_reach_the_rates_admin(alice_client):
    response = alice_client.get(reverse("admin:payments_exchangerate_changelist"))
    assert response.status_code == 403  # refused where asked, not sent to the admin's sign-in
