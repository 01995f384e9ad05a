"""The SCA purposes of the accounts side: sharing account information (a consent) and identifying the PSU to the
provider. Registered in bank_simulator.sca_purposes.PURPOSES by the sandbox bank's AppConfig.ready()."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from bank_simulator import selectors, services
from bank_simulator.models import ConsentStatus, PsuIdentity, ScaPurpose, ScaSession
from bank_simulator.sca_purposes import PURPOSES, Approval, PurposeInputError


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


def register() -> None:
    PURPOSES[ScaPurpose.CONSENT] = ConsentPurpose()
    PURPOSES[ScaPurpose.USERS] = UsersPurpose()
