"""The bank's operations, one service object per resource, reached from the client (``client.accounts`` ...).

Each service only says which request an operation is (method, path, query, body, PSU) and how its answer reads;
the core (``xs2a.core.Requester``) prepares, signs, sends, retries, verifies, audits and maps errors.
"""

from xs2a.services.accounts import AccountsService, CardAccountsService
from xs2a.services.consents import ConsentsService
from xs2a.services.payments import CROSS_BORDER, DOMESTIC, PRODUCTS, PaymentsService
from xs2a.services.sandbox import SandboxService

__all__ = [
    "CROSS_BORDER",
    "DOMESTIC",
    "PRODUCTS",
    "AccountsService",
    "CardAccountsService",
    "ConsentsService",
    "PaymentsService",
    "SandboxService",
]
