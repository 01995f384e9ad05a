"""The portal's LOGGING: one console handler whose records carry the request id and are scrubbed of secrets
(core.logging's filters, named by path), as JSON lines in production or plain lines in development, every time
in UTC with its offset (core.logging's formatters: one clock in every process's log, whatever TIME_ZONE is)."""


def logging_config(*, level: str, json: bool) -> dict:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "core.logging.RequestIdFilter"},
            "redact": {"()": "core.logging.RedactingFilter"},
        },
        "formatters": {
            "json": {
                "()": "core.logging.UtcJsonFormatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
                "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
                "datefmt": "%Y-%m-%dT%H:%M:%S%z",
            },
            "plain": {
                "()": "core.logging.UtcFormatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
            },
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if json else "plain",
                "filters": ["request_id", "redact"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        # Django's own loggers propagate to the root handler only (its default console handler would print an
        # unfiltered copy of every record).
        "loggers": {
            "django": {"handlers": [], "propagate": True, "level": "INFO"},
            "django.server": {"handlers": [], "propagate": True, "level": "WARNING"},
            "celery": {"handlers": [], "propagate": True, "level": "INFO"},
        },
    }
