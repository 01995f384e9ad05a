from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PaymentsConfig(AppConfig):
    name = "payments"
    verbose_name = _("Payments")

    def ready(self) -> None:
        from connections import plugins
        from core.metrics import state_source
        from payments import metrics, views_initiation
        from payments.services.approval_steps import PAYMENT_PURPOSE

        state_source("payments", metrics.status_gauges)
        plugins.register_purpose(
            PAYMENT_PURPOSE,
            accept=views_initiation.payment_sca_accept,
            failed=views_initiation.payment_sca_failed,
            label=_("Approve a payment"),
        )
