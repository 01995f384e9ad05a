from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Bank connections and accounts")

    def ready(self):
        from accounts import checks, signals  # noqa: F401 - registers the system checks and sign-in receiver
