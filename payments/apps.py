from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PaymentsConfig(AppConfig):
    name = "payments"
    verbose_name = _("Payments")

    def ready(self) -> None:
        from connections import plugins
        from payments import views_initiation
        from payments.services.authorisation import PAYMENT_PURPOSE

        plugins.register_purpose(
            PAYMENT_PURPOSE, accept=views_initiation.payment_sca_accept, failed=views_initiation.payment_sca_failed
        )
