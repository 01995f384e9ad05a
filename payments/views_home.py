"""The home page, which leads somewhere: for a visitor, what the portal does and how to start; for a signed-in
user without a connection, one "Connect your bank"; with connections, the payments that need the user or
changed lately, the connections that need the user, balances at a glance, the latest payments and "New
payment". It lives in payments, the top customer app, because it reads all three below it through their
selectors.

The page is open to visitors, so it is no sensitive page; the account data on it follow the same rule as one:
none once the session has been idle too long (the user is asked to sign in again to see them)."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.selectors import balances_at_a_glance
from connections.selectors import connections_at_a_glance
from payments.selectors_home import home_payments
from users.security import session_is_idle_expired


@never_cache
@require_GET
def home(request):
    user = request.user
    context = {}
    if user.is_authenticated and session_is_idle_expired(request):
        context["overview_hidden"] = True
    elif user.is_authenticated:
        glance = connections_at_a_glance(user=user)
        context.update(
            connections=glance.connections,
            connections_needing_user=glance.needing_user,
            accounts=balances_at_a_glance(user=user) if glance.connections else [],
            payments=home_payments(user=user),
        )
    return render(request, "home.html", context)
