from django.urls import path

from bank_simulator import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
]
