"""What an SCA approves, one handler per ``ScaPurpose``.

The SCA screens are the same for every purpose (identity number, then context and agreement); the last screen
and what "approve" does belong to the purpose. Part 2 registers a PAYMENT handler here that shows the amount,
currency, creditor name and account (dynamic linking) and authorises the payment.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Protocol

from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from bank_simulator import selectors, services
from bank_simulator.models import Consent, ConsentStatus, PsuIdentity, ScaPurpose, ScaSession


class PurposeInputError(Exception):
    """The PSU's input on the review screen is not acceptable; shown on the same screen."""


@dataclass(frozen=True)
class Approval:
    psu: PsuIdentity
    consent: Consent | None = None


class PurposeHandler(Protocol):
    title: str  # shown on the screens (translated when shown)
    template: str
    # Dynamic-linking purposes always ask for identification, even within a TPP session's valid hour.
    dynamic_linking: bool

    def review_context(self, session: ScaSession) -> dict[str, Any]: ...

    def approve(self, session: ScaSession, data: QueryDict, now: dt.datetime) -> Approval: ...


class ConsentPurpose:
    title = gettext_lazy("Share account information")
    template = "bank_simulator/sca/consent.html"
    dynamic_linking = False

    def review_context(self, session: ScaSession) -> dict[str, Any]:
        assert session.agreement is not None and session.customer is not None
        accounts = selectors.agreement_accounts(agreement=session.agreement)
        shared: set[int] = set()
        psu = PsuIdentity.objects.filter(tpp_org_id=session.tpp_org_id, customer=session.customer).first()
        if psu is not None:
            consent = selectors.latest_consent(psu=psu, agreement=session.agreement)
            if consent is not None and consent.status == ConsentStatus.VALID:
                shared = set(consent.accounts.values_list("id", flat=True))
        return {"accounts": accounts, "shared": shared}

    def approve(self, session: ScaSession, data: QueryDict, now: dt.datetime) -> Approval:
        assert session.agreement is not None and session.customer is not None
        offered = {a.resource_id: a for a in selectors.agreement_accounts(agreement=session.agreement)}
        chosen = data.getlist("account")
        unknown = [c for c in chosen if c not in offered]
        if unknown:
            raise PurposeInputError(_("An account that was not offered was selected."))
        if not chosen:
            raise PurposeInputError(
                _("Choose at least one account to share, or cancel if you do not want to share any.")
            )
        psu = services.psu_identity_get_or_create(
            tpp_org_id=session.tpp_org_id, customer=session.customer, now=now
        )
        consent = services.consent_grant(
            psu=psu, agreement=session.agreement, accounts=[offered[c] for c in chosen], now=now
        )
        return Approval(psu=psu, consent=consent)


class UsersPurpose:
    title = gettext_lazy("Identify yourself to the provider")
    template = "bank_simulator/sca/users.html"
    dynamic_linking = False

    def review_context(self, session: ScaSession) -> dict[str, Any]:
        return {}

    def approve(self, session: ScaSession, data: QueryDict, now: dt.datetime) -> Approval:
        assert session.customer is not None
        psu = services.psu_identity_get_or_create(
            tpp_org_id=session.tpp_org_id, customer=session.customer, now=now
        )
        return Approval(psu=psu)


PURPOSES: dict[str, PurposeHandler] = {
    ScaPurpose.CONSENT: ConsentPurpose(),
    ScaPurpose.USERS: UsersPurpose(),
}
