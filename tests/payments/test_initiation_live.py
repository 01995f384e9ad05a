"""Payment initiation through the portal's pages against the sandbox bank running as a real process: form,
review, one submission, SCA at the bank, the callback; a double submit; an answer lost after the bank
committed the payment (a proxy holds the answer past the client's read timeout); single SCA with the national
identity number."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from accounts.models import BankAccount
from connections.models import BankConnection, ConnectionAccess, ScaState
from core.bank import bank_client
from core.models import BankCall
from payments.models import Payment, PaymentAuthorisation, PaymentEvent, PaymentEventKind, PaymentState
from payments.services.polling import payment_poll
from payments.services.reconciliation import payment_reconcile
from tests.live_bank import (  # noqa: F401 - the fixtures
    PRIVATE_1,
    BankBrowser,
    callback_target,
    live_bank,
    live_bank_server,
    portal_connect,
)
from tests.payments.journeys import cross_border
from users.security import REAUTHENTICATED_KEY
from xs2a.psu import PsuContext

pytestmark = pytest.mark.live_bank

INITIATIONS = "/v1/payments/{product}"
CROSS_BORDER = "norwegian-cross-border-credit-transfers"


def _initiation_calls() -> list[BankCall]:
    return list(BankCall.objects.filter(method="POST", path_template=INITIATIONS).order_by("id"))


def _brukskonto(user) -> BankAccount:
    return BankAccount.objects.get(connection__user=user, name="Brukskonto")


def _draft(client, data: dict, url: str = "/payments/new/") -> Payment:
    response = client.post(url, data)
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    payment = Payment.objects.get(pk=int(response["Location"].strip("/").split("/")[1]))
    assert response["Location"] == f"/payments/{payment.pk}/review/"
    return payment


def _approve_at_bank(client, location: str, *, identity: str = PRIVATE_1):
    path, params = callback_target(BankBrowser().authorise(location, identity=identity))
    assert path == "/bank/callback"
    return client.get(path, params), params


def _run_batches_until(payment: Payment, status: str) -> None:
    for _ in range(4):
        if Payment.objects.get(pk=payment.pk).transaction_status == status:
            return
        ran = bank_client().request("POST", "/v1/sandbox/batches/run", json_body={})
        assert ran.status == 200, ran.body
        payment_poll(payment_id=payment.pk)
    assert Payment.objects.get(pk=payment.pk).transaction_status == status


def test_cross_border_payment_from_the_form_through_sca_to_settlement(live_bank, alice_client, alice):  # noqa: F811
    portal_connect(alice_client)
    account = _brukskonto(alice)

    form = alice_client.get("/payments/new/")
    assert form.status_code == 200
    assert (str(account.pk), f"Brukskonto ({account.iban}, NOK)") in form.context["form"].fields[
        "debtor_account"
    ].choices
    payment = _draft(alice_client, cross_border(str(account.pk), amount="12 500"))
    assert payment.state == PaymentState.DRAFT and payment.connection == account.connection
    assert payment.amount == Decimal("12500") and payment.creditor_account == "DE89370400440532013000"

    review = alice_client.get(f"/payments/{payment.pk}/review/")
    page = review.content.decode()
    assert review.status_code == 200 and "Müller Maschinenbau GmbH" in page and "DE89370400440532013000" in page
    assert "national_identity_number" not in page  # the connection's PSU-ID is used
    assert not _initiation_calls()  # nothing reaches the bank before the review is posted

    sent = alice_client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})

    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
    payment.refresh_from_db()
    assert payment.state == PaymentState.AUTHORISING
    assert payment.payment_id and payment.transaction_status == "RCVD"
    assert payment.fee_amount == Decimal("50.00") and payment.fee_currency == "NOK" and payment.fee_indicator
    assert set(payment.links) >= {"status", "startAuthorisation"}
    assert payment.psu_identity == "" and payment.initiation_psu == ""  # kept only while the answer is unknown
    (call,) = _initiation_calls()
    assert call.request_id == str(payment.request_id) and call.status == 201 and call.psu_present
    assert call.user == alice and call.object_id == str(payment.pk)
    authorisation = PaymentAuthorisation.objects.get(payment=payment)
    assert authorisation.signer == alice and authorisation.completed_at is None
    assert authorisation.sca_state.purpose == "payment"

    back, params = _approve_at_bank(alice_client, sent["Location"])

    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"
    assert params["state"] == authorisation.sca_state.token
    assert params["tpp-session-id"] == authorisation.sca_state.tpp_session_id
    authorisation.refresh_from_db()
    assert authorisation.completed_at is not None
    assert ScaState.objects.get(pk=authorisation.sca_state_id).used_at is not None
    kinds = list(PaymentEvent.objects.filter(payment=payment).values_list("kind", flat=True))
    assert kinds[:4] == ["created", "submitted", "status", "sca_started"] and "sca_done" in kinds
    payment.refresh_from_db()
    assert payment.next_poll_at is not None  # polling starts with the callback

    outcome = payment_poll(payment_id=payment.pk)
    assert outcome.ok and outcome.status == "PDNG"
    _run_batches_until(payment, "ACSC")
    payment.refresh_from_db()
    assert payment.state == PaymentState.FINAL and len(_initiation_calls()) == 1

    replay = alice_client.get("/bank/callback", params)
    assert replay.status_code == 400  # the SCA state is single-use


def test_a_double_submit_makes_one_payment(live_bank, alice_client, alice):  # noqa: F811
    portal_connect(alice_client)
    payment = _draft(alice_client, cross_border(str(_brukskonto(alice).pk)))
    posted = {"idempotency_key": str(payment.idempotency_key)}

    first = alice_client.post(f"/payments/{payment.pk}/review/", posted)
    second = alice_client.post(f"/payments/{payment.pk}/review/", posted)

    assert first.status_code == 302 and first["Location"].startswith(live_bank)
    # A submitted payment asks for the password before the next one: the second post sends nothing.
    assert second.status_code == 302 and second["Location"].startswith("/auth/confirm-password/")
    _password_typed_now(alice_client)
    third = alice_client.post(f"/payments/{payment.pk}/review/", posted)
    assert third.status_code == 302 and third["Location"] == f"/payments/{payment.pk}/"
    assert Payment.objects.filter(user=alice).exclude(state=PaymentState.DRAFT).count() == 1
    assert len(_initiation_calls()) == 1


def _password_typed_now(client) -> None:
    session = client.session
    session[REAUTHENTICATED_KEY] = datetime.now(UTC).isoformat()
    session.save()


def test_a_submit_arriving_while_the_first_waits_for_the_bank_sends_nothing(
    live_bank,  # noqa: F811
    alice_client,
    alice,
    client,
    monkeypatch,
):
    """The second request of a double click arrives while the first is still waiting for the bank's answer."""
    portal_connect(alice_client)
    payment = _draft(alice_client, cross_border(str(_brukskonto(alice).pk), amount="150001"))
    posted = {"idempotency_key": str(payment.idempotency_key)}
    from payments.services import initiation_call

    real_send = initiation_call.send
    during: list = []

    def send_with_a_second_submit(*args, **kwargs):
        during.append(alice_client.post(f"/payments/{payment.pk}/review/", posted))
        return real_send(*args, **kwargs)

    monkeypatch.setattr(initiation_call, "send", send_with_a_second_submit)
    first = alice_client.post(f"/payments/{payment.pk}/review/", posted)

    assert first.status_code == 302 and first["Location"].startswith(live_bank)
    (second,) = during
    assert second.status_code == 302 and second["Location"] == f"/payments/{payment.pk}/reconcile/"
    assert len(_initiation_calls()) == 1


