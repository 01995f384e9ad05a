"""Payments' tables. Exchange rates give the NOK equivalent of a foreign-currency amount (regulatory threshold)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from payments.validators import validate_currency


class ExchangeRateSource(models.TextChoices):
    """Where a rate came from. For one currency and date, the first in this order wins (see selectors)."""

    # Entered by staff in the admin (a correction, or a currency Norges Bank does not quote).
    MANUAL = "manual", _("Entered by staff")
    # Fetched from Norges Bank's open data API by payments.tasks.refresh_exchange_rates.
    NORGES_BANK = "norges-bank", _("Norges Bank")
    # Shipped with the portal (migration 0002) so it works offline before the first fetch.
    SEED = "seed", _("Seed (shipped with the portal)")


class ExchangeRate(models.Model):
    """``rate`` Norwegian kroner buy ``unit`` units of ``currency`` on ``rate_date`` (a middle rate).

    Norges Bank quotes some currencies per 100 units (JPY, SEK, DKK ...): the quoted figure is stored as is
    with ``unit=100``, so a stored rate can be compared with the published table. NOK per one unit is
    ``rate / unit``.
    """

    currency = models.CharField(_("currency"), max_length=3, validators=[validate_currency])
    rate = models.DecimalField(
        _("rate (NOK)"),
        max_digits=18,
        decimal_places=6,
        help_text=_("Norwegian kroner for the number of units below."),
    )
    unit = models.PositiveIntegerField(
        _("units"), default=1, help_text=_("How many units of the currency the rate is for (for example 100).")
    )
    rate_date = models.DateField(_("rate date"))
    source = models.CharField(_("source"), max_length=16, choices=ExchangeRateSource.choices)
    fetched_at = models.DateTimeField(_("fetched at"), default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("edited by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The staff member who last edited this rate; the fetcher never overwrites an edited rate."),
    )
    updated_at = models.DateTimeField(_("edited at"), null=True, blank=True)

    class Meta:
        verbose_name = _("exchange rate")
        verbose_name_plural = _("exchange rates")
        ordering = ["-rate_date", "currency", "source"]
        constraints = [
            # One rate per currency, day and source: the fetcher upserts on this key (fetching twice is harmless).
            models.UniqueConstraint(
                fields=["currency", "rate_date", "source"], name="exchangerate_unique_day_source"
            ),
            models.CheckConstraint(condition=models.Q(rate__gt=0), name="exchangerate_rate_positive"),
            models.CheckConstraint(condition=models.Q(unit__gt=0), name="exchangerate_unit_positive"),
        ]
        indexes = [
            # payments.selectors.exchange_rate_latest: the latest rate of a currency on or before a date.
            models.Index(fields=["currency", "-rate_date"], name="exchangerate_latest_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.unit} {self.currency} = {self.rate} NOK ({self.rate_date}, {self.source})"

    @property
    def nok_per_unit(self):
        return self.rate / self.unit
