"""Who sees the admin: the staff roles made by the migration, every portal model's pages for each role, customers
refused, and Django's admin log recording changes."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Group
from django.urls import reverse

from payments.models import ExchangeRate
from tests.payments.conftest import make_rate

pytestmark = pytest.mark.django_db

PORTAL_APPS = {"users", "connections", "accounts", "payments", "staff", "tpp_portal"}
#: Pages of superusers only, in no role: staff's second factors (allauth.mfa's, shown by users.SecondFactor).
SUPERUSER_ONLY = {"users.SecondFactor"}


def url(model, view: str) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}")


def portal_admins() -> list[tuple[type, admin.ModelAdmin]]:
    return sorted(
        (
            (model, model_admin)
            for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in PORTAL_APPS and model._meta.label not in SUPERUSER_ONLY
        ),
        key=lambda pair: pair[0]._meta.label,
    )


def test_every_portal_model_has_an_admin():
    registered = {model for model, _ in portal_admins()} | {apps.get_model(label) for label in SUPERUSER_ONLY}
    inline_only = {
        "connections.ConnectionEvent",
        "connections.ConsentReminder",
        "payments.PaymentEvent",
        "payments.PaymentAuthorisation",
        "payments.PaymentMail",
        "users.MailSettings",
    }
    for app_label in PORTAL_APPS:
        for model in apps.get_app_config(app_label).get_models():
            assert model in registered or model._meta.label in inline_only, f"{model._meta.label} has no admin"


def test_the_roles_exist_with_view_only_for_support():
    support = {p.codename for p in Group.objects.get(name="support").permissions.all()}
    operators = {p.codename for p in Group.objects.get(name="operators").permissions.all()}
    assert {
        "view_payment",
        "view_paymentevent",
        "view_bankconnection",
        "view_bankcall",
        "view_bankaccount",
        "view_transaction",
        "view_refreshcall",
    } <= support
    assert all(code.startswith("view_") for code in support)
    assert support < operators
    assert {"change_payment", "change_bankconnection", "change_bankaccount", "change_exchangerate"} <= operators
    assert not any(code.startswith("delete_") for code in operators)


def one_of_each(user) -> None:
    """A row of every portal model, so that every column and field of every admin page is rendered."""
    from django.utils import timezone

    from accounts.ledger import reserve
    from accounts.models import BalanceSnapshot, RefreshKind, Transaction
    from connections.models import IdentityRefusal, PsuBinding, TppSession
    from core.models import CertificateCheck
    from tests.bank_factories import BankAccountFactory, ScaStateFactory
    from tests.payments.payment_factories import PaymentFactory, status_event
    from tests.staff.fixtures import bank_call
    from users.models import StaffInvitation

    account = BankAccountFactory(connection__user=user)
    now = timezone.now()
    BalanceSnapshot.objects.create(
        account=account, balance_type="expected", amount=1, currency="NOK", fetched_at=now
    )
    Transaction.objects.create(
        account=account,
        status="booked",
        amount=-1,
        currency="NOK",
        fingerprint="f",
        first_seen_at=now,
        updated_at=now,
    )
    reserve(account=account, kinds=(RefreshKind.BALANCES,))
    ScaStateFactory(user=user, connection=account.connection)
    TppSession.objects.create(user=user, session_id="s" * 43, started_at=now, sca_at=now)
    PsuBinding.objects.create(psu_id_hash="b" * 64, user=user)
    IdentityRefusal.objects.create(
        user=user, purpose="connect", reason=IdentityRefusal.Reason.PSU_ID_TAKEN, psu_id_hash="b" * 64
    )
    payment = PaymentFactory(user=user, connection=account.connection)
    status_event(payment, "RCVD")
    bank_call(obj=payment, user=user)
    make_rate("USD", "10.20")
    CertificateCheck.objects.create(name="bank_tls", source="bank.example:443", not_after=now, checked_at=now)
    StaffInvitation.objects.create(user=user, token_hash="c" * 64, created_at=now, expires_at=now)


def test_support_reads_every_portal_page_and_changes_none(support_client, alice):
    one_of_each(alice)
    for model, _ in portal_admins():
        listing = support_client.get(url(model, "changelist"))
        assert listing.status_code == 200, model
        (row, *_) = listing.context["cl"].result_list
        page = support_client.get(
            reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[row.pk])
        )
        assert page.status_code == 200 and not page.context["has_change_permission"], model
        assert support_client.get(url(model, "add")).status_code == 403, model


def test_operators_read_every_portal_page(operator_client):
    for model, _ in portal_admins():
        assert operator_client.get(url(model, "changelist")).status_code == 200, model


def test_the_roles_never_see_staffs_second_factors(support_client, operator_client):
    for label in SUPERUSER_ONLY:
        model = apps.get_model(label)
        for client in (support_client, operator_client):
            assert client.get(url(model, "changelist")).status_code == 403, label


def test_customers_and_visitors_never_see_the_admin(client, alice):
    urls = [reverse("admin:index")] + [url(model, "changelist") for model, _ in portal_admins()]
    for address in urls:
        response = client.get(address)
        assert response.status_code == 302 and reverse("admin:login") in response["Location"], address
    client.force_login(alice)
    for address in urls:
        # Refused where she asked (the product's 403 page), not sent to /admin/login/?next=... first.
        response = client.get(address)
        assert response.status_code == 403, address
        assert "Location" not in response, address
        assert b"<html" in response.content.lower() or b"<!doctype" in response.content.lower()


def test_a_customer_posting_to_the_admin_is_refused_without_a_redirect(client, alice):
    client.force_login(alice)
    response = client.post(reverse("admin:logout"))
    assert response.status_code == 403
    assert "Location" not in response


def test_the_admin_log_records_who_changed_and_added_a_rate(operator_client, operator):
    rate = make_rate("USD", "10.20")
    response = operator_client.post(
        reverse("admin:payments_exchangerate_change", args=[rate.pk]), {"rate": "10.35", "unit": "1"}
    )
    assert response.status_code == 302
    response = operator_client.post(
        reverse("admin:payments_exchangerate_add"),
        {"currency": "KES", "rate": "0.0785", "unit": "1", "rate_date": "2026-11-20", "source": "manual"},
    )
    assert response.status_code == 302

    changed, added = LogEntry.objects.order_by("action_time", "pk")
    assert (changed.user, changed.action_flag, changed.object_id) == (operator, CHANGE, str(rate.pk))
    assert "Rate" in changed.get_change_message()
    assert (added.user, added.action_flag) == (operator, ADDITION)
    assert ExchangeRate.objects.get(pk=rate.pk).rate == Decimal("10.35")
    # The history page shows the entries to staff.
    history = operator_client.get(reverse("admin:payments_exchangerate_history", args=[rate.pk]))
    assert history.status_code == 200 and "olivia.operator@example.com" in history.content.decode()


def test_support_cannot_change_a_rate(support_client):
    rate = make_rate("USD", "10.20")
    response = support_client.post(
        reverse("admin:payments_exchangerate_change", args=[rate.pk]), {"rate": "1", "unit": "1"}
    )
    assert response.status_code == 403
    assert ExchangeRate.objects.get(pk=rate.pk).rate == Decimal("10.20")
    assert not LogEntry.objects.exists()


def test_the_admin_index_links_to_the_dashboard_and_the_audit_log(support_client, charlie_client):
    page = support_client.get(reverse("admin:index")).content.decode()
    assert reverse("staff-dashboard") in page
    assert reverse("admin:tpp_portal_bankcall_changelist") in page
    # Staff without a role see neither (they could not open them).
    assert reverse("staff-dashboard") not in charlie_client.get(reverse("admin:index")).content.decode()


@pytest.mark.parametrize("page", ["admin:index", "staff-dashboard"])
def test_the_admin_index_and_the_dashboard_link_to_the_sandbox_area_of_a_sandbox_bank(
    settings, support_client, operator_client, page
):
    links = [reverse("sandbox_admin:customers"), reverse("sandbox_admin:clock")]
    settings.BANK_IS_SANDBOX = True
    for client in (support_client, operator_client):  # both roles may open the area (support only reads it)
        body = client.get(reverse(page)).content.decode()
        assert all(f'href="{link}"' in body for link in links), body
    settings.BANK_IS_SANDBOX = False  # another bank: the area is a 404, so no link
    body = support_client.get(reverse(page)).content.decode()
    assert not any(link in body for link in links)
