"""Every page of the portal, found by walking the URL resolver, for the generic security tests.

The tests of this package never list pages by hand: they walk ``get_resolver()``, so a view added later is
covered the moment its URL exists. A URL without parameters needs nothing here. A URL WITH parameters needs to
know which object to put in them: ``PREFIX_PARAMETERS`` fills every route under a known prefix
(``payments/<int:pk>/``), ``URL_PARAMETERS`` others by name (for the admin, a model registered in the
admin needs an object, see ``ADMIN_OBJECTS``). ``test_every_page_is_reachable_by_the_walk`` fails, naming the
URL, until it is there, so no page silently escapes the checks.

``PREFIX_PARAMETERS`` and ``URL_PARAMETERS`` say how to build the parameters from the ``World`` (objects made by
the factories, owned by alice) and whether the URL addresses alice's own object (``owned=True``): those go through
the ownership matrix (another customer and staff get 404, nothing changes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import models
from django.urls import URLPattern, URLResolver, get_resolver, reverse


@dataclass(frozen=True)
class Route:
    """One URL pattern of the resolver."""

    route: str  # the pattern text, prefixes joined: "bank/connections/<int:pk>/disconnect/"
    name: str  # with its namespace: "bank-disconnect", "admin:index"; "" for an unnamed pattern
    parameters: tuple[str, ...]

    @property
    def is_admin(self) -> bool:
        return self.name.startswith("admin:") or self.route.startswith("admin/")


@dataclass(frozen=True)
class Page:
    """One concrete address to request."""

    route: Route
    url: str
    owned: bool = False  # the address names an object of World.owner

    def __str__(self) -> str:
        return self.url


@dataclass
class World:
    """The objects the walk fills URL parameters with. ``owner`` (alice) owns them; ``stranger`` (bob) is
    another customer; ``staff`` (charlie) is staff without superuser rights; ``superuser`` uses the admin."""

    owner: Any
    stranger: Any
    staff: Any
    superuser: Any
    objects: dict[str, models.Model] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["objects"][name]
        except KeyError:
            raise AttributeError(name) from None


def make_world(owner, stranger, staff) -> World:
    """alice's (``owner``'s) bank connection, account, transaction and payment, made by the factories, and a
    superuser for the admin."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import Transaction, TransactionStatus
    from tests.bank_factories import BankAccountFactory, BankConnectionFactory
    from tests.payments.payment_factories import PaymentFactory

    superuser = get_user_model().objects.create_superuser("root@example.com", "root@example.com", "x" * 20)
    connection = BankConnectionFactory(user=owner)
    account = BankAccountFactory(connection=connection)
    payment = PaymentFactory(user=owner, connection=connection)
    transaction = Transaction.objects.create(
        account=account,
        transaction_id="TX-walk-000001",
        status=TransactionStatus.BOOKED,
        booking_date=timezone.localdate(),
        value_date=timezone.localdate(),
        amount=Decimal("-100.00"),
        currency="NOK",
        counterparty_name="Rema 1000",
        fingerprint="0" * 64,
        raw={},
        first_seen_at=timezone.now(),
        updated_at=timezone.now(),
    )
    objects = {"connection": connection, "account": account, "payment": payment, "transaction": transaction}
    return World(owner=owner, stranger=stranger, staff=staff, superuser=superuser, objects=objects)


@dataclass(frozen=True)
class Parameters:
    build: Callable[[World], list[dict[str, Any]]]  # one dict per address to request
    owned: bool = False


def _one(build: Callable[[World], dict[str, Any]], *, owned: bool = False) -> Parameters:
    return Parameters(lambda world: [build(world)], owned=owned)


# Route prefix -> how to fill the parameters of EVERY route under it: a page added later under a known prefix
# ("payments/<int:pk>/...") is covered without any change here.
PREFIX_PARAMETERS: dict[str, Parameters] = {
    "bank/connections/<int:pk>/": _one(lambda w: {"pk": w.connection.pk}, owned=True),
    "bank/accounts/<int:pk>/": _one(lambda w: {"pk": w.account.pk}, owned=True),
    "bank/transactions/<int:pk>/": _one(lambda w: {"pk": w.transaction.pk}, owned=True),
    "payments/<int:pk>/": _one(lambda w: {"pk": w.payment.pk}, owned=True),
    # allauth.mfa's pages of one security key: nobody in the World has one, so a missing key (its 404 path).
    "auth/2fa/webauthn/keys/<int:pk>/": _one(lambda w: {"pk": 999999}),
}

