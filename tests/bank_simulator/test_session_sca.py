"""An SCA is valid for one TPP and one PSU within a TPP-Session-ID, for an hour (spec sections 3 and 5.8): a read
made with the PSU present that names a TPP-Session-ID is answered only for the PSU who completed SCA in that
session. This is what lets a TPP confirm the PSU-ID a redirect brought back: another customer's PSU-ID swapped
into the address of the TPP's own session is answered with 401 and a scaRedirect."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from bank_simulator.models import ScaSession, ScaStatus
from tests.bank_simulator.conftest import (
    CORPORATE_1,
    PRIVATE_1,
    PRIVATE_2,
    Bank,
    error_code,
    give_consent,
    run_sca,
    sca_path,
)

READS = ["/v1/agreements", "/v1/accounts", "/v1/card-accounts"]


@pytest.fixture
def victim(bank) -> str:
    """Private Customer 2's PSU-ID at this TPP, made by an SCA in a session of its own."""
    other = Bank(Client(), bank.signer)
    give_consent(other, PRIVATE_2)
    assert other.psu_id is not None
    return other.psu_id


def _sca_asked(response, code: str) -> str:
    assert response.status_code == 401, response.content
    assert error_code(response) == code
    return response.json()["_links"]["scaRedirect"]["href"]


def _advance(bank: Bank, seconds: int) -> None:
    response = bank.post("/v1/sandbox/clock", json.dumps({"advanceSeconds": seconds}))
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("read", READS)
def test_the_psu_of_the_sessions_sca_is_answered_in_that_session(private_bank, read):
    assert private_bank.get(read).status_code == 200


@pytest.mark.parametrize("read", READS)
def test_another_customers_psu_id_in_the_session_asks_for_sca(private_bank, victim, read):
    """The attack: the TPP's session had Private Customer 1's SCA; Private Customer 2's PSU-ID is not answered."""
    private_bank.psu_id = victim

    href = _sca_asked(private_bank.get(read), "SCA_NOT_FOUND")

    session = ScaSession.objects.get(token=href.split("state=")[1].split("&")[0])
    # The SCA asked for is the victim's own: its identity step cannot be passed by anyone else.
    assert str(session.requested_psu.psu_id) == victim and session.status == ScaStatus.STARTED
    page = Client().post(sca_path(href), {"identity": PRIVATE_1, "action": "identify"})
    assert page.status_code == 400 and "does not belong to the user" in page.content.decode()


def test_a_corporate_psu_id_is_confirmed_only_in_its_own_session(bank, victim):
    give_consent(bank, CORPORATE_1)  # the TPP's session had a corporate customer's SCA
    assert bank.get("/v1/agreements", headers={"PSU-Corporate-ID": None}).status_code == 200

    bank.psu_id, bank.corporate_id = victim, None  # rewritten to a private PSU-ID, the corporate id dropped

    assert error_code(bank.get("/v1/agreements")) == "SCA_NOT_FOUND"


def test_a_session_without_any_sca_asks_for_sca_and_its_sca_then_holds(private_bank):
    private_bank.session_id = str(uuid.uuid4())  # the same PSU, a session in which it did no SCA

    href = _sca_asked(private_bank.get("/v1/agreements"), "SCA_NOT_FOUND")
    run_sca(Client(), href, PRIVATE_1)

    assert private_bank.get("/v1/agreements").status_code == 200


def test_after_the_hour_the_session_no_longer_speaks_for_the_psu(private_bank):
    _advance(private_bank, 59 * 60)
    assert private_bank.get("/v1/agreements").status_code == 200
    _advance(private_bank, 60 + 1)

    _sca_asked(private_bank.get("/v1/agreements"), "SCA_EXPIRED")
    _sca_asked(private_bank.get("/v1/accounts"), "SCA_EXPIRED")
    # Outside the session (no TPP-Session-ID) the consent still answers.
    assert private_bank.get("/v1/accounts", headers={"TPP-Session-ID": None}).status_code == 200


def test_a_newer_sessions_sca_ends_the_old_session(private_bank):
    old = private_bank.session_id
    private_bank.session_id = str(uuid.uuid4())
    give_consent(private_bank, PRIVATE_1)
    private_bank.session_id = old

    _sca_asked(private_bank.get("/v1/agreements"), "SCA_EXPIRED")


@pytest.mark.parametrize("read", READS)
def test_reads_without_the_psu_or_without_a_session_are_not_affected(private_bank, victim, read):
    private_bank.psu_id = victim if read == "/v1/agreements" else private_bank.psu_id
    private_bank.session_id = str(uuid.uuid4())  # no SCA of anybody in it

    unattended = private_bank.get(read, headers={"PSU-IP-Address": None, "TPP-Session-ID": None})
    attended_outside = private_bank.get(read, headers={"TPP-Session-ID": None})
    unattended_in_session = private_bank.get(read, headers={"PSU-IP-Address": None})

    assert [unattended.status_code, attended_outside.status_code, unattended_in_session.status_code] == [200] * 3
