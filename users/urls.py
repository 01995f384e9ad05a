from django.urls import path

from users import views

# The names are Django's own (login, logout, password_reset_confirm ...) so its views and mails find them.
urlpatterns = [
    path("auth/sign-in/", views.SignInView.as_view(), name="login"),
    path("auth/sign-out/", views.SignOutView.as_view(), name="logout"),
    path("auth/sign-up/", views.sign_up, name="signup"),
    path("auth/sign-up/sent/", views.sign_up_sent, name="signup_sent"),
    path("auth/sign-up/confirm/<uidb64>/<token>/", views.sign_up_confirm, name="signup_confirm"),
    path("auth/confirm-password/", views.reauthenticate, name="reauthenticate"),
    path("auth/password/change/", views.PasswordChangeView.as_view(), name="password_change"),
    path("auth/password/change/done/", views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("auth/password/reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("auth/password/reset/sent/", views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "auth/password/reset/<uidb64>/<token>/",
        views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "auth/password/reset/done/",
        views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("account/", views.account, name="account"),
]