class _DroppingProxy:
    """Forwards every request to the bank; the first payment initiation is forwarded (the bank commits it)
    and its answer held past the client's read timeout, then the connection is closed without an answer."""

    def __init__(self, bank: str, hold: float) -> None:
        self.bank = bank
        self.hold = hold
        self.dropped: list[dict] = []
        self.drop_next_initiation = True
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in {"host", "content-length", "connection", "accept-encoding"}
                }
                headers["Accept-Encoding"] = "identity"
                answer = requests.request(
                    self.command, proxy.bank + self.path, data=body, headers=headers, timeout=15
                )
                initiation = self.command == "POST" and self.path.split("?")[0].count("/") == 3
                if initiation and proxy.drop_next_initiation:
                    proxy.drop_next_initiation = False
                    proxy.dropped.append(answer.json())
                    time.sleep(proxy.hold)
                    self.close_connection = True
                    return
                self.send_response(answer.status_code)
                for name, value in answer.headers.items():
                    if name.lower() not in {
                        "content-length",
                        "transfer-encoding",
                        "connection",
                        "content-encoding",
                    }:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _DroppingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_answer_lost_after_the_bank_committed_leads_to_one_payment_and_its_status(
    live_bank,  # noqa: F811
    alice_client,
    alice,
    settings,
):
    portal_connect(alice_client)
    payment = _draft(alice_client, cross_border(str(_brukskonto(alice).pk), amount="12000"))
    settings.BANK_TIMEOUT = 1.5
    with _DroppingProxy(live_bank, hold=3.0) as proxy:
        settings.BANK_BASE_URL = proxy.url
        bank_client.cache_clear()
        sent = alice_client.post(
            f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)}
        )

        assert sent.status_code == 302 and sent["Location"] == f"/payments/{payment.pk}/reconcile/"
        (created_at_bank,) = proxy.dropped  # the bank made the payment; its answer never reached the portal
        payment.refresh_from_db()
        assert payment.state == PaymentState.OUTCOME_UNKNOWN and payment.payment_id == ""
        assert payment.reconcile_at is not None and payment.initiation_psu  # kept, encrypted, for the replay
        page = alice_client.get(sent["Location"])
        assert page.status_code == 200 and "Check now" in page.content.decode()

        # The user's "check now", inside the replay window (once the first can no longer be on its way): the very
        # same request is replayed.
        Payment.objects.filter(pk=payment.pk).update(replay_not_before=None)
        outcome = payment_reconcile(
            payment_id=payment.pk,
            actor=alice,
            presence=PsuContext(ip_address="127.0.0.1", user_agent="pytest", accept_language="nb"),
        )

    assert outcome.state == PaymentState.INITIATED
    payment.refresh_from_db()
    assert payment.payment_id == created_at_bank["paymentId"]  # the bank's one payment, not a second one
    assert payment.transaction_status == "RCVD" and payment.psu_identity == "" and payment.initiation_psu == ""
    calls = _initiation_calls()
    assert len(calls) == 2 and {c.request_id for c in calls} == {str(payment.request_id)}
    assert calls[0].status is None and calls[0].error == "OutcomeUnknownError" and calls[1].status == 201
    kinds = list(payment.events.values_list("kind", flat=True))
    assert PaymentEventKind.OUTCOME_UNKNOWN in kinds and PaymentEventKind.RECONCILED in kinds

    settings.BANK_BASE_URL = live_bank
    bank_client.cache_clear()
    start = alice_client.post(f"/payments/{payment.pk}/approve/")
    assert start.status_code == 302 and start["Location"].startswith(live_bank)
    back, _params = _approve_at_bank(alice_client, start["Location"])
    assert back.status_code == 302
    assert payment_poll(payment_id=payment.pk).status == "PDNG"
    _run_batches_until(payment, "ACSC")


