"""The attacks of the trust-boundary issue against the SCA callback, each as it was tried, with the bank stood in
by tests/bankfake.py's fake bank behind the portal's own client. Each test names the attack; each failed on the
code before the fix (the PSU-ID was stored from the address, the PSU-Corporate-ID too, a failure link spent the
approval and wrote its text into the payment's timeline, amounts in other digits and dates in year 9999 were
accepted).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import date, timedelta

import pytest
from django.utils import timezone

from accounts.models import BankAccount
from connections import sca as connection_sca
from connections import services as connection_services
from connections.models import BankConnection, ConnectionState, IdentityRefusal, PsuBinding, ScaState
from core.bank import CALLBACK_PATH
from payments.forms_fields import AmountField
from payments.models import PaymentAuthorisation, PaymentEvent
from payments.validators import latest_execution_date, validate_execution_date
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory, ScaStateFactory, callback_params
from tests.payments.payment_factories import PaymentFactory
from xs2a.psu import PsuContext

pytestmark = pytest.mark.django_db


_ASKED = {("GET", "/v1/accounts"): "accounts", ("GET", "/v1/agreements"): "agreements"}


def _asked(fake_bank) -> list[tuple[str, str | None]]:
    """What the bank was asked for, by PSU-ID: ("accounts" or "agreements", the PSU-ID sent)."""
    return [
        (_ASKED[(r.method, r.path)], r.headers.get("psu-id"))
        for r in fake_bank.received
        if (r.method, r.path) in _ASKED
    ]


def _started(user, client, **fields) -> ScaState:
    """An SCA that ``user`` started in ``client``'s browser session (as the connect page stores it)."""
    key_hash = hashlib.sha256(client.session.session_key.encode()).hexdigest()
    return ScaStateFactory(user=user, session_key_hash=key_hash, **fields)


def _account(name: str) -> dict:
    return bankfake.account(f"enc!!{name}=", iban="NO9386011117947", currency="NOK", name=name)


# --- 1. another customer's accounts through a swapped psu-id -----------------------------------------------


def test_a_psu_id_of_another_portal_user_is_refused_recorded_and_never_reaches_the_second_user(
    fake_bank, alice, bob, alice_client
):
    victim = BankConnectionFactory(user=bob)
    BankAccountFactory(connection=victim, name="Bobs sparekonto")
    fake_bank.accounts_of[victim.psu_id] = [_account("Bobs sparekonto")]
    state = _started(alice, alice_client)

    # alice did SCA as herself, then swapped bob's PSU-ID into the address before following it back.
    response = alice_client.get(
        CALLBACK_PATH, {**callback_params(state), "psu-id": victim.psu_id.upper(), "context": "PRIVATE"}
    )

    assert response.status_code == 400
    assert not BankConnection.objects.filter(user=alice).exists()
    assert not BankAccount.objects.filter(connection__user=alice).exists()
    # The bank was never asked with bob's PSU-ID for alice, not even to confirm it: it is bob's already.
    assert ("accounts", victim.psu_id) not in _asked(fake_bank) and ("agreements", victim.psu_id) not in _asked(
        fake_bank
    )
    refusal = IdentityRefusal.objects.get()
    assert (refusal.user, refusal.bound_to, refusal.reason) == (alice, bob, IdentityRefusal.Reason.PSU_ID_TAKEN)
    assert "Bobs sparekonto" not in alice_client.get("/bank/accounts/").content.decode()
    assert PsuBinding.objects.get(psu_id_hash=victim.psu_id_hash).user == bob


