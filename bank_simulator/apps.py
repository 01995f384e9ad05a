from django.apps import AppConfig


class BankSimulatorConfig(AppConfig):
    name = "bank_simulator"
    verbose_name = "Sandbox bank"