def test_single_sca_with_the_national_identity_number_keeps_the_psu_id(live_bank, client, alice, bob):  # noqa: F811
    # bob connects as the same bank customer only so the test knows the IBAN to type; his portal user is then
    # deleted, which frees the bank identity (a PSU-ID belongs to one portal user: connections.PsuBinding).
    client.force_login(bob)
    portal_connect(client)
    iban = _brukskonto(bob).iban
    bob.delete()
    client.force_login(alice)
    assert not BankConnection.objects.filter(user=alice).exists()

    form = client.get("/payments/new/domestic/")
    assert form.status_code == 200 and "debtor_account" in form.context["form"].fields
    payment = _draft(
        client,
        {
            "debtor_account": iban,
            "amount": "1250.50",
            "creditor_name": "Bergen Utleie AS",
            "creditor_account": "1506.12.34508",
            "remittance_information": "Husleie desember",
        },
        url="/payments/new/domestic/",
    )
    assert payment.connection is None and payment.product == "norwegian-domestic-credit-transfers"
    review = client.get(f"/payments/{payment.pk}/review/")
    assert "national_identity_number" in review.content.decode()

    missing = client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})
    assert missing.status_code == 400 and "national_identity_number" in missing.context["form"].errors
    wrong = client.post(
        f"/payments/{payment.pk}/review/",
        {"idempotency_key": str(payment.idempotency_key), "national_identity_number": "13039319956"},
    )
    assert wrong.status_code == 400 and "national_identity_number" in wrong.context["form"].errors
    assert not _initiation_calls()

    sent = client.post(
        f"/payments/{payment.pk}/review/",
        {"idempotency_key": str(payment.idempotency_key), "national_identity_number": PRIVATE_1},
    )

    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
    (call,) = _initiation_calls()
    assert call.status == 201
    payment.refresh_from_db()
    assert payment.psu_identity == ""  # never kept once the bank answered
    back, params = _approve_at_bank(client, sent["Location"])
    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"
    payment.refresh_from_db()
    kept = BankConnection.objects.get(user=alice)
    assert payment.connection == kept and kept.psu_id == params["psu-id"]
    assert kept.access == ConnectionAccess.PAYMENTS and kept.context == "PRIVATE"
    # Spec 3 rule 5: the domestic status is readable now that it is approved.
    assert payment_poll(payment_id=payment.pk).status == "PDNG"

    # Next time the kept PSU-ID is used: no identity number is asked.
    again = _draft(
        client,
        {
            "debtor_account": iban,
            "amount": "99",
            "creditor_name": "Bergen Utleie AS",
            "creditor_account": "15061234508",
            "remittance_information": "Strøm",
        },
        url="/payments/new/domestic/",
    )
    assert again.connection == kept
    assert "national_identity_number" not in client.get(f"/payments/{again.pk}/review/").content.decode()


