from django.urls import path

from accounts import views_accounts, views_auth, views_bank

# The names are Django's own (login, logout, password_reset_confirm ...) so its views and mails find them.
auth_patterns = [
    path("auth/sign-in/", views_auth.SignInView.as_view(), name="login"),
    path("auth/sign-out/", views_auth.SignOutView.as_view(), name="logout"),
    path("auth/sign-up/", views_auth.sign_up, name="signup"),
    path("auth/sign-up/sent/", views_auth.sign_up_sent, name="signup_sent"),
    path("auth/sign-up/confirm/<uidb64>/<token>/", views_auth.sign_up_confirm, name="signup_confirm"),
    path("auth/confirm-password/", views_auth.reauthenticate, name="reauthenticate"),
    path("auth/password/change/", views_auth.PasswordChangeView.as_view(), name="password_change"),
    path("auth/password/change/done/", views_auth.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("auth/password/reset/", views_auth.PasswordResetView.as_view(), name="password_reset"),
    path("auth/password/reset/sent/", views_auth.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "auth/password/reset/<uidb64>/<token>/",
        views_auth.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "auth/password/reset/done/",
        views_auth.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("account/", views_auth.account, name="account"),
]

# tpp_portal.bank.CALLBACK_PATH is the TPP-Redirect-URI sent to the bank: keep "bank/callback" in step with it.
bank_patterns = [
    path("bank/callback", views_bank.callback, name="bank-callback"),
    path("bank/connect/", views_bank.connect, name="bank-connect"),
    path("bank/connections/", views_bank.connections, name="bank-connections"),
    path("bank/connections/<int:pk>/reconnect/", views_bank.reconnect, name="bank-reconnect"),
    path("bank/connections/<int:pk>/disconnect/", views_bank.disconnect, name="bank-disconnect"),
    path("bank/connections/<int:pk>/agreements/", views_bank.agreements, name="bank-agreements"),
    path("bank/accounts/", views_accounts.accounts_overview, name="bank-accounts"),
    path("bank/accounts/refresh/", views_bank.accounts_refresh, name="bank-accounts-refresh"),
    path("bank/accounts/<int:pk>/", views_accounts.account_detail, name="bank-account"),
    path("bank/accounts/<int:pk>/refresh/", views_accounts.account_refresh, name="bank-account-refresh"),
    path(
        "bank/accounts/<int:pk>/transactions.csv", views_accounts.transactions_export, name="bank-account-export"
    ),
    path("bank/transactions/<int:pk>/", views_accounts.transaction_detail, name="bank-transaction"),
]

urlpatterns = [*auth_patterns, *bank_patterns]
