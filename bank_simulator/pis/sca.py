"""The PAYMENT purpose of the SCA screens: dynamic linking (what is approved is shown) and the signature."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import QueryDict
from django.utils.translation import gettext_lazy

from bank_simulator.models import ScaSession
from bank_simulator.pis import tables
from bank_simulator.pis.models import PaymentAuthorisation
from bank_simulator.pis.services import payment_sign
from bank_simulator.sca_purposes import Approval, PurposeInputError
from bank_simulator.services import DomainError


class PaymentPurpose:
    title = gettext_lazy("Approve a payment")
    template = "bank_simulator/sca/payment.html"
    dynamic_linking = True  # identification is asked every time, even within a TPP session's hour

    def review_context(self, session: ScaSession) -> dict[str, Any]:
        authorisation = PaymentAuthorisation.objects.select_related(
            "payment__debtor_account", "payment__agreement"
        ).get(sca_session=session)
        payment = authorisation.payment
        account = payment.debtor_account
        units = tables.minor_units(payment.currency)
        return {
            "payment": payment,
            "amount": f"{payment.amount:,.{units}f}".replace(",", " "),
            "creditor_account": payment.creditor_iban or payment.creditor_bban,
            "creditor_agent": payment.submitted.get("creditorAgent", ""),
            "remittance": payment.submitted.get("remittanceInformationUnstructured", ""),
            "debtor": account,
            "debit": f"{payment.debit_amount:,.{tables.minor_units(account.currency)}f}".replace(",", " "),
            "fee": f"{payment.fee_amount:,.{tables.minor_units(account.currency)}f}".replace(",", " "),
            "converted": payment.currency != account.currency,
            "signatures": payment.signatures.count(),
        }

    def approve(self, session: ScaSession, data: QueryDict, now: dt.datetime) -> Approval:
        try:
            psu = payment_sign(session=session, now=now)
        except DomainError as error:
            raise PurposeInputError(str(error)) from None
        return Approval(psu=psu)
