"""The portal's address book: each app's urls under its prefix (the project imports no app: include by name)."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", include("core.urls")),
    path("", include("users.urls")),
    path("", include("connections.urls")),
    path("", include("accounts.urls")),
    path("payments/", include("payments.urls")),
    path("", include("payments.urls_home")),
    path("staff/sandbox/", include("sandbox_admin.urls")),
    path("staff/", include("staff.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    # The admin's own password form checks the old password with check_password(), which no limit counts: staff
    # change theirs on the portal's counted page (users.forms.ChangePasswordForm).
    path("admin/password_change/", RedirectView.as_view(pattern_name="password_change"), name="admin-password"),
    path("admin/", admin.site.urls),
]
