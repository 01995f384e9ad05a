"""Payment initiation without the bank process: drafts, the one submission, what each kind of bank failure
leaves behind, reconciliation (replay of the same request), the start of authorisation, the SCA callback of a
payment, and who may open the initiation pages. The bank is a stand-in client with the real error classes."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.utils import timezone

from connections import sca as connection_sca
from connections.errors import IdentityMismatch, ScaStateRejected
from connections.models import BankConnection, ConnectionAccess, ScaState
from connections.sca import CallbackParams, session_key_hash
from payments.forms import DomesticPaymentForm
from payments.forms_review import PaymentSubmitForm
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from payments.services import initiation_call, reconciliation, submission
from payments.services.authorisation import (
    PAYMENT_PURPOSE,
    AuthorisationNotStarted,
    authorisation_start,
    payment_sca_accept,
)
from payments.services.drafts import payment_draft_create
from tests import bankfake
from tests.bank_factories import BankAccountFactory, BankConnectionFactory
from xs2a.errors import OutcomeUnknownError, ResponseSignatureOutcomeUnknownError, ServerOutcomeUnknownError
from xs2a.psu import PsuContext

PRESENCE = PsuContext(ip_address="192.0.2.10", user_agent="pytest", http_method="POST")
SESSION = "a" * 32


INITIATE = "/v1/payments/{product}"
START = "/v1/payments/{product}/{paymentId}/authorisations"


class Initiations:
    """The bank's answers to initiations on the fake bank: first the queued ``failures`` (answers, or callables
    taking the request), then a new payment each (paymentId enc!!pay-N=, RCVD, a fee, its status and
    startAuthorisation links) with the fields of ``answer`` over it. ``initiations`` and ``authorisations`` are
    the initiations and starts of authorisation the bank received."""

    def __init__(self, fake_bank) -> None:
        self.fake_bank = fake_bank
        self.failures: list = []
        self.made = 0
        self.answer: dict = {}  # replaces fields of the initiation answer (transactionStatus, scaStatus, _links)

    def __call__(self, received) -> bankfake.Answer:
        if self.failures:
            failure = self.failures.pop(0)
            return failure(received) if callable(failure) else failure
        return self.payment_made()

    def payment_made(self) -> bankfake.Answer:
        self.made += 1
        body = {
            "paymentId": f"enc!!pay-{self.made}=",
            "transactionStatus": "RCVD",
            "transactionFees": {"amount": "50.00", "currency": "NOK"},
            "transactionFeeIndicator": True,
            "_links": {
                "status": {"href": "/v1/payments/p/x/status"},
                "startAuthorisation": {"href": "/v1/payments/p/x/authorisations", "verbs": ["POST"]},
            },
            **self.answer,
        }
        return bankfake.Answer(201, body)

    @property
    def initiations(self):
        return self.fake_bank.sent("POST", INITIATE)

    @property
    def authorisations(self):
        return self.fake_bank.sent("POST", START)


def _bank(fake_bank, *, start=None) -> Initiations:
    """The bank initiates payments (``Initiations``), starts their authorisation with a scaRedirect (or answers
    ``start``), and answers the SCA callback's read of the PSU's agreements with none (a private PSU)."""
    initiations = Initiations(fake_bank)
    fake_bank.add("POST", INITIATE, initiations)
    started = bankfake.authorisation("http://bank.test/sca/1", sca_status="started")
    fake_bank.add("POST", START, start or bankfake.Answer(201, started))
    fake_bank.add("GET", "/v1/agreements", bankfake.agreements_list())
    return initiations


def _psu(received) -> dict[str, str]:
    """The PSU headers of a request (PSU-ID, PSU-IP-Address, X-PSU-IDENTITY and the like)."""
    return {k: v for k, v in received.headers.items() if k.startswith(("psu-", "x-psu-"))}


@pytest.fixture
def connection(alice):
    return BankConnectionFactory(user=alice)


@pytest.fixture
def draft(alice, connection) -> Payment:
    return _draft(alice, connection)


def _draft(user, connection, **changes) -> Payment:
    body = {
        "instructedAmount": {"amount": "150000.00", "currency": "NOK"},
        "creditorName": "Müller Maschinenbau GmbH",
        "creditorAccount": {"iban": "DE89370400440532013000", "currency": "NOK"},
        "debtorAccount": {"iban": "NO9386011117947", "currency": "NOK"},
        "regulatoryReportingCode": "29",
        "regulatoryReportingInformation": "Engineering services",
    }
    fields = {
        "user": user,
        "connection": connection,
        "product": "norwegian-cross-border-credit-transfers",
        "context": "PRIVATE",
        "state": PaymentState.DRAFT,
        "idempotency_key": uuid.uuid4(),
        "request_id": uuid.uuid4(),
        "body_json": json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        "amount": Decimal("150000.00"),
        "currency": "NOK",
        "debtor_account": "NO9386011117947",
        "creditor_name": "Müller Maschinenbau GmbH",
        "creditor_account": "DE89370400440532013000",
    }
    fields.update(changes)
    return Payment.objects.create(**fields)


def _submit(payment, user, **kwargs):
    return submission.payment_submit(
        payment=payment, user=user, idempotency_key=str(payment.idempotency_key), presence=PRESENCE, **kwargs
    )


# --- submission ----------------------------------------------------------------------------------------------


def test_the_stored_bytes_are_what_is_sent(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    outcome = _submit(draft, alice)

    (call,) = bank.initiations
    assert call.body == draft.body_json.encode("utf-8")
    assert call.headers["x-request-id"] == str(draft.request_id)
    assert call.headers["psu-id"] == draft.connection.psu_id
    assert call.params["allowLogicalDuplicate"] == "false" and "x-psu-identity" not in call.headers
    assert outcome.payment.state == PaymentState.INITIATED and outcome.payment.payment_id == "enc!!pay-1="
    assert outcome.payment.fee_amount == Decimal("50.00") and outcome.payment.links["status"]


def test_a_second_submit_calls_nothing(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    _submit(draft, alice)
    again = _submit(Payment.objects.get(pk=draft.pk), alice)

    assert again.duplicate_submit and len(bank.initiations) == 1
    assert PaymentEvent.objects.filter(payment=draft, kind=PaymentEventKind.SUBMITTED).count() == 1


def test_a_submit_costs_eight_queries_with_the_claim_committed_on_its_own(
    fake_bank, alice, connection, django_assert_num_queries
):
    """The portal's part of an initiation, counted: the check for a payment alike of unknown outcome (an
    EXISTS), the TPP session, the claim (one UPDATE, committed on its own before the call), then one transaction
    (a savepoint here, as the test runs inside one) with the audit row, the answer and the two timeline events.
    A query more is a cost on every payment (issue #32: the portal's CPU per initiation)."""
    from core.models import BankCall

    bank = _bank(fake_bank)
    _submit(_draft(alice, connection, amount=Decimal("1.00")), alice)  # the TPP session and caches made
    draft = _draft(alice, connection)

    with django_assert_num_queries(8) as captured:
        outcome = _submit(draft, alice)

    sql = [query["sql"] for query in captured.captured_queries]
    claim = next(i for i, text in enumerate(sql) if text.startswith("UPDATE"))
    assert '"submitted_at"' in sql[claim] and "SAVEPOINT" not in " ".join(sql[: claim + 1])
    assert sql[claim + 1].startswith("SAVEPOINT") and sql[-1].startswith("RELEASE SAVEPOINT")
    assert outcome.payment.state == PaymentState.INITIATED and len(bank.initiations) == 2
    kinds = list(PaymentEvent.objects.filter(payment=draft).order_by("pk").values_list("kind", flat=True))
    assert kinds == [PaymentEventKind.SUBMITTED, PaymentEventKind.STATUS]
    assert BankCall.objects.filter(object_id=str(draft.pk), status=201).count() == 1


def test_a_stale_key_or_another_users_payment_is_not_submitted(fake_bank, draft, alice, bob):
    bank = _bank(fake_bank)
    with pytest.raises(submission.PaymentNotSubmittable):
        submission.payment_submit(payment=draft, user=alice, idempotency_key=str(uuid.uuid4()), presence=PRESENCE)
    with pytest.raises(submission.PaymentNotSubmittable):
        _submit(draft, bob)
    assert not bank.initiations and Payment.objects.get(pk=draft.pk).state == PaymentState.DRAFT


def _signed_for_another_request(received) -> bankfake.Answer:
    """The bank's 201, signed with its seal for another X-Request-ID: a portal that verifies refuses it."""
    seal = bankfake.development_seal(settings.PKI_DIR)
    created = bankfake.payment_initiated("enc!!pay-0=", product="norwegian-cross-border-credit-transfers")
    return bankfake.signed_answer(seal, received, created, status=201, request_id=str(uuid.uuid4()))


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (bankfake.lost(), OutcomeUnknownError),  # the connection broke after the request was sent
        (bankfake.error(500, "INTERNAL_SERVER_ERROR", "bank failed"), ServerOutcomeUnknownError),
        # An answer the client refused (signed for another request, or days ago): the bank had the request.
        (_signed_for_another_request, ResponseSignatureOutcomeUnknownError),
    ],
    ids=["lost", "500", "refused-signature"],
)
def test_a_lost_answer_is_outcome_unknown_with_the_replay_kept_encrypted(
    fake_bank, draft, alice, settings, answer, error
):
    from core.bank import bank_client
    from core.models import BankCall

    settings.BANK_RESPONSE_CERT = settings.PKI_DIR / "bank-signing.pem"  # the portal verifies the bank's seal
    bank_client.cache_clear()
    bank = _bank(fake_bank)
    bank.failures.append(answer)

    outcome = _submit(draft, alice)

    payment = outcome.payment
    assert payment.state == PaymentState.OUTCOME_UNKNOWN and payment.payment_id == ""
    assert payment.reconcile_at is not None and outcome.message
    stored = json.loads(payment.initiation_psu)
    assert stored["ip_address"] == "192.0.2.10" and stored["psu_id"] == draft.connection.psu_id
    raw = Payment.objects.filter(pk=payment.pk).values_list("initiation_psu", flat=True)
    from django.db import connection as db

    with db.cursor() as cursor:
        cursor.execute("SELECT initiation_psu FROM payments_payment WHERE id = %s", [payment.pk])
        (column,) = cursor.fetchone()
    assert "192.0.2.10" not in column and list(raw)  # encrypted at rest
    (call,) = BankCall.objects.all()
    assert call.error == error.__name__