def test_a_disconnected_psu_id_stays_its_users(fake_bank, alice, bob, alice_client):
    """Disconnecting does not free the PSU-ID: the consent behind it may live on at the bank."""
    victim = BankConnectionFactory(user=bob)
    psu_id = victim.psu_id
    fake_bank.accounts_of[psu_id] = [_account("Bobs sparekonto")]
    connection_services.connection_disconnect(
        connection=victim, actor=bob, presence=PsuContext(ip_address="192.0.2.7")
    )
    assert BankConnection.objects.get(pk=victim.pk).state == ConnectionState.DISCONNECTED
    state = _started(alice, alice_client)

    response = alice_client.get(CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"})

    assert response.status_code == 400 and not BankConnection.objects.filter(user=alice).exists()
    assert IdentityRefusal.objects.get().bound_to == bob


def test_the_owner_of_a_psu_id_connects_with_it(fake_bank, alice, alice_client):
    """The check refuses others, not the PSU itself: its first SCA binds the PSU-ID, a later one renews."""
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    for _ in range(2):
        state = _started(alice, alice_client)
        response = alice_client.get(
            CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id, "context": "PRIVATE"}
        )
        assert response.status_code == 302
    connection = BankConnection.objects.get(user=alice)
    assert connection.state == ConnectionState.ACTIVE and connection.accounts.get().name == "Brukskonto"
    assert PsuBinding.objects.get().user == alice and not IdentityRefusal.objects.exists()


# --- 2. another company's payments through a forged psu-corporate-id ---------------------------------------


def test_a_corporate_id_the_bank_does_not_list_for_the_psu_is_refused_and_stores_nothing(
    fake_bank, alice, alice_client
):
    own_psu_id, company = str(uuid.uuid4()), str(uuid.uuid4())
    fake_bank.agreements_of[own_psu_id] = [bankfake.agreement(str(uuid.uuid4()), "Alices ENK")]
    state = _started(alice, alice_client, context="CORPORATE")

    response = alice_client.get(
        CALLBACK_PATH,
        {**callback_params(state), "psu-id": own_psu_id, "context": "CORPORATE", "psu-corporate-id": company},
    )

    assert response.status_code == 400
    assert ("agreements", own_psu_id) in _asked(fake_bank)
    assert not BankConnection.objects.exists()
    assert IdentityRefusal.objects.get().reason == IdentityRefusal.Reason.CORPORATE_ID_UNCONFIRMED


def test_a_corporate_id_the_bank_lists_is_kept_with_its_name(fake_bank, alice, alice_client):
    own_psu_id, company = str(uuid.uuid4()), str(uuid.uuid4())
    fake_bank.agreements_of[own_psu_id] = [bankfake.agreement(company.upper(), "Havbruk Nord AS")]
    fake_bank.accounts_of[own_psu_id] = [_account("Driftskonto")]
    state = _started(alice, alice_client, context="CORPORATE")

    response = alice_client.get(
        CALLBACK_PATH,
        {**callback_params(state), "psu-id": own_psu_id, "context": "CORPORATE", "psu-corporate-id": company},
    )

    assert response.status_code == 302
    connection = BankConnection.objects.get(user=alice)
    assert connection.psu_corporate_id == company and connection.agreement_name == "Havbruk Nord AS"


def test_company_payments_are_visible_only_through_an_active_corporate_connection(alice, bob, alice_client):
    company = str(uuid.uuid4())
    payer = BankConnectionFactory(user=bob, context="CORPORATE", psu_corporate_id=company)
    from connections.crypto import lookup_hash

    BankConnection.objects.filter(pk=payer.pk).update(psu_corporate_id_hash=lookup_hash(company))
    payment = PaymentFactory(user=bob, context="CORPORATE", connection=payer, transaction_status="PATC")
    pending = BankConnectionFactory(
        user=alice,
        context="CORPORATE",
        state=ConnectionState.PENDING,
        psu_corporate_id=company,
        psu_corporate_id_hash=lookup_hash(company),
    )

    for path in (f"/payments/{payment.pk}/", "/payments/export.csv", "/payments/"):
        response = alice_client.get(path)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert payment.creditor_name not in body.decode(), path
    assert alice_client.get(f"/payments/{payment.pk}/").status_code == 404

    BankConnection.objects.filter(pk=pending.pk).update(state=ConnectionState.ACTIVE)
    assert alice_client.get(f"/payments/{payment.pk}/").status_code == 200  # a co-signer of the company


