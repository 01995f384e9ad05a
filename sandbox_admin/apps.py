from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SandboxAdminConfig(AppConfig):
    name = "sandbox_admin"
    verbose_name = _("Sandbox bank administration")