def test_not_delivered_leaves_a_draft_that_may_be_sent_again(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    bank.failures.append(bankfake.lost(sent=False))  # the connection was refused: nothing was sent

    outcome = _submit(draft, alice)

    assert outcome.payment.state == PaymentState.DRAFT and outcome.message
    assert outcome.payment.initiation_psu == ""
    again = _submit(outcome.payment, alice)
    assert again.payment.state == PaymentState.INITIATED and len(bank.initiations) == 2
    assert {c.headers["x-request-id"] for c in bank.initiations} == {str(draft.request_id)}


def test_a_refusal_maps_the_banks_paths_to_fields(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    bank.failures.append(
        bankfake.refusal(
            400,
            ("FORMAT_ERROR", "creditorAccount.iban", "creditorAccount.iban is not valid."),
            ("FORMAT_ERROR", "somethingElse", "Another problem."),
        )
    )

    outcome = _submit(draft, alice)

    assert outcome.payment.state == PaymentState.REFUSED
    assert outcome.field_errors == {"creditor_account": ["creditorAccount.iban is not valid."]}
    assert outcome.errors == ["Another problem."]
    assert outcome.payment.payment_id == "" and outcome.payment.initiation_psu == ""


def test_single_sca_needs_the_identity_number_and_sends_it_as_x_psu_identity(fake_bank, alice):
    bank = _bank(fake_bank)
    payment = _draft(alice, None)
    with pytest.raises(submission.PaymentNotSubmittable) as missing:
        _submit(payment, alice)
    assert missing.value.field == "national_identity_number" and not bank.initiations

    outcome = _submit(payment, alice, national_identity_number="13039319955")

    (call,) = bank.initiations
    assert call.headers["x-psu-identity"] == "13039319955" and "psu-id" not in call.headers
    assert call.headers["psu-context"] == "PRIVATE"
    assert outcome.payment.psu_identity == ""


OSLO = ZoneInfo("Europe/Oslo")


# --- reconciliation ------------------------------------------------------------------------------------------


def _unknown(bank, draft, alice) -> Payment:
    bank.failures.append(bankfake.lost())
    payment = _submit(draft, alice).payment
    assert payment.replay_not_before > timezone.now()  # not replayed while the first may still be on its way
    Payment.objects.filter(pk=payment.pk).update(
        reconcile_at=timezone.now() - timedelta(seconds=1), replay_not_before=None
    )
    return payment


def test_reconciliation_replays_the_same_request(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    payment = _unknown(bank, draft, alice)

    outcome = reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)

    first, replay = bank.initiations
    assert replay.headers["x-request-id"] == first.headers["x-request-id"] and replay.body == first.body
    assert replay.headers["tpp-session-id"] == first.headers["tpp-session-id"] and _psu(replay) == _psu(first)
    assert outcome.state == PaymentState.INITIATED
    payment.refresh_from_db()
    assert payment.payment_id == "enc!!pay-1=" and payment.reconcile_at is None and payment.initiation_psu == ""
    assert payment.events.filter(kind=PaymentEventKind.RECONCILED).count() == 1


def test_a_check_waits_for_the_backoff_and_the_background_never_replays(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    payment = _unknown(bank, draft, alice)
    Payment.objects.filter(pk=payment.pk).update(replay_not_before=timezone.now() + timedelta(minutes=1))

    assert not reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE).attempted
    assert reconciliation.reconciliation_check(payment_id=payment.pk) == PaymentState.OUTCOME_UNKNOWN
    assert len(bank.initiations) == 1  # neither replayed
    payment.refresh_from_db()
    assert payment.reconcile_at == reconciliation.replay_window_end(payment)  # the background looks again then


@pytest.mark.parametrize("answer", ["503", "429", "lost"])
def test_a_replay_without_an_answer_keeps_checking_with_backoff_then_goes_to_staff(
    fake_bank, draft, alice, answer
):
    """A 429 or 5xx on a replay is "not now", not the end of checking: the next check waits for the backoff or
    the bank's Retry-After; after the replay window nothing is replayed and the payment goes to staff."""
    bank = _bank(fake_bank)
    payment = _unknown(bank, draft, alice)
    before = []
    for _attempt in range(3):
        bank.failures.append(
            {
                "503": bankfake.error(503, "SERVICE_UNAVAILABLE", "busy"),
                "429": bankfake.error(429, "ACCESS_EXCEEDED", "slow down", headers={"Retry-After": "3600"}),
                "lost": bankfake.lost(),
            }[answer]
        )
        outcome = reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)
        payment.refresh_from_db()
        assert outcome.attempted and outcome.state == payment.state == PaymentState.OUTCOME_UNKNOWN
        assert payment.replay_not_before > timezone.now()
        if answer == "429":
            assert payment.replay_not_before > timezone.now() + timedelta(minutes=59)  # Retry-After respected
        before.append(payment.replay_not_before - timezone.now())
        Payment.objects.filter(pk=payment.pk).update(replay_not_before=None)
    if answer != "429":
        assert before == sorted(before)  # slower each time

    Payment.objects.filter(pk=payment.pk).update(
        submitted_at=timezone.now() - settings.PAYMENT_REPLAY_WINDOW - timedelta(seconds=1)
    )
    late = reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)

    payment.refresh_from_db()
    assert not late.attempted and payment.state == PaymentState.UNCONFIRMED
    assert payment.staff_flagged_at is not None and payment.events.filter(kind=PaymentEventKind.STAFF).exists()
    assert len(bank.initiations) == 4  # the first send and three replays
    assert {c.headers["x-request-id"] for c in bank.initiations} == {str(draft.request_id)}


