"""The staff sandbox area, mounted under ``staff/sandbox/`` (tpp_portal/urls.py)."""

from django.urls import path

from sandbox_admin import views

app_name = "sandbox_admin"

urlpatterns = [
    path("", views.customers, name="customers"),
    path("customers/new/", views.customer_create, name="customer-create"),
    path("customer/", views.customer, name="customer"),
    path("customer/agreements/new/", views.agreement_create, name="agreement-create"),
    path("customer/engagements/new/", views.engagement_create, name="engagement-create"),
    path("customer/accounts/new/", views.account_create, name="account-create"),
    path("customer/transactions/new/", views.transaction_create, name="transaction-create"),
    path("clock/", views.clock, name="clock"),
    path("reset/", views.reset, name="reset"),
]
