"""``python -m bank_simulator sandbox_initialize [--if-empty] [--seed S]``: reset to the known state."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from bank_simulator import clock, services
from bank_simulator.models import Customer, Transaction


class Command(BaseCommand):
    help = "Reset the sandbox bank to its known state (docs/bank-interface.md, reference 1: 4 customers)."

    def add_arguments(self, parser):
        parser.add_argument("--if-empty", action="store_true", help="do nothing when customers exist already")
        parser.add_argument("--seed", default=None, help="seed of the generated history (BANK_SIM_SEED)")

    def handle(self, *args, if_empty: bool = False, seed: str | None = None, **options):
        if if_empty and Customer.objects.exists():
            self.stdout.write("sandbox bank already holds customers; left as it is")
            return
        customers = services.sandbox_initialize(now=clock.real_now(), seed=seed)
        self.stdout.write(
            f"sandbox bank initialised: {len(customers)} customers, {Transaction.objects.count()} transactions"
        )
