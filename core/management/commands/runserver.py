"""``runserver`` whose banner gives the time in UTC with its offset, as every log line of ``make run`` does (Django
prints the local time of TIME_ZONE, Europe/Oslo, without an offset). Everything else is whitenoise's runserver
(static files served by whitenoise's middleware, as in production)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from django.core.management.base import OutputWrapper
from whitenoise.runserver_nostatic.management.commands.runserver import Command as WhitenoiseRunserver


class Command(WhitenoiseRunserver):
    def on_bind(self, server_port):
        real, banner = self.stdout, io.StringIO()
        self.stdout = OutputWrapper(banner)
        try:
            super().on_bind(server_port)
        finally:
            self.stdout = real
        _local_time, _, rest = banner.getvalue().partition("\n")
        real.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%S%z}\n{rest}", ending="")