# --- 5. a cross-site link decides a payment's approval ----------------------------------------------------


def test_a_failure_link_changes_no_payment_spends_no_state_and_shows_none_of_its_text(
    fake_bank, alice, alice_client, monkeypatch
):
    connection = BankConnectionFactory(user=alice)
    payment = PaymentFactory(user=alice, connection=connection)
    state = _started(alice, alice_client, purpose="payment", connection=connection)
    PaymentAuthorisation.objects.create(payment=payment, signer=alice, sca_state=state, started_at=timezone.now())
    asked = []
    monkeypatch.setattr("payments.services.polling.payment_poll", lambda **kw: asked.append(kw))
    events = PaymentEvent.objects.count()

    link = {"code": "SCA_INVALID", "status": "401", "message": "Your payment is blocked: call +47 400 00 000"}
    response = alice_client.get(CALLBACK_PATH, link)

    assert response.status_code == 200 and "+47 400 00 000" not in response.content.decode()
    assert asked and asked[0]["payment_id"] == payment.pk  # the real status is asked from the bank
    state.refresh_from_db()
    assert state.used_at is None and PaymentEvent.objects.count() == events
    authorisation = PaymentAuthorisation.objects.get()
    assert authorisation.failed_at is None and authorisation.failure == ""
    # The bank's real success redirect, which came after the link, is still taken.
    monkeypatch.setattr("payments.services.polling.poll_soon", lambda payment: None)
    back = alice_client.get(
        CALLBACK_PATH, {**callback_params(state), "psu-id": connection.psu_id, "context": "PRIVATE"}
    )
    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"


# --- 8. input that looked like a number, a date nobody means, an upper-case UUID ----------------------------


ARABIC_INDIC_1000 = "\u0661\u0660\u0660\u0660"
FULL_WIDTH_1000 = "\uff11\uff10\uff10\uff10"


@pytest.mark.parametrize("typed", ["1_000", ARABIC_INDIC_1000, FULL_WIDTH_1000, "1e5", "NaN", "Infinity", "0x10"])
def test_amounts_are_ascii_digits_only(typed):
    from django.core.exceptions import ValidationError

    field = AmountField(max_digits=18, decimal_places=2)
    with pytest.raises(ValidationError) as refused:
        field.clean(typed)
    assert refused.value.code in {"not_digits", "invalid"}


@pytest.mark.parametrize("typed", ["150000", "150 000", "1 250.50", ".5"])
def test_amounts_people_type_still_pass(typed):
    assert AmountField(max_digits=18, decimal_places=2).clean(typed) > 0


def test_execution_dates_beyond_what_the_bank_accepts_are_refused_first():
    from django.core.exceptions import ValidationError

    today = date(2026, 11, 25)
    validate_execution_date(latest_execution_date(today), today=today)
    for too_far in (latest_execution_date(today) + timedelta(days=1), date(9999, 12, 31)):
        with pytest.raises(ValidationError) as refused:
            validate_execution_date(too_far, today=today)
        assert refused.value.code == "execution_date_too_far"
    assert latest_execution_date(date(2028, 2, 29)) == date(2029, 2, 28)


def test_an_upper_case_uuid_in_the_callback_is_read_as_the_same_uuid(fake_bank, alice, alice_client):
    psu_id = str(uuid.uuid4())
    fake_bank.accounts_of[psu_id] = [_account("Brukskonto")]
    state = _started(alice, alice_client)

    response = alice_client.get(
        CALLBACK_PATH, {**callback_params(state), "psu-id": psu_id.upper(), "context": "PRIVATE"}
    )

    assert response.status_code == 302
    assert BankConnection.objects.get(user=alice).psu_id == psu_id
    assert connection_sca.psu_bind(user=alice, psu_id=psu_id.upper()) is None  # the same identity
