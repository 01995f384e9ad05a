"""The base of the payment services' errors: drafts, submission and approval raise its subclasses."""

from __future__ import annotations


class PaymentServiceError(Exception):
    """Base of the errors of payments.services (a view may catch them as one family)."""
