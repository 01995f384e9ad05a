"""A bank may exempt any payment from SCA or require SCA on any, and may start it with the initiation itself
(spec 3 rule 2, 5 rule 7). The portal against the sandbox bank, run as a real process under each of its settings:

- ``BANK_SIM_SCA_EXEMPT_BELOW``: below the amount startAuthorisation answers scaStatus "exempted" without a
  scaRedirect. The payment is not left waiting for an approval nobody asks for: its status is read at once and
  polled to the bank's final status. At or above the amount the approval goes through SCA as always.
- ``BANK_SIM_SCA_AT_INITIATION``: the initiation answer carries the scaRedirect itself. The PSU's browser goes
  there with no startAuthorisation call, and the redirect back reaches the one callback; the payment's outcome
  is the status the bank reports. With an exemption as well, the initiation answer is an approved payment (PDNG,
  no scaRedirect): polled at once, no approval asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from connections.models import ScaState
from core.bank import bank_client
from core.models import BankCall
from devtools.livebank import running_bank
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from payments.services.polling import due_payment_ids, payment_poll
from tests.live_bank import PRIVATE_1, portal_connect
from tests.payments.journeys import account_named, approve_at_bank, cross_border, draft, run_batches

pytestmark = pytest.mark.live_bank

INITIATIONS = "/v1/payments/{product}"
START_AUTHORISATION = "/v1/payments/{product}/{payment_id}/authorisations"
THRESHOLD = "500"  # NOK


@pytest.fixture(scope="module")
def exempting_bank(tmp_path_factory) -> Iterator[str]:
    """The sandbox bank exempting payments below 500 NOK from SCA (at startAuthorisation)."""
    settings = {"BANK_SIM_SCA_EXEMPT_BELOW": THRESHOLD}
    with running_bank(tmp_path_factory.mktemp("bank-exempt"), workers=1, settings=settings) as bank:
        yield bank.base_url


@pytest.fixture(scope="module")
def sca_at_initiation_bank(tmp_path_factory) -> Iterator[str]:
    """The sandbox bank starting SCA with the initiation itself, and exempting payments below 500 NOK."""
    settings = {"BANK_SIM_SCA_AT_INITIATION": "true", "BANK_SIM_SCA_EXEMPT_BELOW": THRESHOLD}
    with running_bank(tmp_path_factory.mktemp("bank-at-initiation"), workers=1, settings=settings) as bank:
        yield bank.base_url


def _use(settings, base_url: str) -> str:
    settings.BANK_BASE_URL = base_url
    bank_client.cache_clear()
    return base_url


@pytest.fixture
def exempting(exempting_bank, settings) -> Iterator[str]:
    yield _use(settings, exempting_bank)
    bank_client.cache_clear()


@pytest.fixture
def at_initiation(sca_at_initiation_bank, settings) -> Iterator[str]:
    yield _use(settings, sca_at_initiation_bank)
    bank_client.cache_clear()


def _calls(payment: Payment, template: str) -> int:
    return BankCall.objects.filter(object_id=str(payment.pk), method="POST", path_template=template).count()


def _send(client, payment: Payment):
    sent = client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})
    assert sent.status_code == 302, sent
    return sent


def _messages(response) -> list[str]:
    return [str(m) for m in response.wsgi_request._messages]


def _poll_until(payment: Payment, status: str) -> None:
    """The bank's batches run, and each time the due poll reads the status (at most four batches)."""
    for _ in range(4):
        if Payment.objects.get(pk=payment.pk).transaction_status == status:
            return
        run_batches()
        payment_poll(payment_id=payment.pk)
    assert Payment.objects.get(pk=payment.pk).transaction_status == status


