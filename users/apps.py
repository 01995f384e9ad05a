from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class UsersConfig(AppConfig):
    name = "users"
    verbose_name = _("Users and sign-in")

    def ready(self):
        from users import checks, signals  # noqa: F401 - registers the system checks and sign-in receiver
