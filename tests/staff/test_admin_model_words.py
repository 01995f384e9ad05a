"""What the admin shows of the connection and account models in the staff member's language: their names
(``__str__``), the refusal reasons, the SCA purposes and the timeline's reasons were English whatever the
language (the page tour, tests/browser/test_tour.py, checks every admin page; these name the causes)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from accounts.models import BalanceSnapshot, RefreshCall, RefreshKind
from connections.models import ConnectionEvent, ConnectionState, IdentityRefusal, PsuBinding, ScaState, TppSession
from tests.bank_factories import BankAccountFactory, BankConnectionFactory

pytestmark = pytest.mark.django_db


def test_model_names_follow_the_language(alice):
    connection = BankConnectionFactory(user=alice)
    binding = PsuBinding.objects.get(user=alice)
    session = TppSession.objects.create(user=alice, session_id="s", started_at=timezone.now())
    refusal = IdentityRefusal.objects.create(user=alice, purpose="connect", reason=IdentityRefusal.Reason.MISMATCH)
    state = ScaState.objects.create(
        token="t" * 43,
        user=alice,
        session_key_hash="h",
        purpose="connect",
        context="PRIVATE",
        created_at=timezone.now(),
    )
    account = BankAccountFactory(connection=connection)
    call = RefreshCall.objects.create(
        account=account,
        resource_key="k",
        kind=RefreshKind.BALANCES,
        reserved_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    with translation.override("nb"):
        assert str(binding) == f"PSU-ID-kobling #{binding.pk} (bruker #{alice.pk})"
        assert str(session) == f"TPP-økt for bruker #{alice.pk}"
        assert str(refusal) == f"SCA gjort som en annen bankbruker eller avtale enn ventet (bruker #{alice.pk})"
        assert str(state) == f"SCA-tilstand #{state.pk}: Koble til en bank"
        assert str(call) == f"Saldoer for konto #{account.pk} 2026-01-02 00:00"
    with translation.override("en"):
        assert str(state) == f"SCA state #{state.pk}: Connect a bank"
        assert str(call) == f"Balances of account #{account.pk} at 2026-01-02 00:00"


def test_the_portals_timeline_reasons_are_translated_and_others_shown_as_stored(alice):
    connection = BankConnectionFactory(user=alice)
    now = timezone.now()
    ours = ConnectionEvent.objects.create(
        connection=connection,
        at=now,
        from_state="",
        to_state=ConnectionState.PENDING,
        reason="SCA completed: new connection",
    )
    staff = ConnectionEvent.objects.create(
        connection=connection,
        at=now,
        from_state=ConnectionState.PENDING,
        to_state=ConnectionState.ACTIVE,
        reason="staff: called by phone",
    )
    with translation.override("nb"):
        assert ours.reason_shown == "SCA fullført: ny bankforbindelse"
        assert str(ours) == "- til Venter på kontoer: SCA fullført: ny bankforbindelse"
        # the staff member's own words stay as they were written; the portal's around them are translated
        assert staff.reason_shown == "ansatte: called by phone"
        again = ConnectionEvent(reason="the bank asked for SCA again (CONSENT_EXPIRED)")
        assert again.reason_shown == "banken ba om SCA på nytt (CONSENT_EXPIRED)"
    assert again.reason_shown == "the bank asked for SCA again (CONSENT_EXPIRED)"


def test_balance_types_and_purposes_are_words_in_the_lists(support_client, alice):
    account = BankAccountFactory(connection=BankConnectionFactory(user=alice))
    BalanceSnapshot.objects.create(
        account=account, balance_type="expected", amount="10", currency="NOK", fetched_at=timezone.now()
    )
    ScaState.objects.create(
        token="u" * 43,
        user=alice,
        session_key_hash="h",
        purpose="payment",
        context="PRIVATE",
        created_at=timezone.now(),
    )
    support_client.cookies["django_language"] = "nb"
    balances = support_client.get(reverse("admin:accounts_balancesnapshot_changelist")).content.decode()
    assert "Saldo med betalinger på vei" in balances
    assert ">expected<" not in balances
    states = support_client.get(reverse("admin:connections_scastate_changelist")).content.decode()
    assert "Godkjenne en betaling" in states
    assert ">payment<" not in states
