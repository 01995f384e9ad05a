"""What the payment form and the review page say about the exchange rate behind the regulatory threshold: which
rate (its figure, date and source), how old it is, and the margin (payments.selectors.regulatory_margin_for)."""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from django.utils.formats import date_format, number_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from payments.models import ExchangeRateSource
from payments.selectors import ReportingBasis, ReportingReason, ReportingRequirement
from payments.spec import NOK


def _figure(value: Decimal, *, min_places: int = 0) -> str:
    exponent = value.normalize().as_tuple().exponent
    places = max(min_places, -exponent if isinstance(exponent, int) else 0)
    return number_format(value, decimal_pos=places, use_l10n=True, force_grouping=True)


def rate_text(rate: Decimal, unit: int, currency: str) -> str:
    """``1 EUR = 11.50 NOK``, ``100 JPY = 6.53 NOK`` (the rate as quoted, localised)."""
    return f"{unit} {currency} = {_figure(rate, min_places=2)} {NOK}"


def margin_text(margin: Decimal) -> str:
    """0.09 -> ``9 %``, 0.055 -> ``5.5 %`` (``5,5 %`` in Norwegian)."""
    return f"{_figure(margin * 100)}\u00a0%"


def source_text(source: str) -> str:
    return {
        ExchangeRateSource.NORGES_BANK: _("Norges Bank's rate"),
        ExchangeRateSource.MANUAL: _("the rate our staff entered"),
        ExchangeRateSource.SEED: _("an estimate shipped with the portal"),
    }.get(source, source)


def rate_phrase(*, rate: Decimal, unit: int, currency: str, rate_date: date, source: str) -> str:
    """``1 EUR = 11.50 NOK, Norges Bank's rate of 20 Nov 2026``."""
    return _("%(rate)s, %(source)s of %(date)s") % {
        "rate": rate_text(rate, unit, currency),
        "source": source_text(source),
        "date": date_format(rate_date),
    }


def payment_rate_phrase(payment) -> str:
    """The rate a payment's NOK equivalent was reckoned at, as the form used it: "1 EUR = 11.50 NOK, Norges Bank's
    rate of 20 Nov 2026"; empty for a NOK payment (or a draft made before rates were kept with it)."""
    if payment.nok_rate is None or payment.nok_rate_unit is None or payment.nok_rate_date is None:
        return ""
    return rate_phrase(
        rate=payment.nok_rate,
        unit=payment.nok_rate_unit,
        currency=payment.currency,
        rate_date=payment.nok_rate_date,
        source=payment.nok_rate_source,
    )


def _thousands(value: Decimal) -> str:
    """Whole units, thousands apart by a space in both languages: ``100 000`` (as the tax authority writes it)."""
    return f"{value.quantize(Decimal(1), rounding=ROUND_HALF_UP):,.0f}".replace(",", " ")


def basis_help(basis: ReportingBasis, *, threshold: Decimal) -> str:
    """The help text of the payment type code for payments in ``basis.currency``: from which amount reporting is
    asked, and why (the rate, its date and age, the margin)."""
    if basis.currency == NOK:
        return _("Required for payments of %(threshold)s NOK or more.") % {"threshold": _thousands(threshold)}
    if basis.rate is None or basis.from_amount is None or basis.margin is None:
        return _(
            "Required for any amount in %(currency)s: we have no recent exchange rate for it to tell whether a "
            "payment reaches %(threshold)s NOK."
        ) % {"currency": basis.currency, "threshold": _thousands(threshold)}
    rate = basis.rate
    age = basis.age_days or 0
    return _(
        "Required from %(amount)s, about %(applied)s NOK. We use %(rate)s, %(age)s. The bank converts at its own "
        "rate, so we ask from %(margin)s below %(threshold)s NOK: the older the rate, the larger this margin."
    ) % {
        "amount": f"{_thousands(basis.from_amount)} {basis.currency}",
        "applied": _thousands(threshold * (1 - basis.margin)),
        "rate": rate_phrase(
            rate=rate.rate, unit=rate.unit, currency=rate.currency, rate_date=rate.rate_date, source=rate.source
        ),
        "age": ngettext("%(days)s day old", "%(days)s days old", age) % {"days": age},
        "margin": margin_text(basis.margin),
        "threshold": _thousands(threshold),
    }


def reporting_error_text(decision: ReportingRequirement) -> str:
    """The message beside the reporting fields when they are required and missing."""
    params = {"threshold": _thousands(decision.threshold_nok)}
    equivalent = decision.equivalent
    if decision.reason == ReportingReason.NO_RATE:
        return (
            _(
                "Payments abroad of %(threshold)s NOK or more must be reported to the tax authority. We have no "
                "exchange rate for this currency to tell, so please give the payment type and its purpose."
            )
            % params
        )
    if decision.reason == ReportingReason.STALE_RATE and equivalent is not None:
        assert equivalent.rate_date is not None
        return _(
            "Payments abroad of %(threshold)s NOK or more must be reported to the tax authority. Our newest "
            "exchange rate for this currency is of %(date)s, too old to tell, so please give the payment type "
            "and its purpose."
        ) % {**params, "date": date_format(equivalent.rate_date)}
    if decision.reason == ReportingReason.EQUIVALENT_NEAR_OR_ABOVE and equivalent is not None:
        assert equivalent.rate_date is not None
        return _(
            "Payments abroad of %(threshold)s NOK or more must be reported to the tax authority. This amount is "
            "about %(nok)s NOK at %(rate)s. The bank converts at its own rate, so we ask from %(applied)s NOK (a "
            "margin of %(margin)s, larger the older the rate): please give the payment type and its purpose."
        ) % {
            **params,
            "nok": _thousands(equivalent.amount_nok),
            "rate": rate_phrase(
                rate=equivalent.rate,
                unit=equivalent.unit,
                currency=equivalent.currency,
                rate_date=equivalent.rate_date,
                source=equivalent.source,
            ),
            "applied": _thousands(decision.applied_threshold_nok),
            "margin": margin_text(decision.margin),
        }
    return (
        _(
            "Payments abroad of %(threshold)s NOK or more must be reported to the tax authority: please give the "
            "payment type and its purpose."
        )
        % params
    )
