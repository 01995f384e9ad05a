from django.apps import AppConfig


class BankSimulatorConfig(AppConfig):
    name = "bank_simulator"
    verbose_name = "Sandbox bank"

    def ready(self) -> None:
        from bank_simulator import sca_handlers

        sca_handlers.register()