def _assert_exempted_and_polled_to_the_end(client, payment: Payment, sent) -> None:
    """What an exempted payment comes to: the user told in plain words, its status read at once from the bank,
    then polled to the bank's final status; never left waiting for an approval."""
    assert sent["Location"] == f"/payments/{payment.pk}/"
    assert any("The bank did not ask you to approve this payment" in m for m in _messages(sent))
    payment.refresh_from_db()
    assert payment.state == PaymentState.AWAITING_STATUS
    assert payment.next_poll_at is not None and payment.next_poll_at <= timezone.now()
    assert payment.pk in due_payment_ids()  # beat's dispatcher enqueues it now
    (signature,) = PaymentAuthorisation.objects.filter(payment=payment)
    assert signature.completed_at is not None
    assert signature.sca_state is None or signature.sca_state.used_at is not None  # no redirect back can use it
    assert PaymentEvent.objects.filter(
        payment=payment, kind=PaymentEventKind.SCA_DONE, detail__contains="did not ask for approval"
    ).exists()

    first = payment_poll(payment_id=payment.pk)
    assert first.ok and first.status == "PDNG"  # approved at the bank without SCA
    _poll_until(payment, "ACSC")
    payment.refresh_from_db()
    assert payment.state == PaymentState.FINAL and payment.next_poll_at is None
    page = client.get(f"/payments/{payment.pk}/")
    assert page.status_code == 200


# --- BANK_SIM_SCA_EXEMPT_BELOW -------------------------------------------------------------------------------


def test_an_exempted_payment_goes_to_status_polling_and_reaches_the_banks_final_status(
    exempting, alice, alice_client
):
    portal_connect(alice_client)
    payment = draft(alice_client, cross_border(str(account_named(alice, "Brukskonto").pk), amount="420"))

    sent = _send(alice_client, payment)

    assert _calls(payment, START_AUTHORISATION) == 1  # asked, and the bank answered "exempted"
    assert not sent["Location"].startswith(exempting)  # nobody is sent to the bank
    assert not ScaState.objects.filter(user=alice, purpose="payment", used_at__isnull=True).exists()
    _assert_exempted_and_polled_to_the_end(alice_client, payment, sent)
    assert _calls(payment, INITIATIONS) == 1 and _calls(payment, START_AUTHORISATION) == 1


def test_at_or_above_the_exemption_amount_the_payment_still_goes_through_sca(exempting, alice, alice_client):
    portal_connect(alice_client)
    payment = draft(alice_client, cross_border(str(account_named(alice, "Brukskonto").pk), amount="500"))

    sent = _send(alice_client, payment)

    assert sent["Location"].startswith(exempting)  # to the bank's SCA
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING and payment.transaction_status == "RCVD"
    assert payment.next_poll_at > timezone.now() + timedelta(seconds=1)  # polled slowly while SCA runs
    back = approve_at_bank(alice_client, sent["Location"], identity=PRIVATE_1)
    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"
    assert payment_poll(payment_id=payment.pk).status == "PDNG"
    assert not PaymentEvent.objects.filter(payment=payment, detail__contains="did not ask for approval").exists()


# --- BANK_SIM_SCA_AT_INITIATION ------------------------------------------------------------------------------


def test_a_sca_redirect_in_the_initiation_answer_is_followed_without_starting_another(
    at_initiation, alice, alice_client
):
    portal_connect(alice_client)
    payment = draft(alice_client, cross_border(str(account_named(alice, "Brukskonto").pk), amount="12 600"))

    sent = _send(alice_client, payment)

    payment.refresh_from_db()
    assert sent["Location"].startswith(at_initiation)
    assert sent["Location"] == payment.links["scaRedirect"]  # the initiation answer's own
    assert "startAuthorisation" not in payment.links
    assert _calls(payment, INITIATIONS) == 1 and _calls(payment, START_AUTHORISATION) == 0
    assert payment.state == PaymentState.AUTHORISING and payment.transaction_status == "RCVD"
    assert payment.next_poll_at is not None  # an approval on another device is seen by polling
    authorisation = PaymentAuthorisation.objects.get(payment=payment)
    assert authorisation.signer == alice and authorisation.completed_at is None
    # The initiation carried the TPP-Redirect-URI of this SCA state: the redirect back brings it.
    assert authorisation.sca_state == payment.initiation_sca_state
    assert authorisation.sca_state.tpp_session_id == payment.tpp_session_id
    assert authorisation.sca_state.purpose == "payment" and authorisation.sca_state.used_at is None
    kinds = list(PaymentEvent.objects.filter(payment=payment).values_list("kind", flat=True))
    assert kinds == ["created", "submitted", "status", "sca_started"]

    back = approve_at_bank(alice_client, sent["Location"], identity=PRIVATE_1)

    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"
    authorisation.refresh_from_db()
    assert authorisation.completed_at is not None
    assert ScaState.objects.get(pk=authorisation.sca_state_id).used_at is not None
    payment.refresh_from_db()
    assert payment.transaction_status == "RCVD"  # the redirect back decides nothing: the bank's status does
    assert payment.next_poll_at <= timezone.now()
    assert payment_poll(payment_id=payment.pk).status == "PDNG"
    _poll_until(payment, "ACSC")
    payment.refresh_from_db()
    assert payment.state == PaymentState.FINAL
    assert _calls(payment, START_AUTHORISATION) == 0


