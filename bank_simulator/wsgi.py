import os
import sys

from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bank_simulator.settings")
try:
    django_application = get_wsgi_application()
except ImproperlyConfigured as exc:
    # Every configuration error, one line each, no traceback; 4 is gunicorn's "App failed to load" (it stops).
    sys.stderr.writelines(f"configuration error: {line}\n" for line in str(exc).splitlines())
    sys.exit(4)

from bank_simulator.pis.lost_answers import LostAnswerMiddleware

# Loses the payment initiation answers BANK_SIM_DROP_PAYMENT_ANSWER (or the sandbox) marks; passes the rest.
application = LostAnswerMiddleware(django_application)
