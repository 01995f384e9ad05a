"""The page tour: every page of the portal a visitor, a customer and staff see, in one list (``stops``), with data
so that no page is empty, and the check that no URL pattern of the portal is forgotten.

The data (``build``) is made once per test, through the portal's own paths where they are quick: the customer
connects the running sandbox bank (private, and a company's agreement) with the test client at the bank's
screens and reads balances and transactions; drafts come from the payment form; payments the bank has moved on
(sent, settled, cancelled, rejected, outcome unknown, and a company's payment waiting for its second signer)
come from the factories with their status events. A superuser reads the staff pages and the admin.

Every URL pattern of the resolver (tests/security/pages.py walks it) is either visited by a stop or listed in
``EXCLUDED`` (by URL name) or ``EXCLUDED_ADMIN_VIEWS`` (Django's generic admin views, by their name's ending),
each with the reason: ``unvisited_routes`` names the others, and the tour fails on them, so a page added later
cannot be forgotten. The admin's stops are made from its registry: the changelist and a change form with data
of every registered model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings as django_settings
from django.contrib import admin
from django.test import Client
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone

from accounts.models import Transaction
from connections.models import BankConnection
from core.models import BankCall
from payments.models import PaymentAuthorisation, PaymentEventKind, PaymentState
from tests.live_bank import PRIVATE_1, portal_connect
from tests.payments.journeys import PRIVATE_2, cross_border, draft
from tests.payments.payment_factories import PaymentFactory, status_event
from tests.payments.test_multisign import corporate_connection
from tests.security.pages import UNNAMED_ROUTES, World, _admin_object, routes, unnamed_key


@dataclass
class Data:
    customer: object
    signer: object  # the second signer of the company's payment
    staff: object
    connection: BankConnection
    corporate: BankConnection
    account_pk: int
    transaction_pk: int
    drafts: list[int]  # pk of the drafts: the review's, the edit's, the deletion's
    payments: dict[str, int]  # name -> pk
    admin_objects: dict[str, int]  # model label -> pk of the object whose change form is visited
    sandbox: dict[str, str]  # "private", "company" -> a sandbox customer's id


@dataclass(frozen=True)
class Stop:
    """One page of the tour: ``path`` from the data, whom it is seen by, the status it answers, and what to do on
    it before it is checked (``then(page, data)``); whether its screenshot is part of the set."""

    name: str
    who: str  # "visitor", "customer", "signer" or "staff"
    path: Callable[[Data], str]
    status: int = 200
    then: Callable | None = None
    shot: bool = True  # kept in the screenshot set (every page with a problem is, too)


def _submit_bad_payment_form(page, data: Data) -> None:
    """The payment form sent with a bad amount and a past date: the errors are on the page."""
    page.locator("[name=amount]").fill("10.555")
    page.locator("[name=requested_execution_date]").fill((timezone.localdate() - timedelta(days=3)).isoformat())
    page.locator("main form[method=post] button[type=submit].button").last.click()
    page.wait_for_load_state("load")
    assert page.locator(".field-error").count() >= 2, "the payment form showed no errors"


def _submit_empty_sign_up(page, data: Data) -> None:
    page.locator("main form button[type=submit]").first.click()
    page.wait_for_load_state("load")
    assert page.locator(".field-error").count() == 3, "the empty sign-up showed no errors"


def _sandbox(kind: str, view: str = "customer") -> Callable[[Data], str]:
    return lambda d: reverse(f"sandbox_admin:{view}") + f"?customer={d.sandbox[kind]}"


def _payment(name: str, view: str = "payment-detail") -> Callable[[Data], str]:
    return lambda d: reverse(view, args=[d.payments[name]])


CUSTOMER_STOPS = [
    Stop("home", "visitor", lambda d: "/"),
    Stop("sign-in", "visitor", lambda d: reverse("account_login")),
    Stop("sign-up-errors", "visitor", lambda d: reverse("account_signup"), then=_submit_empty_sign_up),
    Stop("password-reset", "visitor", lambda d: reverse("account_reset_password")),
    Stop("password-reset-sent", "visitor", lambda d: reverse("account_reset_password_done")),
    Stop("password-reset-bad-link", "visitor", lambda d: "/auth/password/reset/key/1-cr8a1b-0123456789abcdef/"),
    Stop("password-reset-done", "visitor", lambda d: reverse("account_reset_password_from_key_done")),
    Stop("account-inactive", "visitor", lambda d: reverse("account_inactive")),
    Stop("not-found", "visitor", lambda d: "/no-such-page/", status=404),
    Stop("home-signed-in", "customer", lambda d: "/"),
    Stop("accounts", "customer", lambda d: reverse("bank-accounts")),
    Stop("account", "customer", lambda d: reverse("bank-account", args=[d.account_pk])),
    Stop("transaction", "customer", lambda d: reverse("bank-transaction", args=[d.transaction_pk])),
    Stop("connections", "customer", lambda d: reverse("bank-connections")),
    Stop("connect", "customer", lambda d: reverse("bank-connect")),
    Stop("disconnect", "customer", lambda d: reverse("bank-disconnect", args=[d.connection.pk])),
    Stop("agreements", "customer", lambda d: reverse("bank-agreements", args=[d.corporate.pk])),
    Stop("payment-form-errors", "customer", lambda d: reverse("payment-new"), then=_submit_bad_payment_form),
    Stop("payment-form-domestic", "customer", lambda d: reverse("payment-new-domestic")),
    Stop("payment-review", "customer", lambda d: reverse("payment-review", args=[d.drafts[0]])),
    Stop("payment-edit", "customer", lambda d: reverse("payment-edit", args=[d.drafts[1]])),
    Stop("payment-delete", "customer", lambda d: reverse("payment-draft-delete", args=[d.drafts[2]])),
    Stop("payments", "customer", lambda d: reverse("payment-list")),
    Stop("payment-sent", "customer", _payment("sent")),
    Stop("payment-completed", "customer", _payment("completed")),
    Stop("payment-cancelled", "customer", _payment("cancelled")),
    Stop("payment-rejected", "customer", _payment("rejected")),
    Stop("payment-unknown", "customer", _payment("unknown")),
    Stop("payment-second-signer-initiator", "customer", _payment("shared")),
    Stop("payment-second-signer", "signer", _payment("shared")),
    Stop("payment-cancel", "customer", _payment("sent", "payment-cancel")),
    Stop("payment-reconcile", "customer", _payment("unknown", "payment-reconcile")),
    Stop("my-account", "customer", lambda d: reverse("account")),
    Stop("email", "customer", lambda d: reverse("account_email")),
    Stop("password-change", "customer", lambda d: reverse("account_change_password")),
    Stop("confirm-password", "customer", lambda d: reverse("account_reauthenticate")),
    Stop("two-factor", "customer", lambda d: reverse("mfa_index")),
    Stop("two-factor-app", "customer", lambda d: reverse("mfa_activate_totp")),
    Stop("two-factor-recovery-codes", "customer", lambda d: reverse("mfa_generate_recovery_codes")),
    Stop("security-keys", "customer", lambda d: reverse("mfa_list_webauthn")),
    Stop("security-key-add", "customer", lambda d: reverse("mfa_add_webauthn")),
]

STAFF_STOPS = [
    Stop("staff-dashboard", "staff", lambda d: reverse("staff-dashboard")),
    Stop("sandbox-customers", "staff", lambda d: reverse("sandbox_admin:customers")),
    Stop("sandbox-customer", "staff", _sandbox("private")),
    Stop("sandbox-company", "staff", _sandbox("company")),
    Stop("sandbox-new-customer", "staff", lambda d: reverse("sandbox_admin:customer-create")),
    Stop("sandbox-new-agreement", "staff", _sandbox("company", "agreement-create")),
    Stop("sandbox-new-engagement", "staff", _sandbox("company", "engagement-create")),
    Stop("sandbox-new-account", "staff", _sandbox("private", "account-create")),
    Stop("sandbox-new-transaction", "staff", _sandbox("private", "transaction-create")),
    Stop("sandbox-clock", "staff", lambda d: reverse("sandbox_admin:clock")),
    Stop("sandbox-reset", "staff", lambda d: reverse("sandbox_admin:reset")),
    Stop("staff-two-factor", "staff", lambda d: reverse("mfa_index")),
    Stop("staff-two-factor-confirm", "staff", lambda d: reverse("mfa_reauthenticate")),
    Stop("staff-two-factor-app-off", "staff", lambda d: reverse("mfa_deactivate_totp")),
    Stop("admin", "staff", lambda d: reverse("admin:index")),
    Stop("admin-app-payments", "staff", lambda d: reverse("admin:app_list", args=["payments"])),
]


#: The admin's models whose pages are in the screenshot set; the others' are alike.
SCREENSHOT_MODELS = {"payments.payment", "tpp_portal.bankcall", "connections.bankconnection"}


def _admin_stops() -> list[Stop]:
    """The changelist and a change form (of an object with data) of every model registered in the admin."""
    stops = []
    for model in sorted(admin.site._registry, key=lambda m: m._meta.label_lower):
        info = (model._meta.app_label, model._meta.model_name)
        label = model._meta.label_lower
        name = f"admin-{info[0]}-{info[1]}"
        shot = label in SCREENSHOT_MODELS
        changelist = "admin:{}_{}_changelist".format(*info)
        stops.append(Stop(f"{name}-list", "staff", lambda d, url=changelist: reverse(url), shot=shot))
        stops.append(
            Stop(
                f"{name}-change",
                "staff",
                lambda d, info=info, label=label: reverse(
                    "admin:{}_{}_change".format(*info), args=[d.admin_objects[label]]
                ),
                shot=shot,
            )
        )
    return stops


def stops() -> list[Stop]:
    return CUSTOMER_STOPS + STAFF_STOPS + _admin_stops()


#: URL names not visited, each with the reason. Aliases of one pattern (allauth's "login" and "account_login")
#: share its fate: a pattern counts as visited when any stop resolves to it.
EXCLUDED = {
    "healthz": "the load balancer's health check: JSON, not a page",
    "account_logout": "POST only (a GET answers 405); signing out is the sign-out button of every page",
    "account_email_verification_sent": "shown only right after a sign-up (the sign-up test by keyboard passes "
    "it, tests/browser/test_accessibility.py); it redirects otherwise",
    "account_set_password": "for accounts without a password, which the portal does not make: it redirects to "
    "the password change (visited)",
    "account_confirm_login_code": "sign-in by a mailed code is off: it redirects",
    "second_factor_needed": "shown to staff without a second factor in the middle of their sign-in; it redirects "
    "anyone else (tests/users/test_staff_accounts.py)",
    "staff_invitation": "a token page: a wrong token is the 404 page (visited), a right one is tests/users'",
    "mfa_authenticate": "the second factor's step of a sign-in: visited, with axe, by the staff sign-in test "
    "(tests/browser/test_staff_admin_outcome.py)",
    "mfa_view_recovery_codes": "recovery codes exist only after they are made (404 before): the page that makes "
    "them is visited",
    "mfa_download_recovery_codes": "a text file, not a page",
    "mfa_reauthenticate_webauthn": "needs a security key, which a headless browser cannot hold",
    "mfa_remove_webauthn": "needs a security key, which a headless browser cannot hold",
    "mfa_edit_webauthn": "needs a security key, which a headless browser cannot hold",
    "session-keep-alive": "POST only: the idle warning's request (tests/browser/test_idle_warning.py)",
    "set_language": "POST only: the language switcher's form, on every page",
    "bank-callback": "the bank's redirect back after SCA: tests/browser/test_ais_journey.py and the payment "
    "journeys pass it",
    "bank-reconnect": "POST only: the connections page's button",
    "bank-accounts-refresh": "POST only: the accounts page's button",
    "bank-account-refresh": "POST only: the account page's button",
    "bank-account-export": "a CSV file, not a page",
    "payment-export": "a CSV file, not a page",
    "payment-status-json": "JSON for the payment page's script, not a page",
    "payment-approve": "POST only: the review page's button",
    "payment-check": "POST only: the payment page's button",
    "payment-sign": "POST only: the second signer's button on the payment page (visited)",
    "admin:login": "staff sign in on the portal's sign-in page (visited); the admin's redirects there",
    "admin:logout": "POST only",
    "admin:password_change": "redirects to the portal's password change (visited)",
    "admin-password": "redirects to the portal's password change (visited)",
    "admin:password_change_done": "Django's page after its own password change, which the portal does not use",
    "admin:auth_user_password_change": "redirects to the portal's password change: staff change their own "
    "there, and nobody sets another's",
    "admin:autocomplete": "JSON for the admin's search boxes, not a page",
    "admin:jsi18n": "the admin's JavaScript catalogue, not a page",
    "admin:view_on_site": "a redirect to an object's own page (visited as that page)",
}

#: Django's generic admin views of every model, by the end of their URL name, not visited; the changelist and the
#: change form of every model are.
EXCLUDED_ADMIN_VIEWS = {
    "_add": "Django's empty add form: most models are read-only here (403), the others' change forms are visited",
    "_delete": "Django's generic confirmation, read-only models answer 403",
    "_history": "Django's generic log of an object's changes",
}


def _excluded(route) -> bool:
    if not route.name:
        return unnamed_key(route) in UNNAMED_ROUTES
    if route.name in EXCLUDED:
        return True
    return route.is_admin and any(route.name.endswith(ending) for ending in EXCLUDED_ADMIN_VIEWS)


def unvisited_routes(visited: set[str]) -> list[str]:
    """The URL patterns (their route text and names) that no stop visited and nothing excludes. ``visited``: the
    URL name (``route_of``) of each stop's address."""
    by_route: dict[str, list] = {}
    for route in routes():
        by_route.setdefault(route.route, []).append(route)
    missing = []
    for text, alike in by_route.items():
        if any(route.name in visited or _excluded(route) for route in alike):
            continue
        missing.append(f"{text} ({', '.join(r.name or '-' for r in alike)})")
    return missing