def test_an_initiation_answer_already_approved_goes_to_status_polling(at_initiation, alice, alice_client):
    portal_connect(alice_client)
    payment = draft(alice_client, cross_border(str(account_named(alice, "Brukskonto").pk), amount="430"))

    sent = _send(alice_client, payment)

    payment.refresh_from_db()
    assert payment.transaction_status == "PDNG" and "scaRedirect" not in payment.links
    assert _calls(payment, INITIATIONS) == 1 and _calls(payment, START_AUTHORISATION) == 0
    _assert_exempted_and_polled_to_the_end(alice_client, payment, sent)


# --- BANK_SIM_SCA_APPROACH=decoupled: the approval in the bank's app ------------------------------------------


@pytest.fixture(scope="module")
def decoupled_bank(tmp_path_factory) -> Iterator[str]:
    """The sandbox bank approving payments in its app (no scaRedirect), ACTC before SCA, ACCC at the end."""
    settings = {
        "BANK_SIM_SCA_APPROACH": "decoupled",
        "BANK_SIM_STATUS_BEFORE_SCA": "ACTC",
        "BANK_SIM_CREDIT_FINAL": "ACCC",
    }
    with running_bank(tmp_path_factory.mktemp("bank-decoupled"), workers=1, settings=settings) as bank:
        yield bank.base_url


@pytest.fixture
def decoupled(decoupled_bank, settings) -> Iterator[str]:
    yield _use(settings, decoupled_bank)
    bank_client.cache_clear()


def test_an_approval_in_the_banks_app_is_followed_to_its_final_status(decoupled, alice, alice_client):
    """ACTC with a startAuthorisation link still asks for SCA (the links decide); the bank answers without a
    scaRedirect (its app): the payer is told so, the approval's scaStatus and the payment's status are read
    until the bank says, and ACCC ends it."""
    portal_connect(alice_client)
    payment = draft(alice_client, cross_border(str(account_named(alice, "Brukskonto").pk), amount="7 300"))

    sent = _send(alice_client, payment)

    assert not sent["Location"].startswith(decoupled)  # nowhere to send the browser
    assert _calls(payment, START_AUTHORISATION) == 1
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING and payment.transaction_status == "ACTC"
    approval = PaymentAuthorisation.objects.get(payment=payment)
    assert approval.authorisation_id and approval.sca_status_href and approval.completed_at is None

    payment_poll(payment_id=payment.pk)  # not approved yet
    approval.refresh_from_db()
    assert approval.completed_at is None and approval.sca_status in ("received", "started")

    approved = bank_client().request(
        "POST", f"/v1/sandbox/payment-authorisations/{approval.authorisation_id}", json_body={"action": "approve"}
    )
    assert approved.status == 200, approved.body
    payment_poll(payment_id=payment.pk)

    approval.refresh_from_db()
    assert approval.completed_at is not None and approval.sca_status == "finalised"
    assert payment.events.filter(kind=PaymentEventKind.SCA_DONE, detail__contains="app").count() == 1
    run_batches()
    run_batches()
    assert payment_poll(payment_id=payment.pk).status in ("ACSC", "ACCC", "ACSP", "PDNG", "ACTC")
    for _ in range(3):
        run_batches()
        if payment_poll(payment_id=payment.pk).status == "ACCC":
            break
    payment.refresh_from_db()
    assert payment.transaction_status == "ACCC" and payment.state == PaymentState.FINAL
    assert payment.next_poll_at is None
