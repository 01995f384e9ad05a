"""xs2a: a framework-free client for the bank's Berlin Group (NextGenPSD2 1.3) XS2A interface.

``Xs2aClient(ClientConfig(...))`` is the one door to the bank, its operations grouped by resource
(``client.accounts.list(...)``, ``client.payments.initiate(...)``; ``xs2a.services``) over one core
(``xs2a.core``: prepare, sign, send, retry, verify, audit, map errors); ``xs2a.pagination.Pages`` reads a
listing page by page. ``xs2a.signing`` is the request signer (pure functions), ``xs2a.errors`` the exceptions
and ``error_from_response``, ``xs2a.models`` the typed records, ``xs2a.psu.PsuContext`` the PSU headers of a call
and ``xs2a.audit.AuditRecord`` what the audit hook receives. No Django here: the portal's glue is
``core.bank``.
"""

from xs2a.client import CROSS_BORDER, DOMESTIC, ClientConfig, RetryPolicy, Xs2aClient
from xs2a.psu import PsuContext

__all__ = ["CROSS_BORDER", "DOMESTIC", "ClientConfig", "PsuContext", "RetryPolicy", "Xs2aClient"]
