"""What a signed balance read (bench.simulator's request) asks of the database, and the copies of rows each process
keeps to ask less (bank_simulator.selectors: ``_kept``, ``_covered``): never served for rows a reset replaced,
never for a consent's status, which is read on every request."""

from __future__ import annotations

import pytest
from django.test.utils import CaptureQueriesContext

from bank_simulator import selectors
from bank_simulator.models import Account, Consent, PsuIdentity
from tests.bank_simulator.conftest import PRIVATE_1, accounts_of, error_code, give_consent


@pytest.fixture(autouse=True)
def _no_kept_rows():
    """Each test starts with cold copies, as a new process does."""
    selectors.forget_kept_rows()
    yield
    selectors.forget_kept_rows()


def _balances_href(bank) -> str:
    return accounts_of(bank)["Brukskonto"]["_links"]["balances"]["href"]


def _statements(captured: CaptureQueriesContext) -> list[str]:
    """The statements themselves: the savepoint the replay check's INSERT takes inside the test's transaction is
    not one (in production the INSERT runs alone, in autocommit)."""
    return [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_a_signed_balance_read_costs_the_replay_insert_and_three_selects(
    private_bank, django_assert_max_num_queries
):
    href = _balances_href(private_bank)
    assert private_bank.get(href).status_code == 200  # this process reads its copies once
    # INSERT (replay check, in a savepoint here: 3 statements), the consent with the PSU's clock and session,
    # the account, the items that change its balance.
    with django_assert_max_num_queries(6) as captured:
        response = private_bank.get(href)
    assert response.status_code == 200, response.content
    statements = _statements(captured)
    assert [s.split()[0] for s in statements] == ["INSERT", "SELECT", "SELECT", "SELECT"], statements
    consent, account, items = statements[1:]
    assert 'FROM "bank_simulator_consent"' in consent and '"bank_simulator_tppsession"' in consent
    assert '"bank_simulator_simulatorclock"' in consent
    assert 'FROM "bank_simulator_account"' in account and "JOIN" not in account
    assert 'FROM "bank_simulator_transaction"' in items


def test_a_first_balance_read_in_a_process_reads_the_kept_rows_once(private_bank, django_assert_max_num_queries):
    href = _balances_href(private_bank)
    selectors.forget_kept_rows()
    with django_assert_max_num_queries(8) as captured:
        assert private_bank.get(href).status_code == 200
    assert len(_statements(captured)) == 6  # the four, the PSU with its rows, the consent's accounts


def test_a_reset_is_never_answered_from_the_rows_kept_before_it(private_bank):
    href = _balances_href(private_bank)
    assert private_bank.get(href).status_code == 200  # the PSU's rows and the consent's accounts kept
    old_psu = PsuIdentity.objects.get(psu_id=private_bank.psu_id)
    assert private_bank.post("/v1/sandbox/initialize", None).status_code == 200

    # The PSU-ID is kept across the reset, its consent is not: the read asks for a new one.
    response = private_bank.get(href, headers={"TPP-Session-ID": None})
    assert response.status_code == 401 and error_code(response) == "CONSENT_UNKNOWN"
    assert give_consent(private_bank, PRIVATE_1).params["psu-id"] == private_bank.psu_id
    psu = PsuIdentity.objects.select_related("customer").get(psu_id=private_bank.psu_id)
    assert psu.pk != old_psu.pk and psu.customer_id != old_psu.customer_id  # new rows under new keys

    answer = private_bank.get(href)
    assert answer.status_code == 200, answer.content
    account = Account.objects.get(resource_id=href.split("/")[3])
    assert answer.json()["account"]["iban"] == account.iban
    context = selectors.psu_context(psu_id=private_bank.psu_id, tpp_org_id=psu.tpp_org_id, corporate_id=None)
    assert context is not None
    assert (context.psu.pk, context.psu.customer.pk) == (psu.pk, psu.customer_id)
    assert context.agreement is not None and context.agreement.owner_id == psu.customer_id
    assert context.consent == Consent.objects.get(psu=psu)


def test_a_consent_revoked_after_answered_reads_is_refused(private_bank):
    href = _balances_href(private_bank)
    assert private_bank.get(href).status_code == 200
    customers = private_bank.get("/v1/sandbox/customers").json()
    customer_id = next(c["customerId"] for c in customers if c["customerNumber"] == PRIVATE_1)
    assert private_bank.delete(f"/v1/sandbox/customers/{customer_id}/consents").json() == {"revokedConsents": 1}

    response = private_bank.get(href)
    assert response.status_code == 403 and error_code(response) == "CONSENT_UNKNOWN"


def test_an_account_the_consent_does_not_cover_is_refused_with_the_copies_warm(private_bank):
    href = _balances_href(private_bank)
    assert private_bank.get(href).status_code == 200
    elsewhere = Account.objects.exclude(consents__isnull=False).filter(kind="ACCOUNT").first()
    assert elsewhere is not None
    response = private_bank.get(f"/v1/accounts/{elsewhere.resource_id}/balances")
    assert response.status_code == 403 and error_code(response) == "CONSENT_INVALID"
