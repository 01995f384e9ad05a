from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "tpp_portal"
    verbose_name = "TPP portal"