def test_the_banks_refusal_is_shown_beside_the_field_it_names(live_bank, alice_client, alice):  # noqa: F811
    portal_connect(alice_client)
    account = _brukskonto(alice)
    # The debtor account's currency is checked by the bank only: it answers 400 with path debtorAccount.currency.
    BankAccount.objects.filter(pk=account.pk).update(currency="EUR")
    payment = _draft(alice_client, cross_border(str(account.pk), currency="EUR", amount="20000"))

    sent = alice_client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})

    assert sent.status_code == 302 and sent["Location"] == f"/payments/{payment.pk}/edit/"
    payment.refresh_from_db()
    assert payment.state == PaymentState.REFUSED and payment.payment_id == ""
    assert payment.tpp_messages[0]["path"] == "debtorAccount.currency"
    page = alice_client.get(sent["Location"])
    assert page.status_code == 200
    errors = page.context["form"].errors
    assert any("account's currency" in text for text in errors["debtor_account"])
    assert not PaymentAuthorisation.objects.filter(payment=payment).exists()


def test_a_logical_duplicate_is_refused_until_the_user_confirms_it(live_bank, alice_client, alice):  # noqa: F811
    portal_connect(alice_client)
    key = str(_brukskonto(alice).pk)
    first = _draft(alice_client, cross_border(key, amount="4321"))
    alice_client.post(f"/payments/{first.pk}/review/", {"idempotency_key": str(first.idempotency_key)})
    _password_typed_now(alice_client)
    same = _draft(alice_client, cross_border(key, amount="4321"))

    refused = alice_client.post(f"/payments/{same.pk}/review/", {"idempotency_key": str(same.idempotency_key)})

    assert refused.status_code == 302 and refused["Location"] == f"/payments/{same.pk}/edit/"
    same.refresh_from_db()
    assert same.state == PaymentState.REFUSED and same.tpp_messages[0]["path"] == "allowLogicalDuplicate"
    page = alice_client.get(refused["Location"])
    # said in the portal's words, not the bank's (which name allowLogicalDuplicate and the bank's payment id)
    assert page.context["bank_errors"] == [] and "allowLogicalDuplicate" not in page.content.decode()
    # The first is still awaiting approval: it is shown instead of offering to pay again.
    first.refresh_from_db()
    assert not page.context["offer_duplicate"] and page.context["alike_open"] == first
    assert f"/payments/{first.pk}/" in page.content.decode()
    ignored = alice_client.post(
        refused["Location"], {**cross_border(key, amount="4321"), "allow_logical_duplicate": "on"}
    )
    assert not Payment.objects.get(pk=int(ignored["Location"].split("/")[2])).allow_logical_duplicate
    Payment.objects.filter(user=alice, allow_logical_duplicate=False, state=PaymentState.DRAFT).delete()
    # Once the first is final (as its status read would make it), the choice is offered and names it.
    Payment.objects.filter(pk=first.pk).update(state=PaymentState.FINAL, transaction_status="ACSC")
    page = alice_client.get(refused["Location"])
    assert page.context["offer_duplicate"] and page.context["duplicates"].pk == first.pk
    assert first.reference in page.content.decode()

    confirmed = alice_client.post(
        refused["Location"], {**cross_border(key, amount="4321"), "allow_logical_duplicate": "on"}
    )
    again = Payment.objects.get(pk=int(confirmed["Location"].split("/")[2]))
    assert again.allow_logical_duplicate and again.pk != same.pk
    _password_typed_now(alice_client)
    sent = alice_client.post(f"/payments/{again.pk}/review/", {"idempotency_key": str(again.idempotency_key)})

    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
    again.refresh_from_db()
    assert again.state == PaymentState.AUTHORISING and again.payment_id != first.payment_id
    assert [c.status for c in _initiation_calls()] == [201, 409, 201]