def route_of(path: str) -> str | None:
    """The name of the URL pattern ``path`` resolves to (with its namespace); None for an address of no
    pattern (the 404 page's stop)."""
    try:
        return resolve(path.split("?", 1)[0]).view_name
    except Resolver404:
        return None


def stale_exclusions() -> list[str]:
    """Names in EXCLUDED that no URL pattern has any more (renamed or removed)."""
    names = {route.name for route in routes()}
    return [name for name in EXCLUDED if name not in names]


# --- the data ------------------------------------------------------------------------------------------------


def _payment_with_events(user, connection, debtor: str, state: str, status: str, name: str, **fields):
    payment = PaymentFactory(
        user=user,
        connection=connection,
        debtor_account=debtor,
        state=state,
        transaction_status=status,
        creditor_name=name,
        **fields,
    )
    start = timezone.now() - timedelta(hours=3)
    steps = {
        "": [],
        "PDNG": ["RCVD", "PDNG"],
        "ACSC": ["RCVD", "PDNG", "ACSP", "ACSC"],
        "CANC": ["RCVD", "CANC"],
        "PATC": ["RCVD", "PATC"],
    }
    for minutes, seen in enumerate(steps.get(status, ["RCVD", status])):
        status_event(payment, seen, at=start + timedelta(minutes=10 * minutes))
    return payment


