"""Ending a consent: DELETE /v1/bank-offered-consents with the PSU's identifiers, 204 when the bank ended it, and a
distinct error when the bank does not offer it (404/405), against a stub bank."""

from __future__ import annotations

import pytest

from tests.bankfake import Answer, check_signature
from xs2a import errors
from xs2a.psu import PsuContext

PSU_ID = "5d1c3f53-0c3e-4c34-9b1b-5f5a8ac7c2a1"
CORPORATE_ID = "0b4f9f5e-8d55-4ad4-9d2f-9f0d8a3f8f10"
PATH = "/v1/bank-offered-consents"


def test_a_corporate_consent_is_ended_with_both_identifiers(bank, client, test_pki):
    bank.add("DELETE", PATH, Answer(204))
    psu = PsuContext(psu_id=PSU_ID, corporate_id=CORPORATE_ID, context="CORPORATE")

    assert client.consents.delete(psu=psu) is None

    (sent,) = bank.received
    assert sent.method == "DELETE" and sent.target == PATH and sent.body == b""
    assert sent.headers["psu-id"] == PSU_ID and sent.headers["psu-corporate-id"] == CORPORATE_ID
    assert "digest" not in sent.headers and "psu-ip-address" not in sent.headers
    assert check_signature(sent, test_pki.tpp.certificate) == [
        "(request-target)",
        "date",
        "x-request-id",
        "psu-id",
        "psu-corporate-id",
        "tpp-redirect-uri",
    ]


def test_a_private_consent_is_ended_with_the_psu_id(bank, client):
    bank.add("DELETE", PATH, Answer(204))
    client.consents.delete(psu=PsuContext(psu_id=PSU_ID, ip_address="198.51.100.7"))
    (sent,) = bank.received
    assert sent.headers["psu-id"] == PSU_ID and "psu-corporate-id" not in sent.headers


@pytest.mark.parametrize(
    "answer",
    [
        Answer(405, b""),
        Answer(405, {"tppMessages": [{"category": "ERROR", "code": "SERVICE_INVALID"}]}),
        Answer(404, {"tppMessages": [{"category": "ERROR", "code": "NOT_FOUND", "text": "No such endpoint"}]}),
        Answer(404, b"<html>Not Found</html>", {"Content-Type": "text/html"}),
    ],
)
def test_a_bank_that_does_not_offer_it_is_a_distinct_error(bank, make_client, answer):
    records = []
    client = make_client(bank.base_url, audit_hook=records.append)
    bank.add("DELETE", PATH, answer)

    with pytest.raises(errors.ConsentDeletionNotOfferedError, match="ends it at the bank") as caught:
        client.consents.delete(psu=PsuContext(psu_id=PSU_ID))

    assert isinstance(caught.value, errors.ClientError) and caught.value.status == answer.status
    (record,) = records  # sent once, audited under the distinct name
    assert record.error == "ConsentDeletionNotOfferedError" and record.method == "DELETE"


def test_a_consent_the_bank_no_longer_knows_is_a_consent_error(bank, client):
    bank.add("DELETE", PATH, Answer(404, {"tppMessages": [{"category": "ERROR", "code": "CONSENT_UNKNOWN"}]}))
    with pytest.raises(errors.ConsentUnknownError):
        client.consents.delete(psu=PsuContext(psu_id=PSU_ID))


def test_a_404_elsewhere_is_still_an_unknown_resource(bank, client):
    bank.add("GET", "/v1/accounts", Answer(404, {"tppMessages": [{"category": "ERROR", "code": "NOT_FOUND"}]}))
    with pytest.raises(errors.ResourceUnknownError) as caught:
        client.accounts.list(psu=PsuContext(psu_id=PSU_ID))
    assert not isinstance(caught.value, errors.ConsentDeletionNotOfferedError)


def test_the_identifiers_are_required_before_sending(bank, client):
    with pytest.raises(errors.InvalidRequestError, match="PSU-ID"):
        client.consents.delete(psu=PsuContext())
    with pytest.raises(errors.InvalidRequestError, match="PSU-Corporate-ID"):
        client.consents.delete(psu=PsuContext(psu_id=PSU_ID, context="CORPORATE"))
    assert bank.received == []
