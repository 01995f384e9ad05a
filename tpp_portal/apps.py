from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "tpp_portal"
    verbose_name = "TPP portal"

    def ready(self) -> None:
        from tpp_portal import checks, observability

        checks.register()
        # Traces and error reports, only where the environment asks for them (OTEL_EXPORTER_OTLP_ENDPOINT,
        # SENTRY_DSN). In ready(), so every process (gunicorn worker, Celery worker and beat, manage.py) has them.
        observability.configure()