def _sandbox_customers() -> dict[str, str]:
    """A private customer with accounts and a company with an agreement, from the running sandbox bank."""
    from core.bank import bank_client

    listed = bank_client().sandbox.customers(with_accounts=True, with_agreements=True)
    private = next(c for c in listed if c.customer_type != "CORPORATE" and (c.accounts or c.card_accounts))
    company = next(c for c in listed if c.customer_type == "CORPORATE" and c.agreements)
    return {"private": private.customer_id, "company": company.customer_id}


def build(alice, bob) -> Data:
    """alice's bank (a private and a company's connection, read now), three drafts and payments in every outcome;
    bob, a second signer of alice's company; a superuser for the staff pages and the admin, and an object of every
    model registered in the admin."""
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(alice)
    portal_connect(client, identity=PRIVATE_1)
    portal_connect(client, identity=PRIVATE_2, context="CORPORATE")
    refreshed = client.post("/bank/accounts/refresh/", REMOTE_ADDR="203.0.113.9")
    assert refreshed.status_code == 302
    connection = BankConnection.objects.filter(user=alice, context="PRIVATE").get()
    corporate = BankConnection.objects.filter(user=alice, context="CORPORATE").get()
    account = connection.accounts.filter(name__icontains="Brukskonto").first() or connection.accounts.first()
    transaction = Transaction.objects.filter(account=account).order_by("-booking_date").first()
    assert transaction is not None, "the bank gave no transactions"

    debtor = account.bban or account.iban
    drafts = [draft(client, cross_border(str(account.pk), amount=amount)).pk for amount in ("1500", "250", "75")]
    company = corporate_connection(alice, company="tour-company")
    corporate_connection(bob, company="tour-company")
    payments = {
        "sent": _payment_with_events(
            alice, connection, debtor, PaymentState.AWAITING_STATUS, "PDNG", "Bergen Utleie AS"
        ),
        "completed": _payment_with_events(
            alice,
            connection,
            debtor,
            PaymentState.FINAL,
            "ACSC",
            "Müller Maschinenbau GmbH",
            final_at=timezone.now() - timedelta(hours=1),
        ),
        "cancelled": _payment_with_events(
            alice, connection, debtor, PaymentState.FINAL, "CANC", "Fjordline Reiser AS", currency="EUR"
        ),
        "rejected": _payment_with_events(
            alice,
            connection,
            debtor,
            PaymentState.FINAL,
            "RJCT",
            "Société Générale de Transport Maritime et Fluvial du Nord-Ouest",
            tpp_messages=[{"category": "ERROR", "code": "FUNDS_NOT_AVAILABLE", "text": "Not enough money"}],
        ),
        "unknown": _payment_with_events(
            alice, connection, debtor, PaymentState.OUTCOME_UNKNOWN, "", "Tromsø Kraft AS", payment_id=""
        ),
        "shared": _payment_with_events(
            alice,
            company,
            "86011117947",
            PaymentState.AUTHORISING,
            "PATC",
            "Havbruk Leverandør AS",
            context="CORPORATE",
        ),
    }
    PaymentAuthorisation.objects.create(payment=payments["shared"], signer=alice, completed_at=timezone.now())
    assert all(
        p.events.filter(kind=PaymentEventKind.STATUS).count() >= 2 for n, p in payments.items() if n != "unknown"
    )
    staff = get_user_model().objects.create_superuser("root@example.com", "root@example.com", "x" * 20)
    world = World(
        owner=alice,
        stranger=bob,
        staff=staff,
        superuser=staff,
        objects={"connection": connection, "account": account, "payment": payments["completed"]},
    )
    objects = {}
    for model in admin.site._registry:
        label = model._meta.label_lower
        chosen = {"payments.payment": payments["completed"], "auth.user": alice}.get(label)
        chosen = chosen or _admin_object(world, model)
        assert chosen is not None, f"no {label} for its change form"
        objects[label] = chosen.pk
    assert BankCall.objects.exists()
    return Data(
        customer=alice,
        signer=bob,
        staff=staff,
        connection=connection,
        corporate=corporate,
        account_pk=account.pk,
        transaction_pk=transaction.pk,
        drafts=drafts,
        payments={name: p.pk for name, p in payments.items()},
        admin_objects=objects,
        sandbox=_sandbox_customers(),
    )


def session_of(user) -> str:
    """A session of ``user`` that has just typed its password again (allauth's record of it: its pages of the
    second factor ask for a recent one)."""
    client = Client()
    client.force_login(user)
    session = client.session
    typed = {"method": "password", "at": time.time(), "username": user.username, "reauthenticated": True}
    session["account_authentication_methods"] = [typed]
    session["account_authentication_methods_user"] = user._meta.pk.value_to_string(user)  # whose record
    session.save()
    return session.session_key


def cookies(base: str, language: str, session: str | None) -> list[dict]:
    found = [{"url": base, "name": django_settings.LANGUAGE_COOKIE_NAME, "value": language}]
    if session:
        found.append({"url": base, "name": django_settings.SESSION_COOKIE_NAME, "value": session})
    return found
