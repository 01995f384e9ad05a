"""The portal's receivers of Celery's signals: the request id carried into tasks, task failures and retries
counted, the certificates checked when a worker starts. Connected once by CoreConfig.ready()."""

from celery import current_app
from celery.signals import before_task_publish, task_failure, task_prerun, task_retry, worker_ready

from core import metrics
from core.requestid import current_request_id


def _propagate_request_id(headers: dict | None = None, **kwargs) -> None:
    """Tasks enqueued while serving a request carry its id, so their log lines can be joined to it."""
    if headers is not None and "request_id" not in headers:
        headers["request_id"] = current_request_id.get()


def _bind_request_id(task=None, **kwargs) -> None:
    request_id = getattr(task.request, "request_id", None) if task is not None else None
    current_request_id.set(request_id or (task.request.id if task is not None else "-") or "-")


def _count_failure(sender=None, **kwargs) -> None:
    metrics.task_failed(getattr(sender, "name", None) or "unknown")


def _count_retry(sender=None, **kwargs) -> None:
    metrics.task_retried(getattr(sender, "name", None) or "unknown")


def _check_certificates_at_start(sender=None, **kwargs) -> None:
    """The certificates are checked when a worker starts, then daily (beat)."""
    current_app.send_task("tpp_portal.check_certificates")


def connect() -> None:
    """Connect the receivers (weakly referenced module functions, each connected once: dispatch_uid)."""
    before_task_publish.connect(_propagate_request_id, dispatch_uid="core.propagate_request_id")
    task_prerun.connect(_bind_request_id, dispatch_uid="core.bind_request_id")
    task_failure.connect(_count_failure, dispatch_uid="core.count_failure")
    task_retry.connect(_count_retry, dispatch_uid="core.count_retry")
    worker_ready.connect(_check_certificates_at_start, dispatch_uid="core.check_certificates_at_start")
