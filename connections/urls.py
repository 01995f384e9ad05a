from django.urls import path

from connections import views

# core.bank.CALLBACK_PATH is the TPP-Redirect-URI sent to the bank: keep "bank/callback" in step with it.
urlpatterns = [
    path("bank/callback", views.callback, name="bank-callback"),
    path("bank/connect/", views.connect, name="bank-connect"),
    path("bank/connections/", views.connections, name="bank-connections"),
    path("bank/connections/<int:pk>/reconnect/", views.reconnect, name="bank-reconnect"),
    path("bank/connections/<int:pk>/disconnect/", views.disconnect, name="bank-disconnect"),
    path("bank/connections/<int:pk>/agreements/", views.agreements, name="bank-agreements"),
]
