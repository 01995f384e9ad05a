"""Factories of bank connections and accounts (identifiers made up; the bank does not know them)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import factory
from django.utils import timezone

from accounts.models import BankAccount
from connections.crypto import lookup_hash
from connections.models import BankConnection, ConnectionState, PsuBinding, ScaPurpose, ScaState
from tests.factories import UserFactory


class BankConnectionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BankConnection
        skip_postgeneration_save = True  # the hook below writes another table, not the connection

    user = factory.SubFactory(UserFactory)
    context = "PRIVATE"
    state = ConnectionState.ACTIVE
    psu_id = factory.LazyFunction(lambda: str(uuid.uuid4()))
    psu_id_hash = factory.LazyAttribute(lambda c: lookup_hash(c.psu_id))
    sca_at = factory.LazyFunction(timezone.now)
    consent_valid_until = factory.LazyAttribute(lambda c: c.sca_at + timedelta(days=180))

    @factory.post_generation
    def bound(connection, create, extracted, **kwargs):
        """The PSU-ID is bound to the connection's user, as the callback binds it (unless already someone's)."""
        if create and connection.psu_id_hash:
            PsuBinding.objects.get_or_create(
                psu_id_hash=connection.psu_id_hash, defaults={"user": connection.user}
            )


class BankAccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BankAccount

    connection = factory.SubFactory(BankConnectionFactory)
    resource_id = factory.Sequence(lambda n: f"enc!!acc{n}=")
    iban = factory.Sequence(lambda n: f"NO93860111{n:05d}")
    currency = "NOK"
    name = factory.Sequence(lambda n: f"Konto {n}")


class ScaStateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ScaState

    token = factory.Sequence(lambda n: f"state-token-{n:04d}-abcdefghijklmnopqrstuvwxyz")
    tpp_session_id = factory.Sequence(lambda n: f"tpp-session-{n:04d}-abcdefghijklmnopqrstuvwxyz")
    user = factory.SubFactory(UserFactory)
    session_key_hash = "0" * 64
    purpose = ScaPurpose.CONNECT
    context = "PRIVATE"
    created_at = factory.LazyFunction(timezone.now)


def callback_params(state: ScaState) -> dict[str, str]:
    """The parameters of the redirect back that name ``state``: its own (``state``, which the portal put in the
    SCA's TPP-Redirect-URI) and the TPP-Session-ID sent with it, which the bank echoes."""
    return {"state": state.token, "tpp-session-id": state.tpp_session_id}