def test_the_replay_window_ends_with_the_business_day(fake_bank, draft, alice, settings):
    bank = _bank(fake_bank)
    settings.PAYMENT_REPLAY_WINDOW = timedelta(hours=6)
    payment = _unknown(bank, draft, alice)
    late_evening = datetime(2026, 12, 7, 23, 50, tzinfo=OSLO)
    Payment.objects.filter(pk=payment.pk).update(submitted_at=late_evening)
    payment.refresh_from_db()

    # Five minutes before midnight: a replay must reach the bank on the day of the first request.
    assert reconciliation.replay_window_end(payment) == datetime(2026, 12, 7, 23, 55, tzinfo=OSLO)
    assert reconciliation.replay_allowed(payment, late_evening + timedelta(minutes=4))
    assert not reconciliation.replay_allowed(payment, late_evening + timedelta(minutes=6))

    Payment.objects.filter(pk=payment.pk).update(submitted_at=late_evening + timedelta(minutes=8))
    payment.refresh_from_db()
    assert not reconciliation.replay_allowed(payment, late_evening + timedelta(minutes=8, seconds=1))


def test_the_background_passes_a_lost_answer_to_staff_after_the_window(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    payment = _unknown(bank, draft, alice)
    Payment.objects.filter(pk=payment.pk).update(
        submitted_at=timezone.now() - settings.PAYMENT_REPLAY_WINDOW - timedelta(seconds=1)
    )
    from payments.tasks import reconcile_payment

    assert reconcile_payment.apply(args=[payment.pk]).get() == PaymentState.UNCONFIRMED
    payment.refresh_from_db()
    assert payment.staff_flagged_at is not None and "replay window" in payment.staff_reason
    assert len(bank.initiations) == 1 and payment.psu_identity == "" and payment.initiation_psu == ""


def test_a_payment_sent_as_an_allowed_duplicate_is_never_replayed(fake_bank, draft, alice):
    """Its first request asked the bank to skip the logical-duplicate check: at a bank that takes a repeated
    X-Request-ID for a new request, a repeat overtaken by a slow first request would make two payments."""
    bank = _bank(fake_bank)
    Payment.objects.filter(pk=draft.pk).update(allow_logical_duplicate=True)
    draft.refresh_from_db()
    payment = _unknown(bank, draft, alice)

    outcome = reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)

    assert len(bank.initiations) == 1, "sent once, never again"
    assert outcome.state == PaymentState.UNCONFIRMED and not outcome.attempted
    payment.refresh_from_db()
    assert payment.staff_flagged_at is not None and "allowed duplicate" in payment.staff_reason
    assert not reconciliation.replay_allowed(payment, timezone.now())


@pytest.mark.parametrize(
    "refusal",
    [
        # a bank that answers a repeated X-Request-ID with CONFLICT
        bankfake.error(409, "CONFLICT", "seen before"),
        # one that takes it for a new request and refuses it as a logical duplicate of the first
        bankfake.error(400, "FORMAT_ERROR", "dup"),
    ],
    ids=["conflict", "duplicate"],
)
def test_a_refused_replay_is_never_a_refusal_the_payment_may_exist(fake_bank, alice, alice_client, refusal):
    bank = _bank(fake_bank)
    draft = _draft(alice, BankConnectionFactory(user=alice))
    payment = _unknown(bank, draft, alice)
    bank.failures.append(refusal)

    outcome = reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)

    # The replay asks for no logical duplicate, as the first did (one that allowed it is never replayed: below).
    assert [call.params["allowLogicalDuplicate"] for call in bank.initiations] == ["false", "false"]
    payment.refresh_from_db()
    assert outcome.state == payment.state == PaymentState.UNCONFIRMED != PaymentState.REFUSED
    assert payment.reconcile_at is None and payment.psu_identity == "" and payment.initiation_psu == ""
    assert "Check your account at the bank before you try again" in str(outcome.message)
    assert (
        reconciliation.reconciliations_due(now=timezone.now() + timedelta(days=1)) == []
    )  # never again by itself
    assert payment.staff_flagged_at is not None  # staff settle it with the bank
    # The user is told to check, and is never offered to make it again: no form, and the edit URL refuses.
    page = alice_client.get(f"/payments/{payment.pk}/reconcile/")
    assert "Check your account at the bank" in page.content.decode()
    assert "Make the payment again" not in page.content.decode()
    edit = alice_client.get(f"/payments/{payment.pk}/edit/")
    assert edit.status_code == 302 and edit["Location"] == f"/payments/{payment.pk}/reconcile/"
    assert alice_client.post(f"/payments/{payment.pk}/edit/", payment.form_data).status_code == 302
    assert Payment.objects.filter(user=alice).count() == 1
    assert len(bank.initiations) == 2


