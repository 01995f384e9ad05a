"""The core app: what every app of the portal shares (the bank gateway, BankCall, certificates, metrics, money,
observability). It imports no other app of the portal; the apps above register their own parts in their ready().

Its label stays ``tpp_portal``, the label under which its tables (tpp_portal_bankcall and
tpp_portal_certificatecheck), migrations and permissions were created before these modules moved out of the project
package: a new label would need a data migration on every deployment and would rename the staff roles' permissions.
"""

import logging

from celery import current_app as celery_app
from django.apps import AppConfig
from django.conf import settings
from django.utils.translation import gettext_lazy as _

log = logging.getLogger(__name__)


class CoreConfig(AppConfig):
    name = "core"
    label = "tpp_portal"
    verbose_name = _("Bank calls and certificates")

    def ready(self) -> None:
        from core import certificates, checks, metrics, observability, signals

        # Every app's tasks module, in every process: the services enqueue by name (payments.services.dispatch),
        # and Celery's autodiscovery imports the tasks only in a worker; a web process that imported none of
        # them would find the name unregistered and leave the work to beat's next dispatch.
        celery_app.autodiscover_tasks(force=True)
        checks.register()
        signals.connect()
        metrics.state_source("queue", metrics.queue_gauges)
        metrics.state_source("certificates", certificates.gauges)
        # Traces and error reports, only where the environment asks for them (OTEL_EXPORTER_OTLP_ENDPOINT,
        # SENTRY_DSN). In ready(), so every process (gunicorn worker, Celery worker and beat, manage.py) has them.
        observability.configure()
        if not settings.BANK_RESPONSE_SIGNATURES:
            log.warning(
                "BANK_RESPONSE_SIGNATURES=off: the bank's answers are not verified (no bank seal): an answer "
                "replayed or altered on the way would be believed"
            )
