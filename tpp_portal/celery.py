"""The portal's Celery application: worker and beat run from here (``celery -A tpp_portal ...``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")

app = Celery("tpp_portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
