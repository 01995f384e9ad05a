from django.urls import path

from bank_simulator.access import methods
from bank_simulator.pis import views

# Payment ids are opaque and may hold '!' and '=' (docs/bank-interface.md, reference 2): str keeps them.
urlpatterns = [
    path("v1/payments/<str:product>", methods(POST=views.initiate)),
    path(
        "v1/payments/<str:product>/<str:payment_id>",
        methods(GET=views.payment_read, DELETE=views.payment_cancel),
    ),
    path("v1/payments/<str:product>/<str:payment_id>/status", methods(GET=views.payment_status)),
    path("v1/payments/<str:product>/<str:payment_id>/authorisations", methods(POST=views.authorisation_start)),
    path(
        "v1/payments/<str:product>/<str:payment_id>/authorisations/<str:authorisation_id>",
        methods(GET=views.authorisation_read),
    ),
    path("v1/sandbox/batches/run", methods(POST=views.batches_run)),
    path("v1/sandbox/payment-authorisations/<str:authorisation_id>", methods(POST=views.authorisation_decide)),
    path("v1/sandbox/behaviour/drop-next-payment-answer", methods(POST=views.drop_next_payment_answer)),
]