# URL name -> how to fill its parameters, for routes outside those prefixes. Token pages get a well-formed but
# wrong token (the "invalid link" page); their valid-token path is tested with the feature.
URL_PARAMETERS: dict[str, Parameters] = {
    "account_reset_password_from_key": _one(lambda w: {"uidb36": "1", "key": "cr8a1b-0123456789abcdef"}),
    "staff_invitation": _one(lambda w: {"token": "Zm9yZ2VkLXRva2VuLXRoYXQtd2FzLW5ldmVyLWlzc3VlZC0x"}),
    # The admin: one app index per app with models in the admin; object pages come from _admin_model.
    "admin:app_list": Parameters(
        lambda w: [{"app_label": label} for label in sorted({m._meta.app_label for m in admin.site._registry})]
    ),
    # Not walked: a redirect from the admin to an object's own page (get_absolute_url), walked as that page.
    "admin:view_on_site": Parameters(lambda w: []),
}


def parameters_of(route: Route) -> Parameters | None:
    if route.name in URL_PARAMETERS:
        return URL_PARAMETERS[route.name]
    for prefix, spec in PREFIX_PARAMETERS.items():
        if route.route.startswith(prefix) and set(route.parameters) == set(
            re.findall(r"<(?:\w+:)?(\w+)>", prefix)
        ):
            return spec
    return None


# Patterns that are not requested by name, with the reason.
UNNAMED_ROUTES = {
    "admin/(?P<url>.*)$": "the admin's catch-all: redirects unknown admin addresses (walked via the admin index)",
    "admin/<app>/<model>/<path:object_id>/": "Django's redirect of an old object address to its change page",
}


def _exchange_rate(world: World) -> models.Model:
    from payments.models import ExchangeRate, ExchangeRateSource

    return ExchangeRate.objects.create(
        currency="EUR",
        rate=Decimal("11.7215"),
        unit=1,
        rate_date=date(2026, 3, 2),
        source=ExchangeRateSource.MANUAL,
    )


def _bank_call(world: World) -> models.Model:
    from django.utils import timezone

    from core.models import BankCall

    return BankCall.objects.create(
        started_at=timezone.now(),
        method="GET",
        path_template="/v1/accounts",
        request_id="walk-0001",
        status=200,
        duration_ms=12,
        psu_present=True,
        bytes_sent=0,
        bytes_received=512,
        user=world.owner,
    )


def _authenticator(world: World) -> models.Model:
    from allauth.mfa.models import Authenticator

    return Authenticator.objects.create(
        user=world.stranger, type=Authenticator.Type.TOTP, data={"secret": "JBSWY3DPEHPK3PXP"}
    )


# Admin model label -> how to make one object for its change/delete/history pages, when the World has none.
ADMIN_OBJECTS: dict[str, Callable[[World], models.Model]] = {
    "auth.group": lambda world: Group.objects.create(name="Walkers"),
    "payments.exchangerate": _exchange_rate,
    "tpp_portal.bankcall": _bank_call,
    "users.secondfactor": _authenticator,
}


def routes() -> list[Route]:
    """Every pattern of the portal's resolver, prefixes joined."""

    def walk(resolver: URLResolver, prefix: str, namespace: str) -> Iterator[Route]:
        for pattern in resolver.url_patterns:
            text = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                inner = namespace
                if pattern.namespace:
                    inner = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
                yield from walk(pattern, text, inner)
            elif isinstance(pattern, URLPattern):
                name = f"{namespace}:{pattern.name}" if namespace and pattern.name else (pattern.name or "")
                parameters = tuple(pattern.pattern.regex.groupindex)
                yield Route(route=text, name=name, parameters=_parameters(text, parameters))

    return list(walk(get_resolver(), "", ""))