def test_a_cancelled_approval_changes_nothing_shows_the_banks_status_and_can_be_retried(
    live_bank,  # noqa: F811
    alice_client,
    alice,
):
    portal_connect(alice_client)
    payment = _draft(alice_client, cross_border(str(_brukskonto(alice).pk), amount="3210"))
    sent = alice_client.post(f"/payments/{payment.pk}/review/", {"idempotency_key": str(payment.idempotency_key)})
    events = list(payment.events.values_list("kind", flat=True))

    path, params = callback_target(BankBrowser().authorise(sent["Location"], cancel=True))
    failed = alice_client.get(path, params)

    # The failure redirect proves nothing by itself: the portal asked the bank, which still has the payment
    # unapproved, and whose scaStatus of that approval says it failed (the bank's word, not the redirect's).
    assert failed.status_code == 200 and failed.context["payment"].pk == payment.pk
    assert failed.context["payment"].transaction_status == "RCVD" and failed.context["may_approve"]
    assert "The approval at the bank was stopped before it was completed." in failed.content.decode()
    authorisation = PaymentAuthorisation.objects.get(payment=payment)
    assert authorisation.sca_status == "failed" and authorisation.failed_at is not None
    assert authorisation.completed_at is None
    assert ScaState.objects.get(pk=authorisation.sca_state_id).used_at is None
    assert list(payment.events.exclude(kind=PaymentEventKind.STATUS).values_list("kind", flat=True)) == [
        *(kind for kind in events if kind != PaymentEventKind.STATUS),
        PaymentEventKind.SCA_FAILED,
    ]

    again = alice_client.post(f"/payments/{payment.pk}/approve/")
    assert again.status_code == 302 and again["Location"].startswith(live_bank)
    back, _params = _approve_at_bank(alice_client, again["Location"])

    assert back.status_code == 302 and back["Location"] == f"/payments/{payment.pk}/"
    authorisation.refresh_from_db()
    assert authorisation.completed_at is not None and authorisation.failed_at is None
    assert PaymentAuthorisation.objects.filter(payment=payment).count() == 1
    assert len(_initiation_calls()) == 1


def test_an_approval_at_the_bank_spares_the_password_for_the_next_payment(live_bank, alice_client, alice):  # noqa: F811
    portal_connect(alice_client)
    account = str(_brukskonto(alice).pk)
    first = _draft(alice_client, cross_border(account, amount="100"))
    sent = alice_client.post(f"/payments/{first.pk}/review/", {"idempotency_key": str(first.idempotency_key)})
    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
    assert REAUTHENTICATED_KEY not in alice_client.session  # a submitted payment asks for the password again ...
    _approve_at_bank(alice_client, sent["Location"])  # ... unless its approval at the bank is completed

    second = _draft(alice_client, cross_border(account, amount="200"))
    review = alice_client.get(f"/payments/{second.pk}/review/")
    assert review.status_code == 200  # no password page in between
    sent = alice_client.post(f"/payments/{second.pk}/review/", {"idempotency_key": str(second.idempotency_key)})
    assert sent.status_code == 302 and sent["Location"].startswith(live_bank)
    records = alice_client.session["account_authentication_methods"]
    assert records[-1]["method"] == "bank_sca" and "reauthenticated" not in records[-1]

    # The second payment's approval was never completed: the third one asks for the password.
    third = _draft(alice_client, cross_border(account, amount="300"))
    asked = alice_client.post(f"/payments/{third.pk}/review/", {"idempotency_key": str(third.idempotency_key)})
    assert asked.status_code == 302 and asked["Location"].startswith("/auth/confirm-password/")
    assert Payment.objects.get(pk=third.pk).state == PaymentState.DRAFT
