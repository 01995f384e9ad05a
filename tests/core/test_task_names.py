"""The services enqueue background work by task name (payments.services.dispatch): every process that has set
Django up, a web process too, must know every name, not only a Celery worker (whose autodiscovery imports the tasks
modules when it starts)."""

from __future__ import annotations

import subprocess
import sys

from payments.services import dispatch

# A new interpreter, as a gunicorn worker is: in this one, other tests may already have imported the tasks.
PROBE = """
import django
django.setup()
from tpp_portal import celery_app
print("\\n".join(sorted(celery_app.tasks)))
"""


def test_a_process_that_set_django_up_knows_every_task_the_services_enqueue():
    names = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert {dispatch.POLL, dispatch.RECONCILE} <= set(names)