def _parameters(text: str, named: tuple[str, ...]) -> tuple[str, ...]:
    # Resolver prefixes may carry parameters too (an include under "<int:pk>/").
    found = re.findall(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>", text)
    return tuple(dict.fromkeys([a or b for a, b in found] + list(named)))


def unnamed_key(route: Route) -> str:
    """The UNNAMED_ROUTES key of an unnamed pattern (app and model of admin object redirects generalised)."""
    return re.sub(
        r"^admin/[a-z0-9_]+/[a-z0-9_]+/<path:object_id>/$", "admin/<app>/<model>/<path:object_id>/", route.route
    )


def _admin_model(route: Route) -> type[models.Model] | None:
    """The model of an admin object page (``admin:<app>_<model>_<view>`` with an object id), else None."""
    if not route.is_admin or not set(route.parameters) <= {"object_id", "id"}:
        return None
    for model in admin.site._registry:
        if route.name.startswith(f"admin:{model._meta.app_label}_{model._meta.model_name}_"):
            return model
    return None


def _admin_object(world: World, model: type[models.Model]) -> models.Model | None:
    existing = model._default_manager.order_by("pk").first()
    if existing is not None:
        return existing
    build = ADMIN_OBJECTS.get(model._meta.label_lower)
    return build(world) if build else autobuild(world, model)


def autobuild(world: World, model: type[models.Model], depth: int = 0) -> models.Model | None:
    """One saved object of ``model`` with plausible values in its required fields (foreign keys to the World's
    objects, or to objects built the same way); None when a field is of a kind it cannot fill."""
    if depth > 4:
        return None
    known = {type(world.owner): world.owner, **{type(obj): obj for obj in world.objects.values()}}
    values: dict[str, Any] = {}
    for field_ in model._meta.concrete_fields:
        if field_.primary_key or field_.has_default() or getattr(field_, "auto_now", False):
            continue
        if getattr(field_, "auto_now_add", False):
            continue
        if field_.is_relation:
            target = field_.related_model
            related = known.get(target)
            if related is None or field_.one_to_one:
                related = None if field_.one_to_one else target._default_manager.order_by("pk").first()
                related = related or autobuild(world, target, depth + 1)
            if related is None and not field_.null:
                return None
            values[field_.name] = related
            continue
        value = _plausible(field_)
        if value is _UNFILLABLE:
            if not field_.null:
                return None
            value = None
        values[field_.name] = value
    return model._default_manager.create(**values)


_UNFILLABLE = object()


def _plausible(field_: models.Field) -> Any:
    import uuid

    from django.utils import timezone

    if field_.choices:
        return field_.choices[0][0]
    if isinstance(field_, models.BooleanField):
        return False
    if isinstance(field_, models.DecimalField):
        return Decimal("1")
    if isinstance(field_, models.IntegerField):
        return 1
    if isinstance(field_, models.FloatField):
        return 1.0
    if isinstance(field_, models.DateTimeField):
        return timezone.now()
    if isinstance(field_, models.DateField):
        return timezone.now().date()
    if isinstance(field_, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field_, models.JSONField):
        return {}
    if isinstance(field_, models.GenericIPAddressField):
        return "127.0.0.1"
    if isinstance(field_, models.EmailField):
        return "walk@example.com"
    if isinstance(field_, models.CharField | models.TextField):
        return "walk"[: field_.max_length or 4]
    return _UNFILLABLE


def pages(world: World) -> list[Page]:
    """Every concrete address of the portal. Raises LookupError naming a pattern the walk cannot fill."""
    found: list[Page] = []
    for route in routes():
        if not route.name:
            if unnamed_key(route) not in UNNAMED_ROUTES:
                raise LookupError(f"unnamed URL pattern {route.route!r}: name it, or add it to UNNAMED_ROUTES")
            continue
        if not route.parameters:
            found.append(Page(route, reverse(route.name)))
            continue
        model = _admin_model(route)
        if model is not None and route.name not in URL_PARAMETERS:
            obj = _admin_object(world, model)
            if obj is None:
                raise LookupError(f"{route.name}: no {model._meta.label} object; add a builder to ADMIN_OBJECTS")
            kwargs = dict.fromkeys(route.parameters, obj.pk)
            found.append(Page(route, reverse(route.name, kwargs=kwargs)))
            continue
        spec = parameters_of(route)
        if spec is None:
            raise LookupError(
                f"{route.name} ({route.route}) has parameters {route.parameters}: add it to URL_PARAMETERS or "
                "PREFIX_PARAMETERS in tests/security/pages.py"
            )
        found.extend(
            Page(route, reverse(route.name, kwargs=kwargs), owned=spec.owned) for kwargs in spec.build(world)
        )
    return found


def portal_pages(world: World) -> list[Page]:
    return [page for page in pages(world) if not page.route.is_admin]


def admin_pages(world: World) -> list[Page]:
    return [page for page in pages(world) if page.route.is_admin]
