"""The portal's Celery application: worker and beat run from here (``celery -A tpp_portal ...``).

Without REDIS_URL the broker is kombu's filesystem transport under ``var/broker`` (the settings create its
folders), which works across processes (web, worker, beat) on one machine with no server; with REDIS_URL it is
Redis. Worker and beat log through the portal's LOGGING (CELERY_WORKER_HIJACK_ROOT_LOGGER is off).
"""

import os

from celery import Celery
from celery.signals import before_task_publish, task_failure, task_prerun, task_retry, worker_ready

from tpp_portal import metrics
from tpp_portal.requestid import current_request_id

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")

app = Celery("tpp_portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@before_task_publish.connect
def _propagate_request_id(headers: dict | None = None, **kwargs) -> None:
    """Tasks enqueued while serving a request carry its id, so their log lines can be joined to it."""
    if headers is not None and "request_id" not in headers:
        headers["request_id"] = current_request_id.get()


@task_prerun.connect
def _bind_request_id(task=None, **kwargs) -> None:
    request_id = getattr(task.request, "request_id", None) if task is not None else None
    current_request_id.set(request_id or (task.request.id if task is not None else "-") or "-")


@task_failure.connect
def _count_failure(sender=None, **kwargs) -> None:
    metrics.task_failed(getattr(sender, "name", None) or "unknown")


@task_retry.connect
def _count_retry(sender=None, **kwargs) -> None:
    metrics.task_retried(getattr(sender, "name", None) or "unknown")


@worker_ready.connect
def _check_certificates_at_start(sender=None, **kwargs) -> None:
    """The certificates are checked when a worker starts, then daily (beat)."""
    app.send_task("tpp_portal.check_certificates")
