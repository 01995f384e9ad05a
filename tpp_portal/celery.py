"""The portal's Celery application: worker and beat run from here (``celery -A tpp_portal ...``).

Without REDIS_URL the broker is kombu's filesystem transport under ``var/broker`` (the settings create its
folders), which works across processes (web, worker, beat) on one machine with no server; with REDIS_URL it is
Redis. Worker and beat log through the portal's LOGGING (CELERY_WORKER_HIJACK_ROOT_LOGGER is off). The receivers of
Celery's signals (request ids, task metrics) are the core app's (core/signals.py).
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")

app = Celery("tpp_portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
