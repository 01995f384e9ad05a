import logging

from django.apps import AppConfig
from django.conf import settings

log = logging.getLogger(__name__)


class PortalConfig(AppConfig):
    name = "tpp_portal"
    verbose_name = "TPP portal"

    def ready(self) -> None:
        from tpp_portal import checks, observability

        checks.register()
        # Traces and error reports, only where the environment asks for them (OTEL_EXPORTER_OTLP_ENDPOINT,
        # SENTRY_DSN). In ready(), so every process (gunicorn worker, Celery worker and beat, manage.py) has them.
        observability.configure()
        if not settings.BANK_RESPONSE_SIGNATURES:
            log.warning(
                "BANK_RESPONSE_SIGNATURES=off: the bank's answers are not verified (no bank seal): an answer "
                "replayed or altered on the way would be believed"
            )
