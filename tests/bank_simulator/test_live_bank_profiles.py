"""The bank profiles that need a real server (docs/sandbox-bank.md, "Bank profiles"): the sandbox bank under
gunicorn, its API under /psd2, over plain HTTP with links written from the host root and over TLS with absolute
links, talked to by the portal's bank client (xs2a). A lost payment answer (a reset, a corrupt TLS record, an
answer held past the client's read timeout) reaches the client as an unknown outcome while the bank holds the
payment: the replay of the same request finds it, and it is the only one.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
import requests

from devtools.livebank import RunningBank, bank_sql, running_bank
from tests.bank_simulator.conftest import PRIVATE_1, REDIRECT_URI, load_dev_signer
from tests.bank_simulator.helpers import LiveTpp
from xs2a import errors, models
from xs2a.client import ClientConfig, Xs2aClient
from xs2a.psu import PsuContext
from xs2a.signing import sign_request

pytestmark = pytest.mark.live_bank

CA = Path(__file__).resolve().parents[2] / "var" / "pki" / "ca.pem"
_AMOUNTS = itertools.count(101)
PSU = PsuContext(identity=PRIVATE_1, context="PRIVATE", ip_address="198.51.100.7")  # single SCA: no PSU-ID


@pytest.fixture(scope="module")
def plain_bank(tmp_path_factory) -> Iterator[RunningBank]:
    profile = {"BANK_SIM_BASE_PATH": "/psd2", "BANK_SIM_LINKS": "root-relative"}
    with running_bank(tmp_path_factory.mktemp("profiles-plain"), settings=profile) as running:
        yield running


@pytest.fixture(scope="module")
def tls_bank(tmp_path_factory) -> Iterator[RunningBank]:
    profile = {"BANK_SIM_BASE_PATH": "/psd2", "BANK_SIM_LINKS": "absolute"}
    with running_bank(tmp_path_factory.mktemp("profiles-tls"), tls=True, settings=profile) as running:
        yield running


# A `bank` fixture of its own (not tests/bankfake.py): a running sandbox bank, tested in each profile.
@pytest.fixture
def bank(request) -> RunningBank:
    return request.getfixturevalue(request.param)


def _client(bank: RunningBank, *, read_timeout: float = 20.0, ahead: int = 0) -> Xs2aClient:
    """The portal's bank client; ``ahead``: its Dates that many seconds ahead (a request sent again within the same
    second would otherwise carry the same Date, hence the same signature: refused as a replay)."""
    signer = load_dev_signer()
    return Xs2aClient(
        ClientConfig(
            base_url=bank.base_url + "/psd2",
            signing_key=signer.key,
            signing_certificate=signer.certificate,
            redirect_uri=REDIRECT_URI,
            ca_bundle=str(CA),
            timeout=(5.0, read_timeout),
        ),
        clock=lambda: dt.datetime.now(dt.UTC) + dt.timedelta(seconds=ahead),
    )


def _bank_sql(bank: RunningBank, query: str, params: tuple) -> list[tuple]:
    return bank_sql(bank.database_path, query, params)


def _payment(bank: RunningBank, amount: str) -> models.PaymentInitiation:
    (iban,) = _bank_sql(
        bank,
        "SELECT a.iban FROM bank_simulator_account a JOIN bank_simulator_customer c ON a.owner_id = c.id "
        "WHERE c.customer_number = ? AND a.name = 'Brukskonto'",
        (PRIVATE_1,),
    )[0]
    return models.PaymentInitiation(
        instructed_amount=models.Amount(Decimal(amount), "EUR"),
        creditor_name="Müller Maschinenbau GmbH",
        creditor_agent="COBADEFFXXX",
        creditor_account=models.AccountReference(iban="DE89370400440532013000", currency="EUR"),
        debtor_account=models.AccountReference(iban=iban, currency="NOK"),
    )


def _arm(bank: RunningBank, payload: bytes) -> None:
    tpp = LiveTpp(bank.base_url)
    target = "/psd2/v1/sandbox/behaviour/drop-next-payment-answer"
    signed = sign_request("POST", target, tpp.headers(), payload, tpp.signer.key, tpp.signer.certificate)
    signed["Content-Type"] = "application/json"
    armed = requests.post(bank.base_url + target, data=payload, headers=signed, timeout=30, verify=str(CA))
    assert armed.status_code == 200, armed.text


@pytest.mark.parametrize(
    ("bank", "written"),
    [("plain_bank", "/psd2/v1/payments/"), ("tls_bank", "https://127.0.0.1:{port}/psd2/v1/payments/")],
    indirect=["bank"],
    ids=["root-relative", "absolute"],
)
def test_the_client_follows_the_links_of_a_bank_with_a_base_path(bank, written):
    client = _client(bank)
    payment = _payment(bank, f"{next(_AMOUNTS)}.00")
    created = client.payments.initiate(payment, psu=PSU, tpp_session_id=str(uuid.uuid4()))
    assert created.status_link.startswith(written.format(port=bank.port)), created.links
    assert client.payments.status(href=created.status_link).transaction_status == "RCVD"
    started = client.payments.start_authorisation(href=created.start_authorisation, psu=PSU)
    assert started.sca_redirect and "/sca/authorize?" in started.sca_redirect
    client.close()


@pytest.mark.parametrize(
    ("bank", "payload", "read_timeout", "seen"),
    [
        # Over plain TCP the client sees the reset as such; over TLS its library reads it as an end of stream.
        ("plain_bank", b'{"mode":"reset"}', 20.0, "Connection reset by peer"),
        ("tls_bank", b'{"mode":"reset"}', 20.0, "after it may have reached the bank"),
        ("tls_bank", b'{"mode":"tls"}', 20.0, "BAD_RECORD_MAC"),  # a record that does not decrypt
        ("plain_bank", b'{"mode":"timeout","delaySeconds":4}', 1.0, "timed out"),
    ],
    indirect=["bank"],
    ids=["reset", "reset-tls", "tls", "timeout"],
)
def test_a_lost_payment_answer_is_an_unknown_outcome_and_the_bank_holds_the_payment(
    bank, payload, read_timeout, seen
):
    _arm(bank, payload)
    client = _client(bank, read_timeout=read_timeout)
    request_id, session = str(uuid.uuid4()), str(uuid.uuid4())
    payment = _payment(bank, f"{next(_AMOUNTS)}.00")  # each its own: no logical duplicate of another
    with pytest.raises(errors.Xs2aError) as caught:
        client.payments.initiate(payment, psu=PSU, tpp_session_id=session, request_id=request_id)
    error = caught.value
    assert isinstance(error, errors.OutcomeUnknownError), repr(error)
    assert error.request_id == request_id and seen in error.message, error.message
    stored = _bank_sql(bank, "SELECT payment_id, status FROM pis_payment WHERE request_id = ?", (request_id,))
    assert len(stored) == 1 and stored[0][1] == "RCVD", stored
    # Armed for one answer only: the replay (same X-Request-ID, signed anew) is answered, with the same payment.
    replay = _client(bank, ahead=2)
    again = replay.payments.initiate(payment, psu=PSU, tpp_session_id=session, request_id=request_id)
    assert again.payment_id == stored[0][0]
    assert _bank_sql(bank, "SELECT count(*) FROM pis_payment WHERE request_id = ?", (request_id,)) == [(1,)]
    client.close()
    replay.close()
