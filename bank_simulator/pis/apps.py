from django.apps import AppConfig


class PisConfig(AppConfig):
    """Payments of the sandbox bank (issue "bank_simulator, part 2"): initiation, SCA, status engine."""

    name = "bank_simulator.pis"
    label = "pis"
    verbose_name = "Sandbox bank: payments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from bank_simulator.pis import hooks

        hooks.register()