def _debit(account, *, remittance: str, amount: str = "-150000.00", status: str = "booked"):
    from accounts.models import Transaction

    now = timezone.now()
    return Transaction.objects.create(
        account=account,
        transaction_id=f"tx-{uuid.uuid4()}",
        status=status,
        booking_date=now.date(),
        amount=Decimal(amount),
        currency="NOK",
        remittance=remittance,
        fingerprint=uuid.uuid4().hex,
        first_seen_at=now,
        updated_at=now,
    )


def _unconfirmed(bank, alice, connection) -> Payment:
    draft = _draft(alice, connection, reference="FP7K3M9Q2A")
    payment = _unknown(bank, draft, alice)
    bank.failures.append(bankfake.error(409, "CONFLICT", "seen before"))
    reconciliation.payment_reconcile(payment_id=payment.pk, actor=alice, presence=PRESENCE)
    payment.refresh_from_db()
    assert payment.state == PaymentState.UNCONFIRMED
    return payment


def test_an_unconfirmed_payment_is_found_by_its_reference_in_the_debtor_accounts_debits(
    fake_bank, alice, alice_client
):
    bank = _bank(fake_bank)
    connection = BankConnectionFactory(user=alice)
    debtor = BankAccountFactory(connection=connection, iban="NO9386011117947")
    payment = _unconfirmed(bank, alice, connection)
    # Not a match: the reference in money coming in, in another of her accounts, or another reference.
    _debit(debtor, remittance="FP7K3M9Q2A refund", amount="150000.00")
    _debit(BankAccountFactory(connection=connection), remittance="FP7K3M9Q2A Rechnung")
    _debit(debtor, remittance="FP7K3M9Q2B Rechnung")
    # Someone else's account with the same number (another user's connection) does not count either.
    _debit(BankAccountFactory(iban="NO9386011117947"), remittance="FP7K3M9Q2A Rechnung")
    assert reconciliation.unconfirmed_find_all() == 0
    payment.refresh_from_db()
    assert payment.state == PaymentState.UNCONFIRMED

    page = alice_client.get(f"/payments/{payment.pk}/reconcile/")
    assert "FP7K3M9Q2A" in page.content.decode()  # the user is told what to look for

    _debit(debtor, remittance="fp7k3m9q2a Rechnung", status="pending")  # as the bank reported it
    from payments.tasks import find_unconfirmed_payments

    assert find_unconfirmed_payments() == 1
    payment.refresh_from_db()
    assert payment.state == PaymentState.FOUND
    (event,) = payment.events.filter(kind=PaymentEventKind.FOUND)
    assert "-150000" in event.detail and "Pending" in event.detail
    assert reconciliation.unconfirmed_find_all() == 0  # once
    # The form is no longer offered: the reconcile page sends her to the payment, which says the bank has it.
    again = alice_client.get(f"/payments/{payment.pk}/reconcile/")
    assert again.status_code == 302 and again["Location"] == f"/payments/{payment.pk}/"
    detail = alice_client.get(f"/payments/{payment.pk}/").content.decode()
    assert "The bank has this payment" in detail
    assert len(bank.initiations) == 2  # nothing sent anew


def test_only_debits_from_the_day_before_sending_on_count_and_new_payments_are_looked_for_first(fake_bank, alice):
    bank = _bank(fake_bank)
    connection = BankConnectionFactory(user=alice)
    debtor = BankAccountFactory(connection=connection, iban="NO9386011117947")
    older = _unconfirmed(bank, alice, connection)
    newer = _draft(alice, connection, reference="FPN3W00001", amount=Decimal("150001.00"))
    newer = _unknown(bank, newer, alice)
    bank.failures.append(bankfake.error(409, "CONFLICT", "seen before"))
    reconciliation.payment_reconcile(payment_id=newer.pk, actor=alice, presence=PRESENCE)
    Payment.objects.filter(pk=older.pk).update(submitted_at=timezone.now() - timedelta(days=5))
    # A debit with the older one's reference, booked a week before it was sent, is another payment's.
    stale = _debit(debtor, remittance="FP7K3M9Q2A Rechnung")
    type(stale).objects.filter(pk=stale.pk).update(booking_date=timezone.localdate() - timedelta(days=7))
    _debit(debtor, remittance="FPN3W00001 Rechnung")

    assert reconciliation.unconfirmed_find_all(limit=1) == 1  # the newest first
    assert Payment.objects.get(pk=newer.pk).state == PaymentState.FOUND
    assert reconciliation.unconfirmed_find_all() == 0
    assert Payment.objects.get(pk=older.pk).state == PaymentState.UNCONFIRMED
    # Sent longer ago than the bank lists transactions: no longer looked for.
    _debit(debtor, remittance="FP7K3M9Q2A Rechnung")
    Payment.objects.filter(pk=older.pk).update(submitted_at=timezone.now() - timedelta(days=91))
    assert reconciliation.unconfirmed_find_all() == 0
    Payment.objects.filter(pk=older.pk).update(submitted_at=timezone.now() - timedelta(days=89))
    assert reconciliation.unconfirmed_find_all() == 1


def test_the_reconcile_page_looks_for_the_payment_before_offering_the_form(fake_bank, alice, alice_client):
    bank = _bank(fake_bank)
    connection = BankConnectionFactory(user=alice)
    debtor = BankAccountFactory(connection=connection, iban="NO9386011117947")
    payment = _unconfirmed(bank, alice, connection)
    _debit(debtor, remittance="FP7K3M9Q2A Rechnung")

    response = alice_client.get(f"/payments/{payment.pk}/reconcile/")

    assert response.status_code == 302 and response["Location"] == f"/payments/{payment.pk}/"
    payment.refresh_from_db()
    assert payment.state == PaymentState.FOUND


def test_a_draft_carries_its_reference_first_in_the_message(alice):
    from payments.instructions import AccountReference, PaymentInstruction

    instruction = PaymentInstruction(
        debtor_account=AccountReference(currency="NOK", iban="NO9386011117947"),
        amount=Decimal("150000.00"),
        currency="NOK",
        creditor_name="Müller Maschinenbau GmbH",
        creditor_account=AccountReference(currency="EUR", iban="DE89370400440532013000"),
        remittance_information="Rechnung 2026-1187",
    )
    drafts = [
        payment_draft_create(
            user=alice,
            product="norwegian-cross-border-credit-transfers",
            context="PRIVATE",
            connection=BankConnectionFactory(user=alice),
            instruction=instruction,
            form_data={},
        )
        for _ in range(2)
    ]
    for payment in drafts:
        assert len(payment.reference) == 10 and payment.reference.startswith("FP")
        body = json.loads(payment.body_json)
        assert body["remittanceInformationUnstructured"] == f"{payment.reference} Rechnung 2026-1187"
    assert drafts[0].reference != drafts[1].reference


