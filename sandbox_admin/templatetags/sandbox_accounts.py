"""A sandbox account as staff read it: its number (an IBAN grouped by four) and name where the portal knows
them, the bank's opaque id (``enc!!...``) only behind a "Details" disclosure."""

from __future__ import annotations

from django import template

register = template.Library()


@register.inclusion_tag("sandbox_admin/_account.html")
def sandbox_account(account_id: str, known: dict) -> dict:
    return {"account_id": account_id, "known": (known or {}).get(account_id)}
