"""The TPP portal's Django project. Importing it loads the Celery app so that shared tasks bind to it."""

from tpp_portal.celery import app as celery_app

__all__ = ["celery_app"]
