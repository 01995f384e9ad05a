"""``python -m bank_simulator payment_batches [--loop]``: run the payment batches whose time has come.

Payment operations and the sandbox controls run due batches themselves before they answer; this command is
for everything else (account information reads of a settled payment's booking), as a one-off or as a small
scheduler process next to the web server (``--loop``, every ``--interval`` seconds).
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandParser

from bank_simulator import clock
from bank_simulator.pis import engine
from bank_simulator.pis.schedule import next_slot_after


class Command(BaseCommand):
    help = "Run the sandbox bank's payment batches that are due on its business clock."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loop", action="store_true", help="keep running, checking every --interval seconds")
        parser.add_argument("--interval", type=float, default=30.0, help="seconds between checks with --loop")

    def handle(self, *args: object, loop: bool = False, interval: float = 30.0, **options: object) -> None:
        if interval <= 0:
            self.stderr.write("--interval must be greater than zero")
            raise SystemExit(2)
        while True:
            now = clock.now()
            steps = engine.run_due(now=now)
            self.stdout.write(
                f"{now.isoformat()}: {steps} payment steps; next batch {next_slot_after(now).isoformat()}"
            )
            if not loop:
                return
            time.sleep(interval)
