"""``python -m bank_simulator <command>``: Django management for the sandbox bank (its own settings)."""

import os
import sys


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "bank_simulator.settings"
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - load the settings now: every configuration error, one line each
    except ImproperlyConfigured as exc:
        sys.stderr.writelines(f"configuration error: {line}\n" for line in str(exc).splitlines())
        sys.exit(2)

    execute_from_command_line([f"{sys.executable} -m bank_simulator", *sys.argv[1:]])


if __name__ == "__main__":
    main()