def test_due_reconciliations_are_dispatched(fake_bank, draft, alice, monkeypatch):
    bank = _bank(fake_bank)
    payment = _unknown(bank, draft, alice)
    sent = []
    monkeypatch.setattr("payments.tasks.reconcile_payment.delay", sent.append)
    from payments.tasks import dispatch_due_reconciliations

    assert dispatch_due_reconciliations() == 1 and sent == [payment.pk]


# --- authorisation and callback ------------------------------------------------------------------------------


def test_authorisation_start_stores_the_state_before_the_bank_is_called(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    payment = _submit(draft, alice).payment

    href = authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)

    assert href == "http://bank.test/sca/1"
    (call,) = bank.authorisations
    state = _state_of(call)
    assert state.purpose == PAYMENT_PURPOSE and state.user == alice
    assert state.session_key_hash == session_key_hash(SESSION) and state.used_at is None
    assert call.headers["psu-id"] == draft.connection.psu_id and call.path == "/v1/payments/p/x/authorisations"
    authorisation = PaymentAuthorisation.objects.get(payment=payment)
    assert authorisation.sca_state == state and authorisation.signer == alice
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING


def test_a_second_start_reuses_the_unfinished_authorisation(fake_bank, draft, alice):
    _bank(fake_bank)
    payment = _submit(draft, alice).payment
    authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)
    authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)

    assert PaymentAuthorisation.objects.filter(payment=payment).count() == 1
    assert ScaState.objects.filter(purpose=PAYMENT_PURPOSE).count() == 2


def test_a_draft_cannot_be_authorised(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    with pytest.raises(AuthorisationNotStarted):
        authorisation_start(payment=draft, signer=alice, session_key=SESSION, presence=PRESENCE)
    assert not bank.authorisations


def _state_of(call) -> ScaState:
    """The SCA state named by the TPP-Redirect-URI of a start of authorisation, sent with the state's session."""
    state = ScaState.objects.get(token=parse_qs(urlsplit(call.headers["tpp-redirect-uri"]).query)["state"][0])
    assert call.headers["tpp-session-id"] == state.tpp_session_id
    return state


def _started(bank, alice, connection) -> tuple[Payment, ScaState]:
    payment = _submit(_draft(alice, connection), alice).payment
    authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)
    return payment, _state_of(bank.authorisations[-1])


def _params(state, psu_id, context="PRIVATE", corporate=None) -> CallbackParams:
    return CallbackParams(
        state=state.token,
        tpp_session_id=state.tpp_session_id,
        psu_id=psu_id,
        context=context,
        psu_corporate_id=corporate,
    )


def _callback_accept(*, user, session_key, params):
    """What the callback does for a payment's state: connections' checks, then payments' handler."""
    sca_return = connection_sca.sca_return_accept(
        user=user, session_key=session_key, params=params, presence=PRESENCE
    )
    return payment_sca_accept(sca_return=sca_return)


def test_the_callback_records_the_approval_and_polls_soon(fake_bank, alice, connection):
    bank = _bank(fake_bank)
    payment, state = _started(bank, alice, connection)
    planned = Payment.objects.get(pk=payment.pk).next_poll_at
    before = timezone.now()

    done = _callback_accept(user=alice, session_key=SESSION, params=_params(state, connection.psu_id))

    # Polled soon: the first status read the start planned for later is due at once.
    due = Payment.objects.get(pk=payment.pk).next_poll_at
    assert done.pk == payment.pk and planned > timezone.now() and before <= due <= timezone.now()
    assert PaymentAuthorisation.objects.get(payment=payment).completed_at is not None
    assert payment.events.filter(kind=PaymentEventKind.SCA_DONE, actor=alice).count() == 1
    with pytest.raises(ScaStateRejected) as replay:
        _callback_accept(user=alice, session_key=SESSION, params=_params(state, connection.psu_id))
    assert replay.value.reason == "used"


def test_the_callback_is_refused_for_another_user_session_or_identity(fake_bank, alice, bob, connection):
    bank = _bank(fake_bank)
    _payment, state = _started(bank, alice, connection)

    with pytest.raises(ScaStateRejected):
        _callback_accept(user=bob, session_key=SESSION, params=_params(state, connection.psu_id))
    with pytest.raises(ScaStateRejected):
        _callback_accept(user=alice, session_key="b" * 32, params=_params(state, connection.psu_id))
    _payment2, state2 = _started(bank, alice, connection)
    with pytest.raises(IdentityMismatch):
        _callback_accept(user=alice, session_key=SESSION, params=_params(state2, str(uuid.uuid4())))
    assert not PaymentAuthorisation.objects.filter(completed_at__isnull=False).exists()


def test_an_expired_state_is_refused(fake_bank, alice, connection):
    bank = _bank(fake_bank)
    _payment, state = _started(bank, alice, connection)
    ScaState.objects.filter(pk=state.pk).update(created_at=timezone.now() - timedelta(minutes=11))

    with pytest.raises(ScaStateRejected) as expired:
        _callback_accept(user=alice, session_key=SESSION, params=_params(state, connection.psu_id))
    assert expired.value.reason == "expired"


def test_single_sca_keeps_the_psu_id_for_next_time(fake_bank, alice):
    bank = _bank(fake_bank)
    payment = _submit(_draft(alice, None), alice, national_identity_number="13039319955").payment
    authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)
    state = _state_of(bank.authorisations[-1])
    psu_id = str(uuid.uuid4())

    _callback_accept(user=alice, session_key=SESSION, params=_params(state, psu_id))

    kept = BankConnection.objects.get(user=alice)
    assert kept.psu_id == psu_id and kept.access == ConnectionAccess.PAYMENTS and kept.state == "active"
    assert Payment.objects.get(pk=payment.pk).connection == kept


# --- approval in the bank's app ------------------------------------------------------------------------------


def test_the_in_app_box_on_the_review_page_asks_the_bank_for_its_app(fake_bank, draft, alice, alice_client):
    bank = _bank(fake_bank)
    page = alice_client.get(f"/payments/{draft.pk}/review/").content.decode()
    assert 'name="in_app"' in page

    sent = alice_client.post(
        f"/payments/{draft.pk}/review/", {"idempotency_key": str(draft.idempotency_key), "in_app": "on"}
    )

    assert sent.status_code == 302 and sent["Location"] == "http://bank.test/sca/1"
    assert bank.authorisations[-1].headers["tpp-redirect-preferred"] == "false"


def test_a_payment_not_delivered_shows_its_review_again_with_why(fake_bank, draft, alice, alice_client):
    """Found by the exactly-once model: the review page failed (500, an unbound form given an error) when the bank
    could not be reached, instead of offering the same page again."""
    bank = _bank(fake_bank)
    bank.failures.append(bankfake.lost(sent=False))  # the connection was refused: nothing was sent

    sent = alice_client.post(f"/payments/{draft.pk}/review/", {"idempotency_key": str(draft.idempotency_key)})

    assert sent.status_code == 503
    assert "The bank could not be reached; nothing was sent." in sent.content.decode()
    assert str(sent.context["form"]["idempotency_key"].value()) == str(draft.idempotency_key)
    assert Payment.objects.get(pk=draft.pk).state == PaymentState.DRAFT


