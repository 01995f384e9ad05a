from django.urls import path

from bank_simulator.access import methods
from bank_simulator.pis import views

# Payment ids are opaque and may hold '!' and '=' (facts.md section 2): the str converter keeps them.
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
]
