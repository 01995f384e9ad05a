from django.urls import path

from accounts import views

urlpatterns = [
    path("bank/accounts/", views.accounts_overview, name="bank-accounts"),
    path("bank/accounts/refresh/", views.accounts_refresh, name="bank-accounts-refresh"),
    path("bank/accounts/<int:pk>/", views.account_detail, name="bank-account"),
    path("bank/accounts/<int:pk>/refresh/", views.account_refresh, name="bank-account-refresh"),
    path("bank/accounts/<int:pk>/transactions.csv", views.transactions_export, name="bank-account-export"),
    path("bank/transactions/<int:pk>/", views.transaction_detail, name="bank-transaction"),
]