def test_without_the_box_nothing_is_asked_for(fake_bank, draft, alice, alice_client):
    bank = _bank(fake_bank)
    alice_client.post(f"/payments/{draft.pk}/review/", {"idempotency_key": str(draft.idempotency_key)})

    assert "tpp-redirect-preferred" not in bank.authorisations[-1].headers


def test_an_approval_in_the_banks_app_waits_for_the_banks_status(fake_bank, draft, alice, alice_client):
    """The bank answers the in-app request without a scaRedirect: the payer is told to approve in the app and
    the payment's status is read (its polling starts), as for any approval whose redirect never comes."""
    _bank(fake_bank, start=bankfake.Answer(201, {"scaStatus": "started", "_links": {}}))

    sent = alice_client.post(
        f"/payments/{draft.pk}/review/",
        {"idempotency_key": str(draft.idempotency_key), "in_app": "on"},
        follow=True,
    )

    assert sent.redirect_chain[-1][0] == f"/payments/{draft.pk}/"
    assert "Open your bank&#x27;s app and approve the payment there." in sent.content.decode()
    payment = Payment.objects.get(pk=draft.pk)
    assert payment.state == PaymentState.AUTHORISING and payment.next_poll_at is not None


def test_an_authorisation_answer_without_a_redirect_is_an_approval_in_the_app(fake_bank, draft, alice):
    """Whether or not the payer asked for the app: no scaRedirect means the bank asks in its app (decoupled);
    the payment waits for the bank's status, which is read on a backoff from now."""
    _bank(fake_bank, start=bankfake.Answer(201, {"scaStatus": "started", "_links": {}}))
    payment = _submit(draft, alice).payment

    assert authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE) is None

    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING and payment.next_poll_at is not None
    assert payment.events.filter(kind=PaymentEventKind.SCA_STARTED).exists()
    assert not PaymentAuthorisation.objects.filter(payment=payment, completed_at__isnull=False).exists()


def test_an_unusable_redirect_is_still_an_error(fake_bank, draft, alice):
    _bank(
        fake_bank, start=bankfake.Answer(201, bankfake.authorisation("javascript:alert(1)", sca_status="started"))
    )
    payment = _submit(draft, alice).payment

    with pytest.raises(AuthorisationNotStarted):
        authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)


