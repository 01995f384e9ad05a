"""The audit log of bank calls in the admin: read-only, its columns and filters, the link from an object's page,
and no secret, signature or PSU identifier in clear on any page or export."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from connections.models import BankConnection
from core import bank as portal_bank
from core.models import BankCall
from staff.admin.bank_calls import bank_calls_url
from staff.admin.helpers import csv_safe, masked
from tests.bank_factories import BankConnectionFactory
from tests.bankfake import Answer
from tests.payments.payment_factories import PaymentFactory
from tests.staff.fixtures import PSU_CORPORATE_ID, PSU_ID, bank_call
from xs2a import errors
from xs2a.psu import PsuContext

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:tpp_portal_bankcall_changelist"


def listed(response) -> list[BankCall]:
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def page_text(response) -> str:
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def test_calls_made_through_the_client_are_listed_with_their_facts_and_no_identifier(
    own_seal_bank_settings, fake_bank, operator, operator_client, alice
):
    connection = BankConnectionFactory(
        user=alice, context="CORPORATE", psu_id=PSU_ID, psu_corporate_id=PSU_CORPORATE_ID
    )
    fake_bank.add(
        "GET",
        "/v1/accounts",
        Answer(
            401,
            {
                "tppMessages": [
                    {"category": "ERROR", "code": "CONSENT_EXPIRED", "text": f"Consent of {PSU_ID} expired"}
                ],
                "_links": {"scaRedirect": {"href": "https://bank.example/sca"}},
            },
        ),
    )
    client = portal_bank.bank_client()
    psu = PsuContext(psu_id=PSU_ID, corporate_id=PSU_CORPORATE_ID, context="CORPORATE", ip_address="198.51.100.7")
    with portal_bank.bank_audit_context(user=alice, obj=connection), pytest.raises(errors.ScaRequiredError):
        client.accounts.list(psu=psu)
    (sent,) = fake_bank.received
    call = BankCall.objects.get()

    listing = operator_client.get(reverse(CHANGELIST))
    assert listed(listing) == [call]
    html = listing.content.decode()
    assert "GET /v1/accounts" in html
    assert sent.headers["x-request-id"] in html
    assert "CONSENT_EXPIRED: Consent of [redacted] expired" in html
    assert f"bank connection #{connection.pk}" in html
    assert reverse("admin:connections_bankconnection_change", args=[connection.pk]) in html

    pages = {
        "list": html,
        "call": page_text(operator_client.get(reverse("admin:tpp_portal_bankcall_change", args=[call.pk]))),
        "connection": page_text(
            operator_client.get(reverse("admin:connections_bankconnection_change", args=[connection.pk]))
        ),
        "connections": page_text(operator_client.get(reverse("admin:connections_bankconnection_changelist"))),
        "export": page_text(
            operator_client.post(
                reverse(CHANGELIST), {"action": "export_csv", "_selected_action": [call.pk]}, follow=False
            )
        ),
    }
    secrets = {
        "PSU-ID": PSU_ID,
        "PSU-Corporate-ID": PSU_CORPORATE_ID,
        "PSU-IP-Address": "198.51.100.7",
        "signature": sent.headers["signature"][:40],
        "certificate": sent.headers["tpp-signature-certificate"][:40],
        "encrypted PSU-ID": BankConnection.objects.filter(pk=connection.pk).values_list("psu_id", flat=True)[0],
    }
    for page, text in pages.items():
        assert text, page
        for name, secret in secrets.items():
            assert secret not in text, f"{name} shown on the {page} page"
    # The connection page shows the identifiers masked instead.
    assert masked(PSU_ID) in pages["connection"] and masked(PSU_ID) != PSU_ID
    assert "GET /v1/accounts" in pages["export"] and sent.headers["x-request-id"] in pages["export"]


def test_nobody_adds_changes_or_deletes_a_call_not_even_a_superuser(client, django_user_model):
    superuser = django_user_model.objects.create_superuser("root@example.com", "root@example.com", "x" * 12)
    client.force_login(superuser)
    call = bank_call(status=500)
    change_url = reverse("admin:tpp_portal_bankcall_change", args=[call.pk])

    assert client.get(reverse("admin:tpp_portal_bankcall_add")).status_code == 403
    assert client.post(change_url, {"status": "200"}).status_code == 403
    assert (
        client.post(reverse("admin:tpp_portal_bankcall_delete", args=[call.pk]), {"post": "yes"}).status_code
        == 403
    )
    page = client.get(change_url)
    assert page.status_code == 200 and not page.context["has_change_permission"]
    listing = client.get(reverse(CHANGELIST))
    assert "delete_selected" not in listing.content.decode()
    client.post(reverse(CHANGELIST), {"action": "delete_selected", "_selected_action": [call.pk], "post": "yes"})
    call.refresh_from_db()
    assert call.status == 500


def test_filters_by_status_class_operation_user_and_date(operator_client, alice, bob):
    now = timezone.now()
    ok = bank_call(status=200, user=alice)
    redirect = bank_call(status=302)
    refused = bank_call(status=400, method="POST", path="/v1/consents", user=bob)
    limited = bank_call(status=429, user=alice)
    failed = bank_call(status=503, path="/v1/accounts/{account_id}/balances")
    unanswered = bank_call(status=None, error="TransportError")
    unsigned = bank_call(status=200, error="ResponseSignatureError")
    old = bank_call(status=200, started_at=now - timedelta(days=3))
    url = reverse(CHANGELIST)

    def only(**params) -> set[int]:
        return {call.pk for call in listed(operator_client.get(url, params))}

    assert only(status_class="2xx") == {ok.pk, old.pk, unsigned.pk}
    assert only(status_class="3xx") == {redirect.pk}
    assert only(status_class="4xx") == {refused.pk, limited.pk}
    assert only(status_class="429") == {limited.pk}
    assert only(status_class="5xx") == {failed.pk}
    assert only(status_class="none") == {unanswered.pk}
    assert only(status_class="rejected") == {unsigned.pk}
    assert only(operation="POST /v1/consents") == {refused.pk}
    assert only(operation="GET /v1/accounts/{account_id}/balances") == {failed.pk}
    assert only(user=alice.pk) == {ok.pk, limited.pk}
    assert only(user="none") == {redirect.pk, failed.pk, unanswered.pk, unsigned.pk, old.pk}
    assert only(started_at__gte=(now - timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S%z")) == (
        {ok.pk, redirect.pk, refused.pk, limited.pk, failed.pk, unanswered.pk, unsigned.pk}
    )
    assert only(q=refused.request_id) == {refused.pk}
    assert only(q="bob@example.com") == {refused.pk}

    # Every offered operation is one of the recorded ones, and the no-answer row says why.
    specs = operator_client.get(url).context["cl"].filter_specs
    offered = next(spec for spec in specs if getattr(spec, "parameter_name", "") == "operation").lookup_choices
    assert [value for value, _ in offered] == [
        "GET /v1/accounts",
        "GET /v1/accounts/{account_id}/balances",
        "POST /v1/consents",
    ]
    users = next(spec for spec in specs if getattr(spec, "parameter_name", "") == "user").lookup_choices
    assert [label for _, label in users] == ["the portal itself (no user)", "alice@example.com", "bob@example.com"]
    # The error is quoted as the client library named it: marked as not for translation on the page, plain in CSV.
    unanswered_page = operator_client.get(url, {"status_class": "none"}).content.decode()
    assert 'no answer (<span translate="no">TransportError</span>)' in unanswered_page
    rejected = operator_client.get(url, {"status_class": "rejected"}).content.decode()
    assert '200, not accepted (<span translate="no">ResponseSignatureError</span>)' in rejected
    export = {"action": "export_csv", "_selected_action": [unanswered.pk, unsigned.pk]}
    exported = operator_client.post(url, export)
    text = b"".join(exported.streaming_content).decode("utf-8-sig")
    cells = {cell for row in csv.reader(io.StringIO(text)) for cell in row}
    assert {"no answer (TransportError)", "200, not accepted (ResponseSignatureError)"} <= cells


def test_a_payment_and_a_connection_link_to_their_own_calls(operator_client, alice):
    payment = PaymentFactory(user=alice)
    connection = BankConnectionFactory(user=alice)
    mine = [bank_call(obj=payment), bank_call(obj=payment, status=404)]
    bank_call(obj=connection)
    bank_call()

    page = operator_client.get(reverse("admin:payments_payment_change", args=[payment.pk])).content.decode()
    link = bank_calls_url(payment)
    assert link.replace("&", "&amp;") in page or link in page
    assert "2 bank calls" in page
    assert {call.pk for call in listed(operator_client.get(link))} == {call.pk for call in mine}

    connection_page = operator_client.get(reverse("admin:connections_bankconnection_change", args=[connection.pk]))
    assert "1 bank call<" in connection_page.content.decode()
    assert len(listed(operator_client.get(bank_calls_url(connection)))) == 1
    # A malformed object filter lists nothing rather than everything.
    assert listed(operator_client.get(reverse(CHANGELIST), {"concerning": "nonsense"})) == []


def test_support_reads_the_log_and_customers_and_bare_staff_cannot(support_client, client, alice, charlie):
    bank_call()
    assert support_client.get(reverse(CHANGELIST)).status_code == 200
    client.force_login(charlie)
    assert client.get(reverse(CHANGELIST)).status_code == 403  # staff without a role
    client.force_login(alice)
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 403 and "Location" not in response  # refused where asked
    assert not LogEntry.objects.exists()  # reading changes nothing


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-1+2", "'-1+2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\uff1dSUM(A1)", "'\uff1dSUM(A1)"),
        ("plain", "plain"),
        ("<b>Tom &amp; Jerry</b>", "Tom & Jerry"),
        (None, ""),
        (True, "yes"),
    ],
)
def test_csv_cells_are_defused_and_exact(value, cell):
    assert csv_safe(value) == cell


def test_csv_numbers_stay_exact():
    from decimal import Decimal

    assert csv_safe(Decimal("-1250.50000")) == "-1250.50000"
    assert csv_safe(-3) == "-3"
