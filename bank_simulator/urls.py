from django.conf import settings
from django.urls import include, path

from bank_simulator.access import methods
from bank_simulator.views import ais, consents, health, openapi, sandbox, sca

# Resource ids are opaque and may hold '!' and '=' (docs/bank-interface.md, reference 2): str keeps them.
root = [
    path("healthz", health.healthz, name="healthz"),
    path("openapi.json", openapi.document, name="openapi"),
    path("sca/authorize", sca.authorize, name="sca-authorize"),
]
api = [
    # consents and PSU identification
    path(
        "v1/bank-offered-consents",
        methods(POST=consents.bank_offered_consents, DELETE=consents.bank_offered_consent_delete),
    ),
    path("v1/consents", methods(POST=consents.consents_removed)),
    path("v1/users", methods(GET=consents.users)),
    path("v1/agreements", methods(GET=consents.agreements)),
    # account information
    path("v1/accounts", methods(GET=ais.accounts)),
    path("v1/accounts/<str:resource_id>", methods(GET=ais.account_detail)),
    path("v1/accounts/<str:resource_id>/balances", methods(GET=ais.account_balances)),
    path("v1/accounts/<str:resource_id>/transactions", methods(GET=ais.account_transactions)),
    path("v1/accounts/<str:resource_id>/transactions/<str:transaction_id>", methods(GET=ais.transaction_detail)),
    path("v1/card-accounts", methods(GET=ais.card_accounts)),
    path("v1/card-accounts/<str:resource_id>", methods(GET=ais.card_account_detail)),
    path("v1/card-accounts/<str:resource_id>/balances", methods(GET=ais.card_account_balances)),
    path("v1/card-accounts/<str:resource_id>/transactions", methods(GET=ais.card_account_transactions)),
    # sandbox mock data
    path("v1/sandbox/initialize", methods(POST=sandbox.initialize)),
    path("v1/sandbox/customers", methods(GET=sandbox.customers_list, POST=sandbox.customer_create)),
    path("v1/sandbox/customers/<str:customer_id>", methods(GET=sandbox.customer_detail)),
    path("v1/sandbox/customers/<str:customer_id>/consents", methods(DELETE=sandbox.customer_consents_revoke)),
    path("v1/sandbox/agreements", methods(POST=sandbox.agreement_create)),
    path("v1/sandbox/agreements/<str:agreement_id>/engagements", methods(POST=sandbox.agreement_engagements)),
    path("v1/sandbox/accounts", methods(POST=sandbox.account_create)),
    path("v1/sandbox/accounts/<str:resource_id>/transactions", methods(POST=sandbox.mock_transaction_create)),
    path("v1/sandbox/accounts/<str:resource_id>/balances", methods(POST=sandbox.account_balance_update)),
    path("v1/sandbox/card-accounts/<str:resource_id>/balances", methods(POST=sandbox.card_account_balance_update)),
    path("v1/sandbox/clock", methods(GET=sandbox.clock_read, POST=sandbox.clock_advance)),
    path("", include("bank_simulator.pis.urls")),  # payments (part 2)
]
# The API (/v1/..., the sandbox's too) under BANK_SIM_BASE_PATH; the SCA screens and /healthz stay at the root.
_base = settings.BANK_SIM_BASE_PATH.strip("/")
urlpatterns = [*root, path(f"{_base}/", include(api))] if _base else [*root, *api]

handler404 = "bank_simulator.views.health.not_found"
handler500 = "bank_simulator.views.health.server_error"