def test_the_choice_of_the_app_goes_with_the_initiation_too(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    _submit(draft, alice, in_app=True)

    assert bank.initiations[-1].headers["tpp-redirect-preferred"] == "false"


def test_without_the_choice_the_initiation_asks_for_nothing(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    _submit(draft, alice)

    assert "tpp-redirect-preferred" not in bank.initiations[-1].headers


# --- forms ---------------------------------------------------------------------------------------------------


def test_the_identity_number_is_checked_as_a_fodselsnummer():
    key = str(uuid.uuid4())
    good = PaymentSubmitForm(
        {"idempotency_key": key, "national_identity_number": "130393 19955"}, needs_identity=True
    )
    assert good.is_valid() and good.cleaned_data["national_identity_number"] == "13039319955"
    bad = PaymentSubmitForm(
        {"idempotency_key": key, "national_identity_number": "13039319956"}, needs_identity=True
    )
    assert not bad.is_valid() and "national_identity_number" in bad.errors
    assert "national_identity_number" not in PaymentSubmitForm(needs_identity=False).fields


@pytest.mark.parametrize(
    ("account", "valid"),
    [
        ("1506.12.34508", True),
        ("NO9386011117947", True),
        ("DE89370400440532013000", False),
        ("15061234509", False),
    ],
)
def test_the_domestic_form_pays_norwegian_accounts_only(account, valid):
    form = DomesticPaymentForm(
        {
            "debtor_account": "NO9386011117947",
            "amount": "1250.50",
            "creditor_name": "Bergen Utleie AS",
            "creditor_account": account,
        }
    )
    assert form.is_valid() is valid, form.errors
    if valid:
        body = form.bank_body()
        assert body["instructedAmount"] == {"amount": "1250.50", "currency": "NOK"}
        assert "regulatoryReportingCode" not in body and "creditorAgent" not in body
    else:
        assert "creditor_account" in form.errors


# --- pages ---------------------------------------------------------------------------------------------------


def test_an_invalid_form_stores_nothing_and_shows_errors_beside_fields(alice_client, alice):
    BankAccountFactory(connection=BankConnectionFactory(user=alice))
    response = alice_client.post("/payments/new/", {"amount": "10.555", "currency": "NOK"})

    assert response.status_code == 200 and not Payment.objects.exists()
    errors = response.context["form"].errors
    assert {"amount", "creditor_name", "creditor_account", "debtor_account"} <= set(errors)
    assert 'class="field-error"' in response.content.decode()


def test_a_valid_form_makes_a_draft_and_edit_replaces_it(alice_client, alice):
    account = BankAccountFactory(connection=BankConnectionFactory(user=alice))
    data = {
        "debtor_account": str(account.pk),
        "amount": "500",
        "currency": "NOK",
        "creditor_name": "Müller",
        "creditor_account": "DE89370400440532013000",
    }
    first = alice_client.post("/payments/new/", data)
    draft = Payment.objects.get()
    assert first["Location"] == f"/payments/{draft.pk}/review/" and draft.connection == account.connection
    edit = alice_client.get(f"/payments/{draft.pk}/edit/")
    assert edit.status_code == 200 and edit.context["form"]["creditor_name"].value() == "Müller"

    second = alice_client.post(f"/payments/{draft.pk}/edit/", {**data, "amount": "600"})

    new = Payment.objects.get()
    assert new.pk != draft.pk and new.amount == Decimal("600") and new.request_id != draft.request_id
    assert second["Location"] == f"/payments/{new.pk}/review/"


def test_a_submitted_payment_is_never_changed_by_edit(fake_bank, alice_client, alice, connection):
    _bank(fake_bank)
    submitted = _submit(_draft(alice, connection), alice).payment
    account = BankAccountFactory(connection=connection)
    data = {
        "debtor_account": str(account.pk),
        "amount": "700",
        "currency": "NOK",
        "creditor_name": "Other",
        "creditor_account": "DE89370400440532013000",
    }
    sent = alice_client.post(f"/payments/{submitted.pk}/edit/", data)

    assert sent.status_code == 302 and sent["Location"] == f"/payments/{submitted.pk}/"
    assert Payment.objects.get(pk=submitted.pk).amount == Decimal("150000.00")
    assert Payment.objects.count() == 1  # the edit URL of a sent payment makes nothing


@pytest.mark.parametrize(
    "state",
    [
        PaymentState.SUBMITTING,
        PaymentState.OUTCOME_UNKNOWN,
        PaymentState.UNCONFIRMED,
        PaymentState.FOUND,
        PaymentState.NOT_AT_BANK,
        PaymentState.INITIATED,
        PaymentState.AUTHORISING,
        PaymentState.AWAITING_STATUS,
        PaymentState.FINAL,
    ],
)
def test_the_edit_url_refuses_every_state_but_draft_and_refused(alice_client, alice, connection, state):
    payment = _draft(alice, connection)
    Payment.objects.filter(pk=payment.pk).update(state=state)

    shown = alice_client.get(f"/payments/{payment.pk}/edit/")
    posted = alice_client.post(f"/payments/{payment.pk}/edit/", {"amount": "1"})

    assert shown.status_code == posted.status_code == 302
    assert shown["Location"] != f"/payments/{payment.pk}/edit/"
    assert Payment.objects.count() == 1


def test_review_asks_for_the_password_when_it_is_old(alice_client, alice, draft, settings):
    from users.security import REAUTHENTICATED_KEY

    session = alice_client.session
    session[REAUTHENTICATED_KEY] = (timezone.now() - timedelta(seconds=settings.REAUTH_MAX_AGE + 5)).isoformat()
    session.save()

    response = alice_client.post(f"/payments/{draft.pk}/review/", {"idempotency_key": str(draft.idempotency_key)})

    assert response.status_code == 302 and response["Location"].startswith("/auth/confirm-password/")
    assert Payment.objects.get(pk=draft.pk).state == PaymentState.DRAFT


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("get", "review/"), ("get", "edit/"), ("get", "reconcile/"), ("post", "approve/"), ("post", "review/")],
)
def test_the_initiation_pages_are_404_for_another_user_and_sign_in_for_anonymous(
    client, alice, bob, draft, method, suffix
):
    url = f"/payments/{draft.pk}/{suffix}"
    client.force_login(bob)
    assert getattr(client, method)(url).status_code == 404
    client.logout()
    anonymous = getattr(client, method)(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/auth/sign-in/")
    client.force_login(alice)
    assert getattr(client, method)(url).status_code in (200, 302, 400)
    assert Payment.objects.get(pk=draft.pk).state == PaymentState.DRAFT


def test_check_now_replays_with_the_users_live_request_and_goes_on_to_approval(
    fake_bank, alice_client, alice, draft
):
    bank = _bank(fake_bank)
    payment = _unknown(bank, draft, alice)
    page = alice_client.get(f"/payments/{payment.pk}/reconcile/")
    assert page.status_code == 200 and "Check now" in page.content.decode()

    checked = alice_client.post(f"/payments/{payment.pk}/reconcile/")

    assert checked.status_code == 302 and checked["Location"] == "http://bank.test/sca/1"
    replay = bank.initiations[-1]
    assert replay.headers["x-request-id"] == str(draft.request_id)
    assert replay.headers["psu-id"] == draft.connection.psu_id
    assert replay.headers["psu-ip-address"] == "127.0.0.1"  # the user's request now (the test client's address)
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING
    assert alice_client.get(f"/payments/{payment.pk}/reconcile/")["Location"] == f"/payments/{payment.pk}/"


def test_check_now_follows_a_sca_redirect_the_replayed_initiation_answers_with(
    fake_bank, alice_client, alice, draft
):
    """A bank that starts SCA with the initiation answers the replay with the scaRedirect: the user is sent
    there, with no startAuthorisation, tied to the SCA state whose TPP-Redirect-URI the first submission sent."""
    bank = _bank(fake_bank)
    bank.failures.append(bankfake.lost())
    session_key = alice_client.session.session_key
    payment = _submit(draft, alice, session_key=session_key).payment
    assert payment.state == PaymentState.OUTCOME_UNKNOWN
    state = ScaState.objects.get(user=alice, purpose=PAYMENT_PURPOSE)
    assert payment.initiation_sca_state == state and state.used_at is None  # kept: the replay may need it
    assert payment.tpp_session_id == state.tpp_session_id  # the user's TPP-Session-ID of the hour
    Payment.objects.filter(pk=payment.pk).update(replay_not_before=None)  # the first cannot be on its way now
    bank.answer = {
        "scaStatus": "started",
        "_links": {"scaRedirect": {"href": "http://bank.test/sca/at-initiation"}},
    }

    checked = alice_client.post(f"/payments/{payment.pk}/reconcile/")

    assert checked.status_code == 302 and checked["Location"] == "http://bank.test/sca/at-initiation"
    first, replay = bank.initiations
    redirect_uri = replay.headers["tpp-redirect-uri"]
    assert redirect_uri == first.headers["tpp-redirect-uri"] and f"state={state.token}" in redirect_uri
    assert replay.headers["tpp-session-id"] == first.headers["tpp-session-id"] and bank.authorisations == []
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING and payment.next_poll_at is not None
    authorisation = PaymentAuthorisation.objects.get(payment=payment)
    assert authorisation.sca_state == state and authorisation.completed_at is None


@pytest.mark.parametrize(
    ("answer", "state"),
    [
        ({"scaStatus": "exempted", "_links": {}}, PaymentState.AWAITING_STATUS),
        ({"transactionStatus": "ACTC", "_links": {}}, PaymentState.AWAITING_STATUS),
        ({"transactionStatus": "ACSC", "_links": {}}, PaymentState.FINAL),
        (
            {"transactionStatus": "RCVD", "_links": {"status": {"href": "/v1/x/status"}}},
            PaymentState.AWAITING_STATUS,
        ),
    ],
    ids=["exempted", "accepted", "completed", "received-without-a-start-link"],
)
def test_an_initiation_answer_asking_no_approval_never_leaves_the_payment_initiated(
    fake_bank, draft, alice, answer, state
):
    """Spec 3 rule 2: "SCA exemptions may produce an instantly completed payment"."""
    bank = _bank(fake_bank)
    bank.answer = answer

    outcome = _submit(draft, alice, session_key=SESSION)

    assert outcome.approval_skipped and "did not ask you to approve" in outcome.message
    payment = Payment.objects.get(pk=draft.pk)
    assert payment.state == state and bank.authorisations == []
    assert (payment.next_poll_at is None) == (state == PaymentState.FINAL)  # final: nothing left to read
    assert ScaState.objects.get(user=alice).used_at is not None  # spent: no redirect back can use it
    assert PaymentAuthorisation.objects.get(payment=payment).completed_at is not None


@pytest.mark.parametrize("status", ["RCVD", "ACTC", "ACCP", "PDNG"])
@pytest.mark.parametrize("link", ["startAuthorisation", "startAuthorisationWithPsuIdentification"])
def test_a_start_link_asks_for_an_approval_whatever_the_status(
    fake_bank, draft, alice, alice_client, status, link
):
    """The links decide (spec 2.7): a bank answering ACTC or ACCP with a startAuthorisation link still wants the
    PSU's approval; the portal starts it (the stub answers with a scaRedirect)."""
    bank = _bank(fake_bank)
    bank.answer = {
        "transactionStatus": status,
        "_links": {link: {"href": "/v1/payments/p/x/authorisations"}, "status": {"href": "/v1/p/x/status"}},
    }

    sent = alice_client.post(f"/payments/{draft.pk}/review/", {"idempotency_key": str(draft.idempotency_key)})

    assert sent.status_code == 302 and sent["Location"] == "http://bank.test/sca/1"
    assert bank.authorisations[-1].path == "/v1/payments/p/x/authorisations"
    payment = Payment.objects.get(pk=draft.pk)
    assert payment.state == PaymentState.AUTHORISING and payment.transaction_status == status


# --- a caller that dies during the call, an unexpected failure, the audit row ---------------------------------


def test_a_submission_whose_caller_died_is_taken_over_by_reconciliation_after_its_lease(fake_bank, draft, alice):
    """The process was killed while waiting for the bank: the row stays SUBMITTING with a lease; once the lease
    has run out, the reconciliation replays the very same request and stores the bank's one payment."""
    bank = _bank(fake_bank)

    def killed(received):
        bank.payment_made()  # the bank made the payment
        raise KeyboardInterrupt  # stands for the worker being killed before the answer is stored

    bank.failures.append(killed)
    with pytest.raises(KeyboardInterrupt):
        _submit(draft, alice)
    draft.refresh_from_db()
    # Marked unknown on the way out; a hard kill (no way out) leaves SUBMITTING with its lease instead:
    assert draft.state == PaymentState.OUTCOME_UNKNOWN
    Payment.objects.filter(pk=draft.pk).update(
        state=PaymentState.SUBMITTING, reconcile_at=timezone.now() + timedelta(minutes=1)
    )
    assert reconciliation.reconciliations_due() == []  # the caller may still be waiting: its lease holds
    assert not reconciliation.payment_reconcile(payment_id=draft.pk, actor=alice, presence=PRESENCE).attempted

    Payment.objects.filter(pk=draft.pk).update(reconcile_at=timezone.now() - timedelta(seconds=1))
    assert reconciliation.reconciliations_due() == [draft.pk]
    # The background takes the dead caller's payment over without replaying it (the PSU is not present) ...
    assert reconciliation.reconciliation_check(payment_id=draft.pk) == PaymentState.OUTCOME_UNKNOWN
    assert len(bank.initiations) == 1
    # ... and the user's check, inside the window, replays the very same request.
    outcome = reconciliation.payment_reconcile(payment_id=draft.pk, actor=alice, presence=PRESENCE)

    assert outcome.state == PaymentState.INITIATED
    assert {c.headers["x-request-id"] for c in bank.initiations} == {str(draft.request_id)} and bank.made == 2
    draft.refresh_from_db()
    assert draft.payment_id == "enc!!pay-2=" and draft.reconcile_at is None and draft.initiation_psu == ""


def test_a_live_submission_is_not_taken_over_by_check_now(fake_bank, draft, alice):
    bank = _bank(fake_bank)
    now = timezone.now()
    Payment.objects.filter(pk=draft.pk).update(
        state=PaymentState.SUBMITTING, submitted_at=now, reconcile_at=initiation_call.call_lease(now)
    )

    outcome = reconciliation.payment_reconcile(payment_id=draft.pk, actor=alice, presence=PRESENCE)

    assert not outcome.attempted and outcome.state == PaymentState.SUBMITTING and not bank.initiations


def _kept_back(monkeypatch, rows) -> list[bool]:
    """Whether any of ``rows`` (BankCall) was written when the client recorded each call: core.bank's audit hook
    counts the call in the metrics once it has written the row or kept it back. The list fills as calls go."""
    from core import metrics

    real = metrics.observe_bank_call
    written: list[bool] = []

    def observed(record):
        written.append(rows.exists())
        real(record)

    monkeypatch.setattr(metrics, "observe_bank_call", observed)
    return written


def test_the_submitted_event_and_the_audit_row_are_stored_with_the_answer(fake_bank, draft, alice, monkeypatch):
    from core.models import BankCall

    _bank(fake_bank)
    written = _kept_back(monkeypatch, BankCall.objects.all())

    payment = _submit(draft, alice).payment

    assert written == [False]  # kept back: committed with the answer
    (call,) = BankCall.objects.all()
    assert call.request_id == str(draft.request_id) and call.user == alice and call.object_id == str(draft.pk)
    assert call.status == 201
    kinds = list(payment.events.order_by("at", "id").values_list("kind", flat=True))
    assert kinds == ["submitted", "status"]
    assert payment.events.get(kind="submitted").at == Payment.objects.get(pk=draft.pk).submitted_at


def test_the_audit_row_of_a_failed_call_is_written_too(fake_bank, draft, alice):
    from core.models import BankCall

    bank = _bank(fake_bank)
    bank.failures.append(bankfake.lost())

    payment = _submit(draft, alice).payment

    assert payment.state == PaymentState.OUTCOME_UNKNOWN
    assert list(BankCall.objects.values_list("error", flat=True)) == ["OutcomeUnknownError"]
    kinds = list(payment.events.order_by("at", "id").values_list("kind", flat=True))
    assert kinds == ["submitted", "unknown"]


def test_the_audit_row_of_the_approval_start_is_stored_with_its_outcome(fake_bank, draft, alice, monkeypatch):
    from core.models import BankCall

    _bank(fake_bank)
    payment = _submit(draft, alice).payment
    written = _kept_back(monkeypatch, BankCall.objects.filter(path_template__endswith="/authorisations"))

    authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)

    assert written == [False]  # kept back until the outcome of the call is stored
    call = BankCall.objects.get(path_template__endswith="/authorisations")
    assert call.status == 201 and call.user == alice and call.object_id == str(payment.pk)
    stored = Payment.objects.get(pk=payment.pk)
    # The instance says what the UPDATE wrote, without a read back:
    assert payment.state == stored.state == PaymentState.AUTHORISING and payment.updated_at == stored.updated_at
    assert payment.events.filter(kind=PaymentEventKind.SCA_STARTED).count() == 1


def test_the_audit_row_of_a_refused_approval_start_is_stored_with_the_failure(
    fake_bank, draft, alice, monkeypatch
):
    from core.models import BankCall

    _bank(fake_bank, start=bankfake.error(400, "FORMAT_ERROR", "No."))
    payment = _submit(draft, alice).payment
    written = _kept_back(monkeypatch, BankCall.objects.filter(path_template__endswith="/authorisations"))

    with pytest.raises(AuthorisationNotStarted):
        authorisation_start(payment=payment, signer=alice, session_key=SESSION, presence=PRESENCE)

    assert written == [False]  # kept back until the failure is stored
    call = BankCall.objects.get(path_template__endswith="/authorisations")
    assert call.status == 400 and call.error == "FormatError" and call.object_id == str(payment.pk)
    assert payment.events.filter(kind=PaymentEventKind.SCA_FAILED).count() == 1
    assert ScaState.objects.get(purpose=PAYMENT_PURPOSE).used_at is not None  # the state is spent
    assert Payment.objects.get(pk=payment.pk).state == PaymentState.INITIATED
