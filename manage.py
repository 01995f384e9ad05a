#!/usr/bin/env python
"""Django's command-line utility for the TPP portal (the sandbox bank has its own: python -m bank_simulator)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpp_portal.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - load the settings now, so a configuration error reads well
    except ImproperlyConfigured as exc:
        sys.stderr.writelines(f"configuration error: {line}\n" for line in str(exc).splitlines())
        sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
