from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConnectionsConfig(AppConfig):
    name = "connections"
    verbose_name = _("Bank connections")

    def ready(self):
        from connections import metrics, plugins, views
        from connections.models import ScaPurpose
        from core.metrics import state_source

        state_source("consents", metrics.consent_gauges)

        for purpose in ScaPurpose.values:
            plugins.register_purpose(
                purpose,
                accept=views.connection_sca_accept,
                failed=views.connection_sca_failed,
                label=ScaPurpose(purpose).label,
            )
