"""schemathesis on the one operation test_live.py leaves out, POST /v1/sandbox/initialize: it resets the
sandbox data the other live tests read, so it gets a bank process of its own. Generated requests (with and
without the real PSU headers) never give a 5xx nor an answer outside the document, and afterwards the bank
still answers its known state."""

from __future__ import annotations

import pytest
import schemathesis

from devtools.livebank import running_bank
from tests.bank_simulator.conftest import REDIRECT_URI
from tests.bank_simulator.helpers import LiveTpp, check_cases, consent

pytestmark = pytest.mark.live_bank


def test_schemathesis_sandbox_initialize_conforms(tmp_path):
    with running_bank(tmp_path) as bank:
        schema = schemathesis.openapi.from_url(f"{bank.base_url}/openapi.json")
        operations = [
            result.ok() for result in schema.get_all_operations() if result.ok().path == "/v1/sandbox/initialize"
        ]
        assert len(operations) == 1
        tpp = LiveTpp(bank.base_url)
        consent(tpp)
        real = {"PSU-ID": tpp.psu_id, "PSU-IP-Address": "198.51.100.7", "TPP-Redirect-URI": REDIRECT_URI}
        for strategy in (operations[0].as_strategy(), operations[0].as_strategy(headers=real)):
            check_cases(tpp, strategy, max_examples=8)
        # The bank still works after whatever the generated requests did: the known customers are there.
        customers = tpp.send("GET", "/v1/sandbox/customers").json()
        assert len(customers) >= 2
