from django.urls import path

from staff import views

urlpatterns = [
    path("dashboard/", views.dashboard, name="staff-dashboard"),
]
