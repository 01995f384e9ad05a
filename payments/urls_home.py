"""The home page at the site's root (tpp_portal/urls.py includes it outside the "payments/" prefix)."""

from django.urls import path

from payments import views_home

urlpatterns = [path("", views_home.home, name="home")]
