import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bank_simulator.settings")
django_application = get_wsgi_application()

from bank_simulator.pis.lost_answers import LostAnswerMiddleware  # noqa: E402 - needs Django set up

# Loses the payment initiation answers BANK_SIM_DROP_PAYMENT_ANSWER (or the sandbox) marks; passes the rest.
application = LostAnswerMiddleware(django_application)
