"""A sandbox account as staff read it: its number (an IBAN grouped by four) and name where the portal knows
them, the bank's opaque id (``enc!!...``) only behind a "Details" disclosure."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.http import urlencode

from sandbox_admin.forms import customer_type_label

register = template.Library()


@register.filter
def customer_type(value: str) -> str:
    """The bank's customerType (PRIVATE, CORPORATE) in the reader's language."""
    return customer_type_label(value)


@register.inclusion_tag("sandbox_admin/_account.html")
def sandbox_account(account_id: str, known: dict, add_for: str = "") -> dict:
    """``add_for``: the customer's id, for the "add a transaction" link beside the account (before its
    details, on the same line)."""
    add_url = ""
    if add_for:
        query = urlencode({"customer": add_for, "account": account_id})
        add_url = f"{reverse('sandbox_admin:transaction-create')}?{query}"
    return {"account_id": account_id, "known": (known or {}).get(account_id), "add_url": add_url}
